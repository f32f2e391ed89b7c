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
    /// The shortest hold among the samples whose call answered (a
    /// cancelled call's hold is only a lower bound of its latency).
    pub min_latency: Duration,
    /// The mean hold of the samples, cancelled calls' included.
    pub mean_latency: Duration,
    /// The longest hold among the samples, cancelled calls' included.
    pub max_latency: Duration,
    /// The baseline: the controller's long-term reference of the mean
    /// latency with no queue downstream (see
    /// [`AdaptiveStats::baseline`](super::AdaptiveStats::baseline)).
    pub baseline: Duration,
    /// The standard error of the answered calls' mean: how far chance
    /// alone moves this window's mean (the spread of their holds over the
    /// square root of their count). Zero when the spread is unknown.
    pub mean_error: Duration,

    /// The most permits in flight at a sampled release (an upper
    /// estimate: each shard's peak, summed).
    pub max_in_flight: usize,
    /// Acquires refused in the window: the application wanted more than
    /// the limit.
    pub refused: u64,
}

impl Window {
    /// A window of `samples` samples with mean latency `mean_latency` (also
    /// its minimum, its maximum and the baseline) and `max_in_flight` permits at most,
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
            max_latency: mean_latency,
            baseline: mean_latency,
            mean_error: Duration::ZERO,
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

    /// The same window with maximum latency `max_latency`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let window = sidejob::adaptive::Window::new(10, Duration::from_millis(5), 4)
    ///     .with_max_latency(Duration::from_millis(90));
    /// assert_eq!(window.max_latency, Duration::from_millis(90));
    /// ```
    pub fn with_max_latency(mut self, max_latency: Duration) -> Window {
        self.max_latency = max_latency;
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

    /// The same window with standard error `mean_error` of its mean.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let ms = Duration::from_millis;
    /// let window = sidejob::adaptive::Window::new(30, ms(20), 6).with_mean_error(ms(3));
    /// assert_eq!(window.mean_error, ms(3));
    /// ```
    pub fn with_mean_error(mut self, mean_error: Duration) -> Window {
        self.mean_error = mean_error;
        self
    }

    /// How much of the window's latency is the downstream's own:
    /// `baseline / mean_latency`, from 0 (all queue) to 1 (no queue) or
    /// above (faster than the baseline). The baseline is a reference of
    /// the windows' means, so jitter, a steady mix of fast and slow
    /// requests and a long tail leave it near 1; a queue lowers it. 1 when
    /// the window has no latency or no baseline yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let ms = Duration::from_millis;
    /// let window = sidejob::adaptive::Window::new(10, ms(20), 4).with_baseline(ms(10));
    /// assert_eq!(window.gradient(), 0.5);
    /// // A mix of 1 ms and 20 ms requests at its usual mean: no queue.
    /// let mixed = sidejob::adaptive::Window::new(10, ms(10), 4).with_min_latency(ms(1));
    /// assert_eq!(mixed.gradient(), 1.0);
    /// ```
    pub fn gradient(&self) -> f64 {
        if self.mean_latency.is_zero() || self.baseline.is_zero() {
            return 1.0;
        }
        self.baseline.as_secs_f64() / self.mean_latency.as_secs_f64()
    }

    /// The [gradient](Window::gradient) with the mean one standard error
    /// higher: `baseline / (mean_latency + mean_error)`, as low as chance
    /// alone plausibly left it. A rule that grows on it reads no room into
    /// a window fast by chance. The gradient itself when the error is
    /// unknown (zero).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let ms = Duration::from_millis;
    /// let window = sidejob::adaptive::Window::new(30, ms(8), 6).with_baseline(ms(10));
    /// assert_eq!(window.gradient(), 1.25);
    /// assert_eq!(window.with_mean_error(ms(2)).gradient_past_error(), 1.0);
    /// ```
    pub fn gradient_past_error(&self) -> f64 {
        let high = self.mean_latency.saturating_add(self.mean_error);
        if high.is_zero() || self.baseline.is_zero() {
            return 1.0;
        }
        self.baseline.as_secs_f64() / high.as_secs_f64()
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
