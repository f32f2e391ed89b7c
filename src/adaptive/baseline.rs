//! [`Baseline`]: what an adaptive limit takes for the downstream's latency
//! with no queue, learnt from the windows.
//!
//! Two references, each compared with its like, so that neither jitter nor
//! a steady mix of fast and slow requests reads as a queue:
//!
//! * the *mean* reference follows the windows' mean latency (of the calls
//!   that answered: a cancelled call's hold is only a lower bound). A mix
//!   of 1 ms and 20 ms requests has a mean near 10.5 ms in every window,
//!   so its reference is near 10.5 ms, not 1 ms.
//! * the *min* reference follows the windows' shortest latency. A queue
//!   delays every request, the fastest too, so the window's minimum rises
//!   with it even where the mean was never seen unqueued (clients that
//!   queued downstream from the first window on).
//!
//! Each starts at the first window's figure and falls half the way to a
//! lower one each window: a faster downstream is found within a few
//! windows, and one window fast by chance moves it only half way. It rises
//! a 32nd of the way to a higher one only from a window the limit did not
//! bound and the rule did not lower: a queue the limit lets build, or
//! one the rule is shedding, cannot pull it up. At the minimum limit, where
//! nothing of ours can queue, each takes the window's figure whole: a
//! downstream that got slower for good (the limit sinks to its minimum) is
//! re-learnt there.

use crate::admission::SampleTotals;

/// The rise toward a higher window figure, as a shift: a 32nd of the gap
/// a window, slow enough that noise and a queue of the application's own
/// (which a limit above its demand does not bound) pull it up little
/// before the rule has shed it.
const RISE_SHIFT: u32 = 5;
/// The fall toward a lower window figure, as a shift: half the gap a
/// window.
const FALL_SHIFT: u32 = 1;

/// The two references, in nanoseconds; 0 until the first window that has
/// an answered call.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Baseline {
    pub(super) mean: u64,
    pub(super) min: u64,
}

/// A window's figures the references follow: the mean and the minimum of
/// its answered calls, if it had any.
#[derive(Debug, Clone, Copy)]
pub(super) struct Observed {
    mean: u64,
    min: u64,
}

impl Observed {
    /// The figures of `totals`, or `None` when every sample was censored.
    pub(super) fn of(totals: &SampleTotals) -> Option<Observed> {
        let answered = totals.samples - totals.censored;
        let answered_nanos = totals.sum_nanos.saturating_sub(totals.censored_nanos);
        let mean = answered_nanos.checked_div(answered)?;
        Some(Observed {
            mean: mean.max(1),
            min: totals.min_nanos.clamp(1, mean.max(1)),
        })
    }
}

impl Baseline {
    /// Before the rule decides: the first window sets the references, a
    /// window at the minimum limit sets them whole, and a lower figure
    /// pulls them down.
    pub(super) fn before(&mut self, observed: Option<Observed>, at_min: bool) {
        let Some(observed) = observed else { return };
        if self.mean == 0 || at_min {
            *self = Baseline {
                mean: observed.mean,
                min: observed.min,
            };
            return;
        }
        fall(&mut self.mean, observed.mean);
        fall(&mut self.min, observed.min);
    }

    /// After the rule decided: a window the limit did not bound and the
    /// rule did not lower pulls the references up.
    pub(super) fn after(&mut self, observed: Option<Observed>, bound: bool, lowered: bool) {
        let Some(observed) = observed else { return };
        if bound || lowered || self.mean == 0 {
            return;
        }
        rise(&mut self.mean, observed.mean);
        rise(&mut self.min, observed.min);
    }
}

fn fall(reference: &mut u64, seen: u64) {
    if seen < *reference {
        *reference -= (*reference - seen) >> FALL_SHIFT;
    }
}

fn rise(reference: &mut u64, seen: u64) {
    if seen > *reference {
        *reference += (seen - *reference) >> RISE_SHIFT;
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    fn seen(mean: u64, min: u64) -> Option<Observed> {
        Some(Observed { mean, min })
    }

    #[test]
    fn the_first_window_sets_both_and_lower_windows_pull_them_half_way() {
        let mut baseline = Baseline::default();
        baseline.before(seen(1000, 100), false);
        assert_eq!(
            baseline,
            Baseline {
                mean: 1000,
                min: 100
            }
        );
        baseline.before(seen(600, 50), false);
        assert_eq!(baseline, Baseline { mean: 800, min: 75 });
    }

    #[test]
    fn only_an_unbound_window_the_rule_did_not_lower_pulls_them_up() {
        let mut baseline = Baseline { mean: 800, min: 80 };
        baseline.after(seen(1600, 160), true, false);
        baseline.after(seen(1600, 160), false, true);
        assert_eq!(baseline, Baseline { mean: 800, min: 80 });
        baseline.after(seen(1600, 160), false, false);
        assert_eq!(baseline, Baseline { mean: 825, min: 82 });
    }

    #[test]
    fn the_minimum_limit_relearns_them_whole_and_censored_windows_move_nothing() {
        let mut baseline = Baseline { mean: 800, min: 80 };
        baseline.before(seen(8000, 4000), true);
        assert_eq!(
            baseline,
            Baseline {
                mean: 8000,
                min: 4000
            }
        );
        let censored = SampleTotals {
            samples: 5,
            sum_nanos: 500,
            censored: 5,
            censored_nanos: 500,
            ..SampleTotals::default()
        };
        assert!(Observed::of(&censored).is_none());
        baseline.before(Observed::of(&censored), true);
        assert_eq!(
            baseline,
            Baseline {
                mean: 8000,
                min: 4000
            }
        );
    }
}
