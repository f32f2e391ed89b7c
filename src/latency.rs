//! Latency histograms: recorded by the workers, summarised in stats.

use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;
use quanta::Clock;

/// The largest latency a histogram tells apart: one hour, in nanoseconds.
/// Longer ones are recorded as one hour.
const MAX_NANOS: u64 = 3_600_000_000_000;

/// Percentiles of a latency distribution, from an HDR histogram.
///
/// Values carry two significant digits of precision (within 1%). A
/// distribution with no samples reports zero everywhere.
///
/// # Examples
///
/// ```
/// use sidejob::{Worker, WorkerPool};
///
/// struct Noop;
/// impl Worker for Noop {
///     type Request = ();
///     type Reply = ();
///     fn handle_call(&mut self, _: ()) {}
/// }
///
/// let pool = WorkerPool::builder().capacity(4).build(|_| Noop)?;
/// pool.call(())?;
/// let handling = pool.stats().handling;
/// assert_eq!(handling.count, 1);
/// assert!(handling.p50 <= handling.p99 && handling.p99 <= handling.max);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct LatencyStats {
    /// Samples recorded.
    pub count: u64,
    /// The arithmetic mean.
    pub mean: Duration,
    /// The median.
    pub p50: Duration,
    /// The 90th percentile.
    pub p90: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The 99.9th percentile.
    pub p999: Duration,
    /// The largest sample.
    pub max: Duration,
}

/// Compact: `p50 1.2ms p90 1.5ms p99 2.1ms p999 2.3ms max 3.6ms (n=30926)`.
///
/// # Examples
///
/// ```
/// let empty = sidejob::LatencyStats::default();
/// assert_eq!(empty.to_string(), "no samples");
/// ```
impl fmt::Display for LatencyStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.count == 0 {
            return f.write_str("no samples");
        }
        write!(
            f,
            "p50 {:.1?} p90 {:.1?} p99 {:.1?} p999 {:.1?} max {:.1?} (n={})",
            self.p50, self.p90, self.p99, self.p999, self.max, self.count
        )
    }
}

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct LatencyHistogram(Histogram<u64>);

impl LatencyHistogram {
    pub(crate) fn new() -> Self {
        // Two significant digits over 1 ns ..= 1 h: a few tens of KiB.
        let histogram = Histogram::new_with_bounds(1, MAX_NANOS, 2)
            .expect("constant histogram bounds are valid");
        LatencyHistogram(histogram)
    }

    #[inline]
    pub(crate) fn record(&mut self, latency: Duration) {
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.0.saturating_record(nanos.clamp(1, MAX_NANOS));
    }

    pub(crate) fn add(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    pub(crate) fn summary(&self) -> LatencyStats {
        let h = &self.0;
        if h.is_empty() {
            return LatencyStats::default();
        }
        let at = |q: f64| Duration::from_nanos(h.value_at_quantile(q));
        LatencyStats {
            count: h.len(),
            mean: Duration::from_nanos(h.mean() as u64),
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p999: at(0.999),
            max: Duration::from_nanos(h.max()),
        }
    }
}

/// How many samples a worker keeps before it records them.
const BATCH: usize = 64;

/// Latency samples a worker has taken but not yet recorded.
///
/// Recording them a batch at a time takes the histograms' lock once per batch
/// instead of once per message, and keeps every locked instruction but the
/// mailbox's own off the worker's path while it is busy.
#[derive(Debug)]
pub(crate) struct LatencyBatch {
    /// Raw clock readings of each sample: posted, started, finished.
    samples: Vec<[u64; 3]>,
}

impl LatencyBatch {
    pub(crate) fn new() -> Self {
        LatencyBatch {
            samples: Vec::with_capacity(BATCH),
        }
    }

    /// Keeps one message's sample; returns `true` once the batch is full.
    #[inline]
    #[must_use]
    pub(crate) fn push(&mut self, posted: u64, started: u64, finished: u64) -> bool {
        self.samples.push([posted, started, finished]);
        self.samples.len() == BATCH
    }

    /// Whether no sample waits.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Records every waiting sample into the two histograms, turning the
    /// readings of `clock` into durations (zero where the readings went back).
    pub(crate) fn record_into(
        &mut self,
        clock: &Clock,
        queue_wait: &mut LatencyHistogram,
        handling: &mut LatencyHistogram,
    ) {
        for [posted, started, finished] in self.samples.drain(..) {
            queue_wait.record(clock.delta(posted, started));
            handling.record(clock.delta(started, finished));
        }
    }
}
