//! [`Window`]: what an adaptive limit measured between two updates.

use std::time::Duration;

/// What the permits of an adaptive [`Resource`](crate::Resource) reported
/// in one window: the input of an [`Algorithm`](super::Algorithm).
///
/// A window closes once its time ([`Adaptive::window`](super::Adaptive::window))
/// is up and it holds at least
/// [`min_samples`](super::Adaptive::min_samples) samples and drops; a
/// thinner one is carried into the next.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use sidejob::adaptive::Window;
///
/// let window = Window::new(100, Duration::from_millis(12), 20)
///     .with_min_latency(Duration::from_millis(10))
///     .with_drops(1);
/// assert_eq!((window.samples, window.drops, window.max_in_flight), (100, 1, 20));
/// assert!(window.min_latency <= window.mean_latency);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Window {
    /// Latency samples: permits released normally (see
    /// [`Adaptive`](super::Adaptive) for which permits are sampled).
    pub samples: u64,
    /// Drops: permits released with
    /// [`Permit::dropped`](crate::Permit::dropped). Every drop counts.
    pub drops: u64,
    /// The shortest hold among the samples.
    pub min_latency: Duration,
    /// The mean hold of the samples.
    pub mean_latency: Duration,
    /// The baseline: the controller's estimate of the latency with no
    /// queue downstream (see [`AdaptiveStats::baseline`](super::AdaptiveStats::baseline)),
    /// including this window.
    pub baseline: Duration,
    /// The most permits in flight at a sampled release (an upper
    /// estimate: each shard's peak, summed).
    pub max_in_flight: usize,
    /// Acquires refused in the window: the application wanted more than
    /// the limit.
    pub refused: u64,
}

impl Window {
    /// A window of `samples` samples with mean latency `mean_latency` (also
    /// its minimum and the baseline) and `max_in_flight` permits at most,
    /// with no drops and no refusals: for testing an
    /// [`Algorithm`](super::Algorithm).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let window = sidejob::adaptive::Window::new(10, Duration::from_millis(5), 4);
    /// assert_eq!(window.baseline, Duration::from_millis(5));
    /// ```
    pub fn new(samples: u64, mean_latency: Duration, max_in_flight: usize) -> Window {
        Window {
            samples,
            drops: 0,
            min_latency: mean_latency,
            mean_latency,
            baseline: mean_latency,
            max_in_flight,
            refused: 0,
        }
    }

    /// The same window with `drops` drops.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let window = sidejob::adaptive::Window::new(10, Duration::from_millis(5), 4).with_drops(2);
    /// assert_eq!(window.drops, 2);
    /// ```
    pub fn with_drops(mut self, drops: u64) -> Window {
        self.drops = drops;
        self
    }

    /// The same window with minimum latency `min_latency`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let window = sidejob::adaptive::Window::new(10, Duration::from_millis(5), 4)
    ///     .with_min_latency(Duration::from_millis(1));
    /// assert_eq!(window.min_latency, Duration::from_millis(1));
    /// ```
    pub fn with_min_latency(mut self, min_latency: Duration) -> Window {
        self.min_latency = min_latency;
        self
    }

    /// The same window with baseline `baseline`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let window = sidejob::adaptive::Window::new(10, Duration::from_millis(5), 4)
    ///     .with_baseline(Duration::from_millis(2));
    /// assert_eq!(window.baseline, Duration::from_millis(2));
    /// ```
    pub fn with_baseline(mut self, baseline: Duration) -> Window {
        self.baseline = baseline;
        self
    }

    /// The same window with `refused` refusals.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let window = sidejob::adaptive::Window::new(10, Duration::from_millis(5), 4).with_refused(3);
    /// assert_eq!(window.refused, 3);
    /// ```
    pub fn with_refused(mut self, refused: u64) -> Window {
        self.refused = refused;
        self
    }
}
