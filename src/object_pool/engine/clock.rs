//! The pool clock: nanoseconds since the pool was built, read precisely on
//! the slow paths and coarsely (one relaxed load) on the fast path.
//!
//! The maintainer ticks the coarse reading each round; a return stamps the
//! object's idle time with it. A stamp is therefore at most one maintenance
//! interval early, and the reaper allows that interval on top of
//! `idle_timeout`, so it never reaps an object too soon. Lifetimes, which
//! must never be overrun, are checked against the precise clock.
//!
//! Readings come from the process's one clock ([`crate::clock`]).

use crate::clock::clock;
use crate::sync::{AtomicU64, Ordering};

#[derive(Debug)]
pub(in crate::object_pool) struct PoolClock {
    /// The process clock's raw reading when the pool was built.
    origin: u64,
    /// The last tick; written by the maintainer only, so it can share a
    /// read-mostly cache line.
    coarse: AtomicU64,
}

impl PoolClock {
    pub(in crate::object_pool) fn new() -> Self {
        PoolClock {
            origin: clock().raw(),
            coarse: AtomicU64::new(0),
        }
    }

    /// The last tick's reading.
    #[inline]
    pub(in crate::object_pool) fn coarse(&self) -> u64 {
        // Relaxed: a stamp, ordered with nothing else.
        self.coarse.load(Ordering::Relaxed)
    }

    /// The time now.
    pub(in crate::object_pool) fn precise(&self) -> u64 {
        let clock = clock();
        clock
            .delta_as_nanos(self.origin, clock.raw())
            .min(u64::MAX - 1)
    }

    /// Reads the time now and publishes it as the coarse reading.
    pub(in crate::object_pool) fn tick(&self) -> u64 {
        let now = self.precise();
        self.coarse.store(now, Ordering::Relaxed);
        now
    }
}
