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
//! The stride and the window's start are `Relaxed`: each is a figure that
//! steers sampling and when to try the lock; a stale one costs a sample
//! more or less, or a try of the lock. The lock orders the closers. The
//! samples' own orderings are in `admission/samples.rs`.

use crossbeam_utils::CachePadded;
use quanta::Clock;

use super::{Adaptive, AdaptiveStats, Controller};
use crate::admission::ShardedCounter;
use crate::sync::{AtomicU64, Mutex, Ordering};

/// Under loom every sampled release finds its window due, so that the
/// models explore a close racing the admissions and releases (loom models
/// no time, and a real clock would make its runs differ).
const ALWAYS_DUE: bool = cfg!(sidejob_loom);

/// A sample's start is kept as a *stamp*: the clock's raw reading shifted
/// right by `STAMP_SHIFT`, in `STAMP_BITS` bits, so that an owned permit
/// holds it and its shard in one word (a permit one word larger made a
/// tower layer's request a third slower). A raw unit is a TSC cycle or a
/// nanosecond, so a stamp is at most 64 ns coarse and wraps after 2^53
/// units (34 days of a 3 GHz TSC); a hold longer than that is sampled
/// modulo it.
pub(crate) const STAMP_BITS: u32 = 47;
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
}

/// What a window's close keeps.
#[derive(Debug)]
struct Closing {
    controller: Controller,
    /// Refusals and grants ever, at the last close.
    refused: u64,
    granted: u64,
}

/// An adaptive limit over one counter.
#[derive(Debug)]
pub(crate) struct Governor {
    hot: CachePadded<Hot>,
    closing: Mutex<Closing>,
}

impl Governor {
    /// A governor for `adaptive` (already checked) over `counter`, whose
    /// capacity is the initial limit, timed by `clock`.
    pub(crate) fn new(adaptive: Adaptive, counter: &ShardedCounter, clock: Clock) -> Governor {
        let window_nanos = u64::try_from(adaptive.window.as_nanos()).unwrap_or(u64::MAX);
        let opened = clock.raw();
        Governor {
            hot: CachePadded::new(Hot {
                clock,
                mask: AtomicU64::new(0),
                opened: AtomicU64::new(opened),
                window_nanos,
            }),
            closing: Mutex::new(Closing {
                controller: Controller::new(adaptive, counter.capacity()),
                refused: counter.refusals_total(),
                granted: counter.grants_total(),
            }),
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
        // The stamp's missing high bits are now's, or one period less.
        let period = 1u64 << (STAMP_BITS + STAMP_SHIFT);
        let mut started = (now & !(period - 1)) | (stamp << STAMP_SHIFT);
        if started > now {
            started = started.wrapping_sub(period);
        }
        counter.release_sampled(shard, self.hot.clock.delta_as_nanos(started, now));
        self.maybe_close(counter, now);
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
        let Ok(mut closing) = self.closing.try_lock() else {
            return; // closing under way, or a poisoned lock (never: see below)
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
        // `close` catches the algorithm's panics, so the lock is never
        // poisoned and the counts stay whole.
        if let Some(limit) = closing
            .controller
            .close(counter.capacity(), gathered, new_refused)
        {
            // Within [min, max], checked against the largest capacity at build.
            let _ = counter.set_capacity(limit);
        }
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

    /// The clock a governor reads: the CPU's time-stamp counter where it
    /// is reliable (a few ns a read), else the OS's monotonic clock; a
    /// still mock under loom (see [`ALWAYS_DUE`]).
    pub(crate) fn clock() -> Clock {
        if cfg!(sidejob_loom) {
            Clock::mock().0
        } else {
            Clock::new()
        }
    }
}
