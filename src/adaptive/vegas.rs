//! [`Vegas`]: the limit follows an estimate of the queue downstream, after
//! TCP Vegas and Netflix's `VegasLimit`.

use super::{Algorithm, Window};
use crate::error::BuildError;

/// The limit follows an estimate of the requests queued downstream, after
/// TCP Vegas and Netflix concurrency-limits' `VegasLimit` (its default).
///
/// Each window estimates the queue as `q = ceil(limit × (1 − gradient))`,
/// where the [gradient](Window::gradient) is `baseline / mean latency`. With
/// `lg = max(1, ⌊log10 limit⌋)`, the queue it aims for is between
/// `a = alpha × lg` and `b = beta × lg`, both capped for small limits at a
/// third of the limit (at least 1): if `q = 0` the limit grows by
/// `beta × lg`, at most half itself (fast, while nothing queues), and by
/// half that unless the mean plus its standard error
/// ([`Window::gradient_past_error`]) is at the baseline too (so a window
/// fast by chance does not take the limit far past its queue); if
/// `q ≤ lg` or `q < a`, by `lg`; growth stops at 1.5 × `limit − q`, the concurrency
/// the downstream is estimated to take;
/// if `q > b`, it sheds the excess `q − b` (at least `lg`, at most a
/// quarter of the limit a window); in between it stays. A window with drops
/// shrinks it by `lg` (Netflix's rule), never ignored. For a downstream
/// that queues beyond `K`, it settles at `K + a` to `K + b`.
///
/// Three changes are ours: the caps (Netflix's 3 to 6 queued requests are
/// half a limit of 6 or more, and its growth of 6 doubles it; ours keep
/// the limit within 1.5 × K), and the shrink by the excess (Netflix's
/// `lg` a window takes a dozen windows to shed a doubled queue).
///
/// Netflix takes the no-load latency from the shortest sample and
/// re-measures it every few hundred samples, which under load drifts it up
/// (#165), and reads jitter or a mix of fast and slow requests as a queue.
/// This one uses the controller's baseline, a long-term reference of the
/// window *mean* that a queue the limit lets build cannot pull up (see
/// [`AdaptiveStats::baseline`](super::AdaptiveStats::baseline)).
///
/// Defaults, Netflix's: alpha 3, beta 6.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use sidejob::adaptive::{Algorithm, Vegas, Window};
///
/// let ms = Duration::from_millis;
/// let mut vegas = Vegas::default();
/// let calm = Window::new(50, ms(10), 20).with_baseline(ms(10));
/// assert_eq!(vegas.update(20, &calm), 26); // q = 0: + 6
/// // The same mean, give or take 1 ms by chance: + 3.
/// assert_eq!(vegas.update(20, &calm.with_mean_error(ms(1))), 23);
/// let queued = Window::new(50, ms(20), 20).with_baseline(ms(10)); // q = 10
/// assert_eq!(vegas.update(20, &queued), 16); // sheds 10 - 6
/// let stalled = Window::new(50, ms(200), 20).with_baseline(ms(10)); // q = 19
/// assert_eq!(vegas.update(20, &stalled), 15); // a quarter at most
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Vegas {
    alpha: usize,
    beta: usize,
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas { alpha: 3, beta: 6 }
    }
}

impl Vegas {
    /// Below `alpha × lg` queued requests the limit grows. Default 3.
    ///
    /// # Examples
    ///
    /// ```
    /// let vegas = sidejob::adaptive::Vegas::default().alpha(2).beta(4);
    /// # let _ = vegas;
    /// ```
    pub fn alpha(mut self, alpha: usize) -> Self {
        self.alpha = alpha;
        self
    }

    /// Above `beta × lg` queued requests the limit shrinks; at least
    /// `alpha`. Default 6.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::{Adaptive, Vegas};
    /// let err = sidejob::Resource::builder()
    ///     .capacity(8)
    ///     .adaptive(Adaptive::from(Vegas::default().alpha(5).beta(4)))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "beta");
    /// ```
    pub fn beta(mut self, beta: usize) -> Self {
        self.beta = beta;
        self
    }

    pub(super) fn check(&self) -> Result<(), BuildError> {
        if self.alpha == 0 {
            return Err(BuildError::new("alpha", "must be at least 1"));
        }
        if self.beta < self.alpha {
            return Err(BuildError::new("beta", "must be at least `alpha`"));
        }
        Ok(())
    }
}

impl Algorithm for Vegas {
    fn update(&mut self, limit: usize, window: &Window) -> usize {
        let lg = (limit.max(1).ilog10() as usize).max(1);
        if window.drops > 0 {
            return limit.saturating_sub(lg);
        }
        let mean = window.mean_latency.as_secs_f64();
        if mean <= 0.0 {
            return limit;
        }
        let ratio = window.gradient().min(1.0);
        let estimate = limit as f64 * (1.0 - ratio);
        let queue = estimate.ceil() as usize;
        // A small limit aims for fewer queued requests: at most a third of
        // itself, so that it settles within 1.5 × K.
        let beta = self.beta.saturating_mul(lg).min(limit / 3).max(1);
        let alpha = self.alpha.saturating_mul(lg).min(beta);
        // Growth never passes 1.5 × what the downstream is estimated to
        // take at once (the limit less its queue). From the estimate itself,
        // not its ceiling: at a small limit, jitter of a thousandth over the
        // baseline rounds up to a queue of 1, and 1.5 × (3 − 1) would hold
        // a limit of 3 for good.
        let ceiling = (((limit as f64 - estimate) * 1.5) as usize).max(limit);
        if queue == 0 {
            // Nothing queues: grow fast, by up to half the limit; by half
            // that unless the mean plus its standard error is at the
            // baseline too (a window fast by chance: at a few dozen samples
            // of a bimodal mix, with a limit settled over its queue, the
            // full step took it past 1.5 K a window in six).
            let step = self.beta.saturating_mul(lg).min(limit / 2).max(lg);
            let sure = window.gradient_past_error() >= 1.0;
            let step = if sure { step } else { (step / 2).max(lg) };
            (limit + step).min(ceiling.max(limit + 1))
        } else if queue <= lg || queue < alpha {
            (limit + lg).min(ceiling)
        } else if queue > beta {
            // The excess queue, at least `lg` (Netflix takes `lg` a window,
            // whatever the queue), at most a quarter of the limit: one slow
            // window (a pause, an outlier) cannot halve it.
            limit.saturating_sub(lg.max((queue - beta).min(limit / 4)))
        } else {
            limit
        }
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_small_limit_grows_through_jitter_just_over_the_baseline() {
        // A lasting step to 10 ms, 8 clients, no queue: the mean a hair
        // over the baseline (a loaded machine's sleeps).
        let mut vegas = Vegas::default();
        let window = Window::new(50, Duration::from_micros(10_072), 3)
            .with_baseline(Duration::from_micros(10_061));
        assert_eq!(vegas.update(3, &window), 4);
    }

    #[test]
    fn parameters_the_check_accepts_never_overflow() {
        let mut vegas = Vegas::default().alpha(1).beta(usize::MAX / 2 + 1);
        assert!(vegas.check().is_ok());
        let ms = Duration::from_millis;
        for mean in [5, 10, 20, 200] {
            let window = Window::new(50, ms(mean), 200).with_baseline(ms(10));
            let next = vegas.update(200, &window);
            assert!(next > 0);
        }
    }
}
