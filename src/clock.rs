//! The process's one clock, made on first use and read by every face that
//! times something: a resource's expiry, the adaptive governor's windows, a
//! worker pool's latency stamps and an object pool's idle times and
//! lifetimes.
//!
//! Making a `quanta` clock checks the CPU (`cpuid`, tens of µs in a VM) and
//! calibrates the time-stamp counter the first time, so it is made once
//! per process, when something first needs the time, and never when a face
//! that times nothing is built. It reads the CPU's time-stamp counter where
//! that is reliable (a few ns a read, raw), else the OS's monotonic clock.
//!
//! Under loom, one mock clock that only [`advance_loom_clock`] moves: a
//! model's outcome depends on its interleaving, never on the time.

use quanta::Clock;

/// The process's clock.
#[inline]
pub(crate) fn clock() -> &'static Clock {
    #[cfg(sidejob_loom)]
    {
        &LOOM_CLOCK.get_or_init(Clock::mock).0
    }
    #[cfg(not(sidejob_loom))]
    {
        static CLOCK: std::sync::OnceLock<Clock> = std::sync::OnceLock::new();
        CLOCK.get_or_init(Clock::new)
    }
}

#[cfg(sidejob_loom)]
static LOOM_CLOCK: std::sync::OnceLock<(Clock, std::sync::Arc<quanta::Mock>)> =
    std::sync::OnceLock::new();

/// Moves the mock clock on by `by` (loom models only).
#[cfg(sidejob_loom)]
#[doc(hidden)]
pub fn advance_loom_clock(by: std::time::Duration) {
    LOOM_CLOCK.get_or_init(Clock::mock).1.increment(by);
}
