//! Latency histograms: recorded by the workers, summarised in stats.

use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;

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
