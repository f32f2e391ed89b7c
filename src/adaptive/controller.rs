//! [`Controller`]: the decisions of an adaptive limit, window by window,
//! with no clock and no atomics of its own, so that a test can drive it
//! through virtual time.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use super::{Adaptive, AdaptiveStats, Algorithm, Window};
use crate::admission::SampleTotals;

/// The rise of the baseline toward a higher window minimum, as a shift: an
/// eighth of the gap a window.
const BASELINE_RISE_SHIFT: u32 = 3;

/// An adaptive limit's state between windows.
pub(crate) struct Controller {
    algorithm: Box<dyn Algorithm>,
    pub(super) min_limit: usize,
    pub(super) max_limit: usize,
    min_samples: u64,
    /// A window too thin to decide on, carried into the next.
    pending: SampleTotals,
    pending_refused: u64,
    /// Nanoseconds; 0 until the first window.
    baseline: u64,
    stats: AdaptiveStats,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// A controller for `adaptive` (already checked), starting at `initial`.
    pub(crate) fn new(adaptive: Adaptive, initial: usize) -> Controller {
        Controller {
            algorithm: adaptive.algorithm,
            min_limit: adaptive.min_limit,
            max_limit: adaptive.max_limit,
            min_samples: adaptive.min_samples,
            pending: SampleTotals::default(),
            pending_refused: 0,
            baseline: 0,
            stats: AdaptiveStats {
                limit: initial,
                baseline: Duration::ZERO,
                latency: Duration::ZERO,
                windows: 0,
                samples: 0,
                increases: 0,
                decreases: 0,
                drops: 0,
                algorithm: adaptive.name,
            },
        }
    }

    /// Closes a window at limit `limit`, with the samples gathered and the
    /// acquires refused since the last: the new limit, or `None` when the
    /// window was too thin to decide on (it is carried over) or the limit
    /// stays.
    pub(crate) fn close(
        &mut self,
        limit: usize,
        gathered: SampleTotals,
        refused: u64,
    ) -> Option<usize> {
        let totals = self.pending.with_window(gathered);
        let refused = self.pending_refused + refused;
        if totals.samples + totals.drops < self.min_samples {
            self.pending = totals;
            self.pending_refused = refused;
            return None;
        }
        self.pending = SampleTotals::default();
        self.pending_refused = 0;
        self.stats.windows += 1;
        self.stats.drops += totals.drops;
        self.stats.samples += totals.samples;
        let bound = refused > 0 || totals.peak >= limit as u64;
        let window = self.window(limit, &totals, refused, bound);
        self.stats.latency = window.mean_latency;
        self.stats.baseline = window.baseline;

        let proposed = catch_unwind(AssertUnwindSafe(|| self.algorithm.update(limit, &window)))
            .unwrap_or(limit);
        // Growth only where the application asked for the limit, and never
        // after a drop.
        let idle = totals.peak * 2 < limit as u64 && refused == 0;
        let proposed = if proposed > limit && (totals.drops > 0 || idle) {
            limit
        } else {
            proposed
        };
        let next = proposed.clamp(self.min_limit, self.max_limit);
        self.stats.limit = next;
        match next.cmp(&limit) {
            std::cmp::Ordering::Greater => self.stats.increases += 1,
            std::cmp::Ordering::Less => self.stats.decreases += 1,
            std::cmp::Ordering::Equal => return None,
        }
        Some(next)
    }

    /// The window the algorithm sees; moves the baseline first.
    fn window(&mut self, limit: usize, totals: &SampleTotals, refused: u64, bound: bool) -> Window {
        let (min, mean) = match totals.sum_nanos.checked_div(totals.samples) {
            None => (Duration::ZERO, Duration::ZERO),
            Some(mean) => {
                if self.baseline == 0 || totals.min_nanos < self.baseline {
                    self.baseline = totals.min_nanos;
                } else if !bound || limit <= self.min_limit {
                    self.baseline += (totals.min_nanos - self.baseline) >> BASELINE_RISE_SHIFT;
                }
                (
                    Duration::from_nanos(totals.min_nanos),
                    Duration::from_nanos(mean),
                )
            }
        };
        Window {
            samples: totals.samples,
            drops: totals.drops,
            min_latency: min,
            mean_latency: mean,
            baseline: Duration::from_nanos(self.baseline),
            max_in_flight: usize::try_from(totals.peak).unwrap_or(usize::MAX),
            refused,
        }
    }

    /// The figures so far.
    pub(crate) fn stats(&self) -> AdaptiveStats {
        self.stats
    }
}
