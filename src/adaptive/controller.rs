//! [`Controller`]: the decisions of an adaptive limit, window by window,
//! with no clock and no atomics of its own, so that a test can drive it
//! through virtual time.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use super::baseline::{Baseline, Observed};
use super::probe::{Probe, Step};
use super::{Adaptive, AdaptiveStats, Algorithm, Window};
use crate::admission::SampleTotals;

/// An adaptive limit's state between windows.
pub(crate) struct Controller {
    algorithm: Box<dyn Algorithm>,
    pub(super) min_limit: usize,
    pub(super) max_limit: usize,
    min_samples: u64,
    /// [`Adaptive::drop_after`].
    drop_after: f64,
    /// A window too thin to decide on, carried into the next.
    pending: SampleTotals,
    pending_refused: u64,
    baseline: Baseline,
    probe: Probe,
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
            drop_after: adaptive.drop_after,
            pending: SampleTotals::default(),
            pending_refused: 0,
            baseline: Baseline::default(),
            probe: Probe::new(adaptive.probe_every),
            stats: AdaptiveStats {
                limit: initial,
                baseline: Duration::ZERO,
                latency: Duration::ZERO,
                windows: 0,
                samples: 0,
                increases: 0,
                decreases: 0,
                probes: 0,
                probing: false,
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
        let observed = Observed::of(&totals);
        match self.probe.step() {
            Step::None => {}
            // A probe's first window at half the limit: what was admitted
            // before it drained.
            Step::Drained => return None,
            Step::Measured(restore) => {
                // Its second: the baseline moves to its mean, and the limit
                // goes back.
                self.baseline.probed(observed);
                self.stats.baseline = Duration::from_nanos(self.baseline.mean);
                self.stats.latency = self.window(&totals, refused).mean_latency;
                self.stats.probes += 1;
                let next = restore.clamp(self.min_limit, self.max_limit);
                self.stats.limit = next;
                return (next != limit).then_some(next);
            }
        }
        if self
            .baseline
            .before(observed, limit, refused > 0, limit <= self.min_limit)
        {
            self.probe.relearnt();
        }
        let window = self.window(&totals, refused);
        self.stats.latency = window.mean_latency;

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
        self.baseline
            .after(observed, bound, refused > 0, limit, next);
        self.stats.baseline = Duration::from_nanos(self.baseline.mean);
        self.stats.limit = next;
        match next.cmp(&limit) {
            std::cmp::Ordering::Greater => self.stats.increases += 1,
            std::cmp::Ordering::Less => self.stats.decreases += 1,
            std::cmp::Ordering::Equal => {}
        }
        if let Some(half) = self.probe.start(limit, next, self.min_limit, !idle) {
            return Some(half);
        }
        (next != limit).then_some(next)
    }

    /// The window the algorithm sees, with the baseline as it stands.
    fn window(&self, totals: &SampleTotals, refused: u64) -> Window {
        let (min, mean) = match totals.sum_nanos.checked_div(totals.samples) {
            None => (Duration::ZERO, Duration::ZERO),
            Some(mean) => {
                let min = match totals.min_nanos {
                    u64::MAX => mean, // every sample censored
                    min => min,
                };
                (Duration::from_nanos(min), Duration::from_nanos(mean))
            }
        };
        Window {
            samples: totals.samples,
            drops: totals.drops,
            min_latency: min,
            mean_latency: mean,
            max_latency: Duration::from_nanos(totals.max_nanos),
            baseline: Duration::from_nanos(self.baseline.mean),
            max_in_flight: usize::try_from(totals.peak).unwrap_or(usize::MAX),
            refused,
        }
    }

    /// How long a cancelled permit may be held before it counts as a
    /// drop, in nanoseconds: `u64::MAX` before the first window.
    pub(crate) fn drop_after_nanos(&self) -> u64 {
        match self.baseline.mean {
            0 => u64::MAX,
            baseline => (baseline as f64 * self.drop_after) as u64,
        }
    }

    /// The limit a probe under way will give back, if one is.
    #[cfg(all(test, not(sidejob_loom)))]
    pub(super) fn probing(&self) -> Option<usize> {
        self.probe.restoring()
    }

    /// The figures so far.
    pub(crate) fn stats(&self) -> AdaptiveStats {
        AdaptiveStats {
            probing: self.probe.under_way(),
            ..self.stats
        }
    }
}
