//! [`Gradient`]: the limit follows the ratio of the baseline latency to the
//! window's, after Netflix's `Gradient2Limit`.

use super::{Algorithm, Window};
use crate::error::BuildError;

/// The limit follows the latency gradient, after Netflix
/// concurrency-limits' `Gradient2Limit`, with its reported flaws fixed.
///
/// Each window, `g = clamp(tolerance × baseline / mean latency, 0.5, 1)`
/// While the latency is within tolerance of the baseline (`g` would be
/// above 1) the limit grows by `queue_size`, but no further than the room
/// left below the tolerance (`limit × (g − 1)`, to the nearest request);
/// otherwise it moves `smoothing` of the way to `limit × g`, rounded down,
/// and where `g` is at its floor of 0.5 (the latency is twice the
/// tolerance or worse: a queue, not noise) it halves at once. So:
///
/// * the growth term is capped: at most `queue_size` a window, and none
///   past the tolerance (Netflix adds it always, and the limit grows without
///   bound where `g` sits just under 1, PR #134);
/// * drops are never ignored (Netflix's Gradient2 ignores them, #176): a
///   window with a drop multiplies the limit by `backoff`, unsmoothed;
/// * the baseline is the controller's, which falls at once and rises only
///   slowly (see [`AdaptiveStats::baseline`](super::AdaptiveStats::baseline)),
///   where Netflix's long-term average follows the load up (#165).
///
/// It settles where the mean latency is `tolerance` times the baseline:
/// with a downstream that queues beyond `K` requests, at about
/// `tolerance × K`.
///
/// Defaults, Netflix's: tolerance 1.5, smoothing 0.2, queue size 4; backoff 0.9.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use sidejob::adaptive::{Algorithm, Gradient, Window};
///
/// let ms = Duration::from_millis;
/// let mut gradient = Gradient::default();
/// let calm = Window::new(50, ms(10), 20).with_baseline(ms(10));
/// assert_eq!(gradient.update(20, &calm), 24); // room for 10 more: + queue size 4
/// let near = Window::new(50, ms(14), 20).with_baseline(ms(10));
/// assert_eq!(gradient.update(20, &near), 21); // room for 1.4: + 1
/// let slower = Window::new(50, ms(20), 20).with_baseline(ms(10)); // g = 0.75
/// assert_eq!(gradient.update(20, &slower), 19); // 20 - 0.2 × 5
/// let queued = Window::new(50, ms(30), 20).with_baseline(ms(10)); // g = 0.5
/// assert_eq!(gradient.update(20, &queued), 10); // halved at once
/// assert_eq!(gradient.update(20, &calm.with_drops(1)), 18);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Gradient {
    tolerance: f64,
    smoothing: f64,
    queue_size: usize,
    backoff: f64,
}

impl Default for Gradient {
    fn default() -> Self {
        Gradient {
            tolerance: 1.5,
            smoothing: 0.2,
            queue_size: 4,
            backoff: 0.9,
        }
    }
}

impl Gradient {
    /// How much slower than the baseline a window may be before the limit
    /// comes down, at least 1. Default 1.5.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::adaptive::{Adaptive, Gradient};
    /// let adaptive = Adaptive::from(Gradient::default().tolerance(2.0));
    /// # let _ = adaptive;
    /// ```
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// How far the limit moves to its target each window, in (0, 1].
    /// Default 0.2.
    ///
    /// # Examples
    ///
    /// ```
    /// let gradient = sidejob::adaptive::Gradient::default().smoothing(1.0);
    /// # let _ = gradient;
    /// ```
    pub fn smoothing(mut self, smoothing: f64) -> Self {
        self.smoothing = smoothing;
        self
    }

    /// The growth term: how many requests the target adds while the latency
    /// is within tolerance. Default 4.
    ///
    /// # Examples
    ///
    /// ```
    /// let gradient = sidejob::adaptive::Gradient::default().queue_size(8);
    /// # let _ = gradient;
    /// ```
    pub fn queue_size(mut self, queue_size: usize) -> Self {
        self.queue_size = queue_size;
        self
    }

    /// The factor a window with drops multiplies the limit by, in [0.5, 1).
    /// Default 0.9.
    ///
    /// # Examples
    ///
    /// ```
    /// let gradient = sidejob::adaptive::Gradient::default().backoff(0.75);
    /// # let _ = gradient;
    /// ```
    pub fn backoff(mut self, backoff: f64) -> Self {
        self.backoff = backoff;
        self
    }

    pub(super) fn check(&self) -> Result<(), BuildError> {
        if !(self.tolerance >= 1.0 && self.tolerance.is_finite()) {
            return Err(BuildError::new("tolerance", "must be at least 1"));
        }
        if !(self.smoothing > 0.0 && self.smoothing <= 1.0) {
            return Err(BuildError::new("smoothing", "must be in (0, 1]"));
        }
        if !(0.5..1.0).contains(&self.backoff) {
            return Err(BuildError::new("backoff", "must be in [0.5, 1)"));
        }
        Ok(())
    }
}

impl Algorithm for Gradient {
    fn update(&mut self, limit: usize, window: &Window) -> usize {
        if window.drops > 0 {
            return (limit as f64 * self.backoff) as usize;
        }
        let mean = window.mean_latency.as_secs_f64();
        if mean <= 0.0 {
            return limit;
        }
        let current = limit as f64;
        let ratio = self.tolerance * window.baseline.as_secs_f64() / mean;
        if ratio > 1.0 {
            // Room below the tolerance: grow by the queue size, capped by
            // the room itself (to the nearest request), so growth stops
            // where the latency reaches the tolerance.
            let room = (current * (ratio - 1.0)).round() as usize;
            return limit + room.min(self.queue_size);
        }
        if ratio <= 0.5 {
            // Twice the tolerance or worse: a queue, not noise. Halve at
            // once, as TCP does on congestion.
            return (current * 0.5).floor() as usize;
        }
        let next = current + self.smoothing * (current * ratio - current);
        next.floor() as usize
    }
}
