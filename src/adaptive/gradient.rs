//! [`Gradient`]: the limit follows the ratio of the baseline latency to the
//! window's, after Netflix's `Gradient2Limit`.

use super::{Algorithm, Window};
use crate::error::BuildError;

/// Growth aims at this part of the tolerance: `1 + AIM × (tolerance − 1)`
/// times the baseline. Half: the limit holds in the upper half of the
/// tolerance, where a window's noise seldom reaches either edge.
const AIM: f64 = 0.5;

/// The limit follows the latency gradient, after Netflix
/// concurrency-limits' `Gradient2Limit`, with its reported flaws fixed.
///
/// Each window, `ratio = tolerance × gradient`, where the
/// [gradient](Window::gradient) is `baseline / mean latency`: the
/// controller's long-term reference of the mean latency over this
/// window's (see [`AdaptiveStats::baseline`](super::AdaptiveStats::baseline)),
/// as Gradient2 compares a long-term average with a short-term one. So
/// jitter, a steady mix of fast and slow requests and a long tail leave
/// the ratio near `tolerance`; only a queue (the mean rising with what is
/// in flight) brings it below 1.
///
/// * While the mean is below the middle of the tolerance
///   (`1 + ½ (tolerance − 1)` times the baseline, the aim) the limit grows by the
///   room left below that aim, `limit × (aim / mean − 1)` to the nearest
///   request, at most `queue_size` a window, while the mean is at the
///   baseline or below (no queue at all); else by one a window at most,
///   and one at least while within the middle of the tolerance
///   (`ratio ≥ 1 + (tolerance − 1) / 2`), a probe, so a limit of 1 climbs
///   back. That slot is read with the mean one standard error higher
///   ([`Window::gradient_past_error`]): a window fast by chance is no
///   room, and noise near the tolerance none either (Netflix adds
///   `queue_size` always, and the limit grows without bound where the
///   ratio sits just under 1, PR #134). Between the aim and the tolerance
///   it holds.
/// * While `ratio < 1` the limit moves `smoothing` of the way to
///   `limit × max(ratio, 0.5)`: a window cuts at most a tenth of it by
///   default, so one slow window (a pause, an outlier) cannot halve it. The
///   limit is kept as a fraction between windows, as Netflix's estimate
///   is, and rounded: a small limit comes down over a few windows of a
///   queue, not at the first.
/// * A window with drops multiplies the limit by `backoff` at once
///   (Netflix's Gradient2 ignores drops, #176).
///
/// It settles where the mean latency is between the aim and the
/// tolerance: with a downstream that queues beyond `K` requests, between
/// `1.25 K` and `1.5 K` by default, so noise on either side of it stays
/// within `[K, 1.5 K]`.
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
/// assert_eq!(gradient.update(20, &calm), 24); // room for 5 more: + queue size 4
/// let nearer = Window::new(50, ms(12), 20).with_baseline(ms(10));
/// assert_eq!(gradient.update(20, &nearer), 21); // at the aim: + 1, a probe
/// // The same mean, give or take 2 ms by chance: it may be 14 ms, no room.
/// assert_eq!(gradient.update(20, &nearer.with_mean_error(ms(2))), 20);
/// let near = Window::new(50, ms(14), 20).with_baseline(ms(10));
/// assert_eq!(gradient.update(20, &near), 20); // past the aim, within tolerance: holds
/// assert_eq!(gradient.update(1, &Window::new(50, ms(11), 1).with_baseline(ms(10))), 2); // a probe
/// let slower = Window::new(50, ms(20), 20).with_baseline(ms(10)); // ratio 0.75
/// assert_eq!(gradient.update(20, &slower), 19); // 20 - 0.2 × 5
/// let queued = Window::new(50, ms(60), 20).with_baseline(ms(10)); // ratio 0.25
/// assert_eq!(gradient.update(20, &queued), 18); // a tenth at most, never halved
/// assert_eq!(gradient.update(18, &calm.with_drops(1)), 16); // 18 × 0.9
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Gradient {
    tolerance: f64,
    smoothing: f64,
    queue_size: usize,
    backoff: f64,
    /// The limit as a fraction, between windows; 0 until the first.
    #[cfg_attr(feature = "serde", serde(skip))]
    estimate: f64,
}

impl Default for Gradient {
    fn default() -> Self {
        Gradient {
            tolerance: 1.5,
            smoothing: 0.2,
            queue_size: 4,
            backoff: 0.9,
            estimate: 0.0,
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
        let current = limit as f64;
        // The limit kept as a fraction, unless it was moved elsewhere (the
        // controller's clamp, a user's resize).
        if self.estimate.round() as usize != limit {
            self.estimate = current;
        }
        if window.drops > 0 {
            self.estimate = (current * self.backoff).floor();
            return self.estimate as usize;
        }
        let mean = window.mean_latency.as_secs_f64();
        if mean <= 0.0 {
            return limit;
        }
        let gradient = window.gradient();
        let ratio = self.tolerance * gradient;
        if ratio >= 1.0 {
            // Within tolerance. Grow by the room below the aim (the middle
            // of the tolerance), to the nearest request, the queue
            // size at most, only while the mean is at the baseline or
            // below; else by one a window at most, one at least within the
            // middle of the tolerance (a probe). Between the aim and the
            // tolerance, hold: the limit settles there, not on the edge
            // noise crosses.
            let aim = 1.0 + AIM * (self.tolerance - 1.0);
            let room = |gradient: f64| (current * (aim * gradient - 1.0)).round().max(0.0) as usize;
            // Past the baseline, the mean read as high as chance may have
            // made it (plus its standard error): a window fast by chance is
            // no room. At a few dozen samples of a bimodal mix, read
            // plainly, it took the limit over 1.5 K a window in four. Not
            // at the baseline or below: there nothing queues, and reading
            // it so slowed the climb after the downstream's concurrency
            // rose (the example's goodput fell in 3 runs of 4).
            let cautious = window.gradient_past_error();
            let growth = if gradient >= 1.0 {
                // No slower than the baseline: no queue at all.
                room(gradient).clamp(1, self.queue_size.max(1))
            } else if self.tolerance * cautious >= 1.0 + (self.tolerance - 1.0) / 2.0 {
                1 // within the middle of the tolerance: a probe
            } else {
                room(cautious).min(1) // near the tolerance, a slot a window
            };
            if growth > 0 {
                self.estimate = (limit + growth) as f64;
            }
            return limit + growth;
        }
        let gradient = ratio.max(0.5);
        self.estimate += self.smoothing * (self.estimate * gradient - self.estimate);
        self.estimate.round() as usize
    }
}
