//! [`Aimd`]: additive increase, multiplicative decrease, as Netflix's
//! `AIMDLimit`.

use std::time::Duration;

use super::{Algorithm, Window};
use crate::error::BuildError;

/// Additive increase, multiplicative decrease, after Netflix
/// concurrency-limits' `AIMDLimit`: a window with a drop, or with a
/// sampled request slower than the timeout (its
/// [`max_latency`](Window::max_latency); Netflix checks each sample too),
/// multiplies the limit by the backoff;
/// otherwise, while the application uses at least half the limit, the
/// limit grows by one. It reads latency only against the timeout, so give
/// it one near the latency your callers give up at.
///
/// Defaults, Netflix's: backoff 0.9, timeout 5 s.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use sidejob::adaptive::{Adaptive, Aimd, Algorithm, Window};
///
/// let mut aimd = Aimd::default().backoff(0.5).timeout(Duration::from_millis(100));
/// let calm = Window::new(50, Duration::from_millis(20), 10);
/// assert_eq!(aimd.update(10, &calm), 11);
/// assert_eq!(aimd.update(10, &calm.with_drops(1)), 5);
/// let slow = Window::new(50, Duration::from_millis(200), 10);
/// assert_eq!(aimd.update(10, &slow), 5);
/// let one_late = calm.with_max_latency(Duration::from_millis(150)); // the mean is fine
/// assert_eq!(aimd.update(10, &one_late), 5);
///
/// let resource = sidejob::Resource::builder()
///     .capacity(8)
///     .adaptive(Adaptive::from(aimd))
///     .build()?;
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Aimd {
    backoff: f64,
    timeout: Duration,
}

impl Default for Aimd {
    fn default() -> Self {
        Aimd {
            backoff: 0.9,
            timeout: Duration::from_secs(5),
        }
    }
}

impl Aimd {
    /// The factor a drop multiplies the limit by, in [0.5, 1). Default 0.9.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::{Adaptive, Aimd};
    /// let err = sidejob::Resource::builder()
    ///     .capacity(8)
    ///     .adaptive(Adaptive::from(Aimd::default().backoff(1.5)))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "backoff");
    /// ```
    pub fn backoff(mut self, backoff: f64) -> Self {
        self.backoff = backoff;
        self
    }

    /// A window with a sampled request slower than this backs off as a
    /// drop does. Default 5 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let aimd = sidejob::adaptive::Aimd::default().timeout(Duration::from_millis(250));
    /// # let _ = aimd;
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub(super) fn check(&self) -> Result<(), BuildError> {
        if !(0.5..1.0).contains(&self.backoff) {
            return Err(BuildError::new("backoff", "must be in [0.5, 1)"));
        }
        if self.timeout.is_zero() {
            return Err(BuildError::new("timeout", "must be above zero"));
        }
        Ok(())
    }
}

impl Algorithm for Aimd {
    fn update(&mut self, limit: usize, window: &Window) -> usize {
        if window.drops > 0 || window.max_latency.max(window.mean_latency) > self.timeout {
            (limit as f64 * self.backoff) as usize
        } else if window.max_in_flight * 2 >= limit || window.refused > 0 {
            limit + 1
        } else {
            limit
        }
    }
}
