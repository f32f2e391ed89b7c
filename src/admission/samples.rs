//! [`ShardSamples`]: the latency samples and drops one shard's permits
//! report, gathered on the shard's own cache line for an adaptive limit,
//! and [`SampleTotals`], what a window's close takes from every shard.
//!
//! A permit that was sampled adds its hold time here when it is released,
//! on the line its release writes anyway, so a sample writes no line that
//! another shard's threads write. Nothing reads these accumulators on the
//! request path: the thread that closes a window takes them all at once
//! ([`ShardSamples::take`]) and merges them.
//!
//! # Orderings
//!
//! All `Relaxed`. The figures order nothing and guard nothing: each is a
//! single atomic read-modify-write, so no sample, drop or latency is lost
//! or counted twice, and a window's close swaps each out whole. A sample
//! whose adds straddle a close may put its count in one window and its
//! latency (or its square) in the next; a window's mean (or spread) is then
//! off by one sample's part.
//! The minimum, the maximum and the peak are read first and written only when they
//! change (`fetch_min`/`fetch_max`), which is rare once a window has a few
//! samples.

use crate::sync::{AtomicU64, Ordering};

/// The unit of a squared hold: 256 ns (a hold of 10 µs is off by 2.5% at
/// most), so a hold of up to about 4.3 s (`SQUARE_CAP` units) squares
/// within 2^48 and 65,536 of them sum within a `u64`.
const SQUARE_SHIFT: u32 = 8;
/// That unit, in nanoseconds, for who reads the squares back.
pub(crate) const SQUARE_UNIT_NANOS: u64 = 1 << SQUARE_SHIFT;
/// Holds past this many units (about 4.3 s) square as this many, never
/// wrapped: a window with holds that long reads its spread understated,
/// down to none (its falls then move the baseline as they did before the
/// spread was kept).
const SQUARE_CAP: u64 = 1 << 24;

/// A hold squared, in units of 2^`SQUARE_SHIFT` ns squared.
#[inline]
pub(crate) fn square(nanos: u64) -> u64 {
    let units = (nanos >> SQUARE_SHIFT).min(SQUARE_CAP);
    units * units
}

/// One shard's samples since the last window closed.
#[derive(Debug)]
pub(crate) struct ShardSamples {
    count: AtomicU64,
    sum_nanos: AtomicU64,
    /// The answered samples' holds squared (`square`): with their count
    /// and sum, how far a window's mean may be off by chance.
    sum_squares: AtomicU64,
    /// `u64::MAX` while the window has no whole sample.
    min_nanos: AtomicU64,
    /// The longest hold, censored ones included.
    max_nanos: AtomicU64,
    /// The censored samples among `count`, and their part of `sum_nanos`.
    censored: AtomicU64,
    censored_nanos: AtomicU64,
    /// The most permits the shard held at a sampled release.
    peak: AtomicU64,
    drops: AtomicU64,
}

impl Default for ShardSamples {
    fn default() -> Self {
        ShardSamples {
            count: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
            sum_squares: AtomicU64::new(0),
            min_nanos: AtomicU64::new(u64::MAX),
            max_nanos: AtomicU64::new(0),
            censored: AtomicU64::new(0),
            censored_nanos: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            drops: AtomicU64::new(0),
        }
    }
}

impl ShardSamples {
    /// Records a permit held for `nanos`, released while the shard held
    /// `held` permits (itself included).
    #[inline]
    pub(crate) fn record(&self, nanos: u64, held: u64) {
        if nanos < self.min_nanos.load(Ordering::Relaxed) {
            self.min_nanos.fetch_min(nanos, Ordering::Relaxed);
        }
        self.sum_squares.fetch_add(square(nanos), Ordering::Relaxed);
        self.record_hold(nanos, held);
    }

    /// Records a *censored* sample: a permit held for `nanos` whose call
    /// ended without its answer (cancelled, or failed for a reason that is
    /// not overload), so its latency is at least `nanos`. It counts in the
    /// sum, the count and the maximum, not in the minimum.
    pub(crate) fn record_censored(&self, nanos: u64, held: u64) {
        self.censored_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.censored.fetch_add(1, Ordering::Relaxed);
        self.record_hold(nanos, held);
    }

    /// What every sample adds: to the sum, the count, the maximum and the
    /// peak.
    #[inline]
    fn record_hold(&self, nanos: u64, held: u64) {
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        if nanos > self.max_nanos.load(Ordering::Relaxed) {
            self.max_nanos.fetch_max(nanos, Ordering::Relaxed);
        }
        if held > self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(held, Ordering::Relaxed);
        }
    }

    /// Records a drop: a call that failed from overload downstream.
    #[inline]
    pub(crate) fn record_drop(&self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes everything recorded since the last take, leaving the
    /// accumulators empty.
    ///
    /// The words are taken one by one while releases keep adding, so a
    /// sample may land partly in this take and partly in the next: a
    /// censored mark without its count (which the next take then counts as
    /// an answered call). The marks are capped at the counts, so the
    /// totals always hold `censored <= samples` and `censored_nanos <=
    /// sum_nanos` (loom model (ah)).
    pub(crate) fn take(&self) -> SampleTotals {
        let count = self.count.swap(0, Ordering::Relaxed);
        let sum_nanos = self.sum_nanos.swap(0, Ordering::Relaxed);
        SampleTotals {
            samples: count,
            sum_nanos,
            sum_squares: self.sum_squares.swap(0, Ordering::Relaxed),
            min_nanos: self.min_nanos.swap(u64::MAX, Ordering::Relaxed),
            max_nanos: self.max_nanos.swap(0, Ordering::Relaxed),
            censored: self.censored.swap(0, Ordering::Relaxed).min(count),
            censored_nanos: self
                .censored_nanos
                .swap(0, Ordering::Relaxed)
                .min(sum_nanos),
            peak: self.peak.swap(0, Ordering::Relaxed),
            drops: self.drops.swap(0, Ordering::Relaxed),
        }
    }
}

/// Samples merged over shards (and, for a window too thin to decide on,
/// over the windows it carries over).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SampleTotals {
    /// Latency samples.
    pub(crate) samples: u64,
    /// Their latencies summed, in nanoseconds.
    pub(crate) sum_nanos: u64,
    /// The answered ones' latencies squared and summed, in units of
    /// (256 ns)^2, each capped at about 4.3 s (0: unknown, as in a
    /// simulated window that gives none).
    pub(crate) sum_squares: u64,
    /// The least of the whole (uncensored) ones, `u64::MAX` when there
    /// is none.
    pub(crate) min_nanos: u64,
    /// The most of them, censored ones included; 0 when there is none.
    pub(crate) max_nanos: u64,
    /// The censored samples among `samples`, and their part of `sum_nanos`.
    pub(crate) censored: u64,
    pub(crate) censored_nanos: u64,
    /// The shards' peaks summed: at least the most permits held at once
    /// at a sampled release (shards peak at different moments).
    pub(crate) peak: u64,
    /// Drops.
    pub(crate) drops: u64,
}

impl Default for SampleTotals {
    fn default() -> Self {
        SampleTotals {
            samples: 0,
            sum_nanos: 0,
            sum_squares: 0,
            min_nanos: u64::MAX,
            max_nanos: 0,
            censored: 0,
            censored_nanos: 0,
            peak: 0,
            drops: 0,
        }
    }
}

impl SampleTotals {
    /// These and `other` together. Peaks add up across shards, whose
    /// peaks are at different places; across windows, the larger stands.
    pub(crate) fn with_shard(self, other: SampleTotals) -> SampleTotals {
        SampleTotals {
            peak: self.peak + other.peak,
            ..self.with_window(other)
        }
    }

    /// These and a later window's, for a window carried over.
    pub(crate) fn with_window(self, other: SampleTotals) -> SampleTotals {
        SampleTotals {
            samples: self.samples + other.samples,
            sum_nanos: self.sum_nanos.saturating_add(other.sum_nanos),
            sum_squares: self.sum_squares.saturating_add(other.sum_squares),
            min_nanos: self.min_nanos.min(other.min_nanos),
            max_nanos: self.max_nanos.max(other.max_nanos),
            censored: self.censored + other.censored,
            censored_nanos: self.censored_nanos.saturating_add(other.censored_nanos),
            peak: self.peak.max(other.peak),
            drops: self.drops + other.drops,
        }
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_take_empties_the_accumulators_and_returns_what_they_held() {
        let samples = ShardSamples::default();
        samples.record(300, 2);
        samples.record(100, 5);
        samples.record_drop();
        let taken = samples.take();
        assert_eq!(
            taken,
            SampleTotals {
                samples: 2,
                sum_nanos: 400,
                sum_squares: 1, // 300 and 100 ns in units of 256
                min_nanos: 100,
                max_nanos: 300,
                peak: 5,
                drops: 1,
                ..SampleTotals::default()
            }
        );
        assert_eq!(samples.take(), SampleTotals::default());
    }

    #[test]
    fn a_censored_sample_counts_in_the_mean_and_the_maximum_not_the_minimum() {
        let samples = ShardSamples::default();
        samples.record(100, 1);
        samples.record_censored(50, 1);
        samples.record_censored(900, 3);
        let taken = samples.take();
        assert_eq!(
            (
                taken.samples,
                taken.sum_nanos,
                taken.min_nanos,
                taken.max_nanos,
                taken.peak
            ),
            (3, 1050, 100, 900, 3)
        );
        assert_eq!((taken.censored, taken.censored_nanos), (2, 950));
    }

    #[test]
    fn the_answered_holds_are_squared_the_censored_ones_not() {
        let samples = ShardSamples::default();
        samples.record(25_600, 1); // 100 units of 256 ns
        samples.record(2_560, 1); // 10
        samples.record_censored(256_000, 1);
        assert_eq!(samples.take().sum_squares, 100 * 100 + 10 * 10);
        assert_eq!(samples.take().sum_squares, 0);
        // A hold of an hour squares as one of about 4.3 s: no sum wraps.
        assert_eq!(square(3_600_000_000_000), 1 << 48);
    }

    #[test]
    fn shards_add_their_peaks_and_windows_keep_the_larger() {
        let a = SampleTotals {
            samples: 1,
            sum_nanos: 10,
            min_nanos: 10,
            max_nanos: 10,
            peak: 3,
            drops: 0,
            ..SampleTotals::default()
        };
        let b = SampleTotals {
            samples: 2,
            sum_nanos: 8,
            min_nanos: 4,
            max_nanos: 4,
            peak: 2,
            drops: 1,
            ..SampleTotals::default()
        };
        assert_eq!(a.with_shard(b).peak, 5);
        assert_eq!(a.with_window(b).peak, 3);
        assert_eq!(
            (a.with_window(b).samples, a.with_window(b).min_nanos),
            (3, 4)
        );
    }
}
