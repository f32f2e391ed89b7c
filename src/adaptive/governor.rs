//! [`Governor`]: an adaptive limit at run time. It times the sampled
//! permits, and the release that finds the window's time up closes it:
//! takes every shard's samples, asks the [`Controller`] for the limit and
//! resizes the counter.
//!
//! # The request path
//!
//! An acquire reads the stride (on a line nobody writes between windows)
//! and, one permit in `stride`, the clock. A sampled release reads the
//! clock, adds the hold time to its shard's accumulators (its own line) and
//! compares the time with the window's start (the same read-mostly line).
//! Nothing else: no lock, no shared write, no thread.
//!
//! # Closing a window
//!
//! The first sampled release (or drop) past the window's time tries the
//! controller's lock; a thread that finds it taken goes on, as the holder
//! is closing the window. The holder re-reads the start (another may have
//! closed it just now), takes the samples, decides, resizes the counter
//! through its hot resize, and stores the new stride and start.
//!
//! # Orderings
//!
//! The stride, the window's start and the drop threshold are `Relaxed`:
//! each is a figure that steers sampling, when to try the lock, or whether
//! one cancelled permit counts as a drop; a stale one costs a sample more
//! or less, a try of the lock, or one permit judged by the last window's
//! baseline. The lock orders the closers. The
//! samples' own orderings are in `admission/samples.rs`.

use crossbeam_utils::CachePadded;
use quanta::Clock;

use super::{Adaptive, AdaptiveStats, Controller};
use crate::admission::ShardedCounter;
use crate::sync::{try_lock, AtomicU64, Mutex, Ordering};

/// Under loom every sampled release finds its window due, so that the
/// models explore a close racing the admissions and releases (loom models
/// no time, and a real clock would make its runs differ).
const ALWAYS_DUE: bool = cfg!(sidejob_loom);

/// A sample's start is kept as a *stamp*: the clock's raw reading shifted
/// right by `STAMP_SHIFT`, in `STAMP_BITS` bits, so that an owned permit
/// holds it and its shard in one word (a permit one word larger made a
/// tower layer's request a third slower). A raw unit is a TSC cycle or a
/// nanosecond, so a stamp is at most 64 ns coarse and wraps after 2^52
/// units (17 days of a 3 GHz TSC); a hold longer than that is sampled
/// modulo it.
pub(crate) const STAMP_BITS: u32 = 46;
const STAMP_SHIFT: u32 = 6;
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;

/// The samples a window aims for, across all shards.
const SAMPLES_PER_WINDOW: u64 = 256;
/// The widest stride: one permit in this many is timed.
const MAX_STRIDE: u64 = 64;

/// What the request path reads.
#[derive(Debug)]
struct Hot {
    clock: Clock,
    /// The stride less one (a power of two less one): a permit whose grant
    /// number has none of these bits set is sampled.
    mask: AtomicU64,
    /// When the window opened, in the clock's raw units.
    opened: AtomicU64,
    /// The window's length, in nanoseconds.
    window_nanos: u64,
    /// A cancelled permit held longer than this, in nanoseconds, is a
    /// drop ([`Adaptive::drop_after`] × the baseline); `u64::MAX` before
    /// the first window.
    drop_after: AtomicU64,
}

/// What a window's close keeps.
#[derive(Debug)]
struct Closing {
    controller: Controller,
    /// The resource's name, for the limit's events.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    name: String,
    /// Refusals and grants ever, at the last close.
    refused: u64,
    granted: u64,
}

/// An adaptive limit over one counter.
#[derive(Debug)]
pub(crate) struct Governor {
    hot: CachePadded<Hot>,
    closing: Mutex<Closing>,
    /// The least and the most the limit may be.
    bounds: (usize, usize),
}

impl Governor {
    /// A governor for `adaptive` (already checked) over `counter`, whose
    /// capacity is the initial limit, timed by `clock`.
    pub(crate) fn new(
        adaptive: Adaptive,
        counter: &ShardedCounter,
        clock: Clock,
        name: String,
    ) -> Governor {
        let window_nanos = u64::try_from(adaptive.window.as_nanos()).unwrap_or(u64::MAX);
        let bounds = (adaptive.min_limit, adaptive.max_limit);
        let opened = clock.raw();
        Governor {
            hot: CachePadded::new(Hot {
                clock,
                mask: AtomicU64::new(0),
                opened: AtomicU64::new(opened),
                window_nanos,
                drop_after: AtomicU64::new(u64::MAX),
            }),
            closing: Mutex::new(Closing {
                controller: Controller::new(adaptive, counter.capacity()),
                name,
                refused: counter.refusals_total(),
                granted: counter.grants_total(),
            }),
            bounds,
        }
    }

    /// The start of a permit with grant number `grant`: a stamp of the
    /// clock (nonzero, at most `STAMP_BITS` bits) if it is sampled, 0 if not.
    #[inline]
    pub(crate) fn start(&self, grant: u64) -> u64 {
        if grant & self.hot.mask.load(Ordering::Relaxed) == 0 {
            ((self.hot.clock.raw() >> STAMP_SHIFT) & STAMP_MASK).max(1)
        } else {
            0
        }
    }

    /// A sampled permit stamped `stamp` (from [`start`](Self::start)) is
    /// released from `shard` of `counter`.
    #[inline]
    pub(crate) fn finish(&self, counter: &ShardedCounter, shard: usize, stamp: u64) {
        let now = self.hot.clock.raw();
        counter.release_sampled(shard, self.held(stamp, now));
        self.maybe_close(counter, now);
    }

    /// A sampled permit stamped `stamp` is released from `shard` of
    /// `counter` after its call ended without an answer (cancelled, or
    /// failed for a reason that is not overload): a censored sample, or a
    /// drop if it was held past [`Adaptive::drop_after`] × the baseline
    /// (the caller gave up on a downstream that did not answer).
    pub(crate) fn finish_cancelled(&self, counter: &ShardedCounter, shard: usize, stamp: u64) {
        let now = self.hot.clock.raw();
        let held = self.held(stamp, now);
        if held > self.hot.drop_after.load(Ordering::Relaxed) {
            counter.record_drop(shard);
            counter.release(shard);
        } else {
            counter.release_censored(shard, held);
        }
        self.maybe_close(counter, now);
    }

    /// Nanoseconds from the stamp `stamp` to the raw reading `now`.
    #[inline]
    fn held(&self, stamp: u64, now: u64) -> u64 {
        // The stamp's missing high bits are now's, or one period less.
        let period = 1u64 << (STAMP_BITS + STAMP_SHIFT);
        let mut started = (now & !(period - 1)) | (stamp << STAMP_SHIFT);
        if started > now {
            started = started.wrapping_sub(period);
        }
        self.hot.clock.delta_as_nanos(started, now)
    }

    /// An acquire of `counter` was refused: the window may close now, so
    /// that a limit nothing is released under (every permit held, or none
    /// admitted) still moves.
    #[cold]
    pub(crate) fn refused(&self, counter: &ShardedCounter) {
        self.maybe_close(counter, self.hot.clock.raw());
    }

    /// A permit of `shard` reports a drop. Its slot is released by the
    /// caller, unsampled.
    pub(crate) fn dropped(&self, counter: &ShardedCounter, shard: usize) {
        counter.record_drop(shard);
        self.maybe_close(counter, self.hot.clock.raw());
    }

    #[inline]
    fn maybe_close(&self, counter: &ShardedCounter, now: u64) {
        let opened = self.hot.opened.load(Ordering::Relaxed);
        if ALWAYS_DUE || self.hot.clock.delta_as_nanos(opened, now) >= self.hot.window_nanos {
            self.close(counter, now);
        }
    }

    /// Closes the window if no other thread is closing it.
    #[cold]
    #[inline(never)]
    fn close(&self, counter: &ShardedCounter, now: u64) {
        // Poison is taken as it is: a close that panicked must not stop
        // every later one, which would freeze the limit for good.
        let Some(mut closing) = try_lock(&self.closing) else {
            return; // closing under way
        };
        let opened = self.hot.opened.load(Ordering::Relaxed);
        if !ALWAYS_DUE && self.hot.clock.delta_as_nanos(opened, now) < self.hot.window_nanos {
            return; // closed just now by another thread
        }
        let gathered = counter.take_samples();
        let refused = counter.refusals_total();
        let granted = counter.grants_total();
        let new_refused = refused.saturating_sub(closing.refused);
        let new_grants = granted.saturating_sub(closing.granted);
        closing.refused = refused;
        closing.granted = granted;
        let limit = counter.capacity();
        // `close` catches the algorithm's panics, so the counts stay whole;
        // should anything else in it panic, the next close takes the lock
        // as it is (above).
        let moved = closing.controller.close(limit, gathered, new_refused);
        if let Some(next) = moved {
            // Within [min, max], checked against the largest capacity at
            // build. Only over the limit this window read, and never
            // waiting: a user's `set_capacity` that came meanwhile, or is
            // under way, wins, and the next window starts from it (as it
            // does after a figures' last-resort read held the lock).
            counter.resize_from(limit, next);
        }
        #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
        let rule_panicked = closing.controller.take_rule_panic();
        self.hot
            .drop_after
            .store(closing.controller.drop_after_nanos(), Ordering::Relaxed);
        let stride = (new_grants / SAMPLES_PER_WINDOW).clamp(1, MAX_STRIDE);
        let stride = if stride.is_power_of_two() {
            stride
        } else {
            stride.next_power_of_two() / 2
        };
        self.hot.mask.store(stride - 1, Ordering::Relaxed);
        self.hot
            .opened
            .store(self.hot.clock.raw(), Ordering::Relaxed);
        // The events after the lock: a subscriber may read the stats,
        // which take it.
        #[cfg(feature = "tracing")]
        if moved.is_some() || rule_panicked {
            // Cloned only for an event: most windows tell nothing, and a
            // close runs on a releasing thread.
            let name = closing.name.clone();
            drop(closing);
            if let Some(next) = moved {
                crate::events::debug_event!(
                    target: "sidejob::adaptive",
                    resource = %name,
                    was = limit,
                    limit = next,
                    "the adaptive limit moved",
                );
            }
            if rule_panicked {
                crate::events::warn_event!(
                    target: "sidejob::adaptive",
                    resource = %name,
                    "the adaptive rule panicked: its window kept the limit",
                );
            }
        }
    }

    /// The least and the most the limit may be.
    pub(crate) fn bounds(&self) -> (usize, usize) {
        self.bounds
    }

    /// The figures so far, with the limit read from `counter`.
    pub(crate) fn stats(&self, counter: &ShardedCounter) -> AdaptiveStats {
        let closing = match self.closing.lock() {
            Ok(closing) => closing,
            Err(poisoned) => poisoned.into_inner(),
        };
        AdaptiveStats {
            limit: counter.capacity(),
            ..closing.controller.stats()
        }
    }

    /// The clock a governor reads: the process's one clock (under loom,
    /// the test's mock: see `crate::clock`).
    pub(crate) fn clock() -> Clock {
        crate::clock::clock().clone()
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use std::time::Duration;

    use quanta::Clock;

    use super::*;
    use crate::adaptive::Window;
    use crate::admission::{Priority, Shares};

    /// A governor over a counter of `capacity` on one shard, on a mock clock
    /// (in nanoseconds) the test moves.
    fn governed(
        adaptive: Adaptive,
        capacity: usize,
    ) -> (ShardedCounter, Governor, Arc<quanta::Mock>) {
        let counter = ShardedCounter::new(capacity, 1, Shares::default());
        let (clock, mock) = Clock::mock();
        let governor = Governor::new(
            adaptive.window(Duration::from_millis(100)).min_samples(1),
            &counter,
            clock,
            "test".to_owned(),
        );
        (counter, governor, mock)
    }

    use std::sync::Arc;

    /// Admits, holds for `held` of mock time, releases.
    fn hold(counter: &ShardedCounter, governor: &Governor, mock: &quanta::Mock, held: Duration) {
        let (shard, grant) = counter.admit_numbered(0, Priority::Normal).unwrap();
        let stamp = governor.start(grant);
        assert_ne!(stamp, 0, "sampled");
        mock.increment(held);
        governor.finish(counter, shard, stamp);
    }

    #[test]
    fn a_hold_is_sampled_to_the_stamps_grain_and_closes_the_window_past_its_length() {
        let (counter, governor, mock) =
            governed(Adaptive::custom(|limit: usize, _: &Window| limit), 4);
        hold(&counter, &governor, &mock, Duration::from_millis(5));
        assert_eq!(governor.stats(&counter).windows, 0); // 5 ms into its 100
        mock.increment(Duration::from_millis(100));
        hold(&counter, &governor, &mock, Duration::from_millis(7)); // past it: closes
        let stats = governor.stats(&counter);
        assert_eq!((stats.windows, stats.samples), (1, 2));
        let grain = Duration::from_nanos(1 << STAMP_SHIFT);
        // The first window's mean: its baseline.
        assert!(
            stats.baseline.abs_diff(Duration::from_millis(6)) <= grain,
            "{stats:?}"
        );
        assert!(
            stats.latency.abs_diff(Duration::from_millis(6)) <= grain,
            "{stats:?}"
        );
    }

    #[test]
    fn a_hold_across_the_stamps_wrap_is_sampled_whole() {
        let (counter, governor, mock) = governed(Adaptive::aimd(), 4);
        let period = Duration::from_nanos(1 << (STAMP_BITS + STAMP_SHIFT));
        mock.increment(period - Duration::from_millis(150)); // the window is due
        hold(&counter, &governor, &mock, Duration::from_millis(300)); // wraps
        let stats = governor.stats(&counter);
        assert_eq!(stats.samples, 1);
        assert!(stats.latency.abs_diff(Duration::from_millis(300)) <= Duration::from_nanos(64));
    }

    #[test]
    fn the_stride_follows_the_traffic_of_the_last_window() {
        let (counter, governor, mock) =
            governed(Adaptive::custom(|limit: usize, _: &Window| limit), 4);
        for _ in 0..10_000 {
            let (shard, grant) = counter.admit_numbered(0, Priority::Normal).unwrap();
            match governor.start(grant) {
                0 => counter.release(shard),
                stamp => governor.finish(&counter, shard, stamp),
            }
        }
        mock.increment(Duration::from_millis(150));
        hold(&counter, &governor, &mock, Duration::ZERO); // grant 10,000: a multiple of any stride
                                                          // 10,001 grants in the window: a stride of 10,001 / 256 = 39, down to 32.
        assert_eq!(governor.hot.mask.load(Ordering::Relaxed), 31);
        let sampled = (0..3200)
            .filter(|_| {
                let (shard, grant) = counter.admit_numbered(0, Priority::Normal).unwrap();
                let stamp = governor.start(grant);
                if stamp == 0 {
                    counter.release(shard);
                } else {
                    governor.finish(&counter, shard, stamp);
                }
                stamp != 0
            })
            .count();
        assert_eq!(sampled, 100);
    }
}
