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
//! Under loom, a mock clock that only [`advance_loom_clock`] moves: a
//! model's outcome depends on its interleaving, never on the time. Each
//! test thread has a mock of its own (loom runs a model's threads on the
//! thread of its test): a model must do the same atomic operations each
//! time it replays a schedule, and a clock that another model moves from
//! beside it made the samples' `fetch_min`/`fetch_max` run in one replay
//! and not the next, which sent loom down a path no execution takes (CI's
//! loom step once failed the adaptive window model that way).

use quanta::Clock;

/// The kernel's coarse monotonic clock in nanoseconds, where there is one:
/// `CLOCK_MONOTONIC_COARSE`, read from the vDSO with no system call (about
/// 4 ns here, against 9 for the time-stamp counter and 20 for the precise
/// `CLOCK_MONOTONIC`). It is the time of the kernel's last tick, so it lags
/// the precise clock by up to a tick (1-10 ms; a few ticks while the CPU
/// that keeps time is held up), and never runs ahead of it: a reading plus
/// [`COARSE_LAG`] is past the present. `None` where the OS has no such
/// clock: callers then read [`clock`].
///
/// Under loom, the mock clock (it has no lag).
#[inline]
pub(crate) fn coarse_nanos() -> Option<u64> {
    #[cfg(sidejob_loom)]
    {
        Some(clock().raw())
    }
    #[cfg(all(not(sidejob_loom), any(target_os = "linux", target_os = "android")))]
    {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
        // Non-negative on a monotonic clock (it counts from boot).
        Some((now.tv_sec as u64).wrapping_mul(1_000_000_000) + now.tv_nsec as u64)
    }
    #[cfg(all(
        not(sidejob_loom),
        not(any(target_os = "linux", target_os = "android"))
    ))]
    {
        None
    }
}

/// How far [`coarse_nanos`] may lag the present at most, with room to
/// spare: a kernel updates it every tick (a few ticks late at worst),
/// which is milliseconds.
pub(crate) const COARSE_LAG: std::time::Duration = std::time::Duration::from_secs(1);

/// The process's clock.
#[inline]
pub(crate) fn clock() -> &'static Clock {
    #[cfg(sidejob_loom)]
    {
        &loom_clock().0
    }
    #[cfg(not(sidejob_loom))]
    {
        static CLOCK: std::sync::OnceLock<Clock> = std::sync::OnceLock::new();
        CLOCK.get_or_init(Clock::new)
    }
}

/// This test thread's mock clock and its handle, made on first use and
/// leaked (one pair per test thread, in loom builds only).
#[cfg(sidejob_loom)]
fn loom_clock() -> &'static (Clock, std::sync::Arc<quanta::Mock>) {
    std::thread_local! {
        static LOOM_CLOCK: &'static (Clock, std::sync::Arc<quanta::Mock>) =
            Box::leak(Box::new(Clock::mock()));
    }
    LOOM_CLOCK.with(|clock| *clock)
}

/// Moves this test's mock clock on by `by` (loom models only).
#[cfg(sidejob_loom)]
#[doc(hidden)]
pub fn advance_loom_clock(by: std::time::Duration) {
    loom_clock().1.increment(by);
}
