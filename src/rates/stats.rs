//! [`RateStats`] and [`WindowStats`]: what every face's `rates()` reports.

/// A face's rates, from its `rates()` (e.g.
/// [`Resource::rates`](crate::Resource::rates)), as Erlang sidejob reports
/// them.
///
/// "In" is an admission (a permit granted, a message accepted, a child
/// spawned, an object taken), "out" a completion (a permit released, a
/// message handled or skipped, a child ended, an object returned). The
/// rates are per second over the last whole second the process's sampler
/// measured (it ticks once a second); `total`'s counts are exact at the
/// call.
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::new(1);
/// let permit = resource.try_acquire()?;
/// assert!(resource.try_acquire().is_err());
/// drop(permit);
/// let rates = resource.rates();
/// // Exact at the call, even before the first tick:
/// assert_eq!((rates.total.accepted, rates.total.rejected, rates.total.completed), (1, 1, 1));
/// # Ok::<(), sidejob::Overload>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct RateStats {
    /// Admissions per second, over the last whole second.
    pub in_rate: f64,
    /// Completions per second, over the last whole second.
    pub out_rate: f64,
    /// Refusals per second, over the last whole second.
    pub rejected_rate: f64,
    /// The 60 whole seconds before the last tick (fewer while the face is
    /// younger), sliding.
    pub last_60s: WindowStats,
    /// Everything since the face was made.
    pub total: WindowStats,
}

/// Counts and rates over a span, within [`RateStats`].
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::new(4);
/// let window = resource.rates().last_60s;
/// assert_eq!((window.accepted, window.max_in_rate, window.peak_usage), (0, 0.0, 0));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct WindowStats {
    /// Admissions in the span.
    pub accepted: u64,
    /// Refusals in the span.
    pub rejected: u64,
    /// Completions in the span.
    pub completed: u64,
    /// Admissions per second, averaged over the whole seconds the span
    /// covers (at most 60 for the window); 0 before the first.
    pub avg_in_rate: f64,
    /// The most admissions in one whole second of the span.
    pub max_in_rate: f64,
    /// Completions per second, averaged as `avg_in_rate`.
    pub avg_out_rate: f64,
    /// The most completions in one whole second of the span.
    pub max_out_rate: f64,
    /// The highest usage seen: by the once-a-second samples in the span,
    /// and, for `total`, at the call. A peak shorter than a second between
    /// two samples is not seen: catching it would cost every admission a
    /// shared high-water mark.
    pub peak_usage: usize,
}

impl WindowStats {
    pub(super) fn empty() -> Self {
        WindowStats {
            accepted: 0,
            rejected: 0,
            completed: 0,
            avg_in_rate: 0.0,
            max_in_rate: 0.0,
            avg_out_rate: 0.0,
            max_out_rate: 0.0,
            peak_usage: 0,
        }
    }
}
