//! [`Baseline`]: what an adaptive limit takes for the downstream's mean
//! latency with no queue, learnt from the windows.
//!
//! It follows the windows' *mean* latency (of the calls that answered: a
//! cancelled call's hold is only a lower bound), never single samples, and
//! a window's mean is compared with it: like with like, so neither jitter,
//! nor a steady mix of fast and slow requests, nor a long tail reads as a
//! queue. A mix of 1 ms and 20 ms requests has a mean near 10.5 ms in
//! every window, so its baseline is near 10.5 ms, not 1 ms (the shortest
//! sample, which Netflix's rules and ours compared with the mean, read such
//! a mix as a queue and collapsed the limit). The shortest sample is no
//! reference either: of a long-tailed latency it is the mean over the
//! number of samples, and as noisy.
//!
//! It starts at the first window's mean and moves toward a lower one each
//! window by half the gap, weighted by the window's samples (a full
//! weight from a few hundred on): a faster downstream is found within a few
//! windows, and one window fast by chance, or a thin one, moves it little.
//! It rises toward a higher one by a 32nd of the gap, weighted the same,
//! only from a window the limit did not bound and the rule did not lower:
//! a queue the limit lets build, or one the rule is shedding, cannot pull
//! it up. At the minimum limit, where nothing of ours can queue, it takes
//! the window's mean whole: a downstream that got slower for good (the
//! limit sinks to its minimum) is re-learnt there.

use crate::admission::SampleTotals;

/// The samples of a window whose figure moves the baseline with its full
/// weight: what the governor's stride aims for.
const FULL_WEIGHT: u64 = 256;
/// The rise toward a higher window figure, as a shift: a 32nd of the gap
/// a window, slow enough that noise and a queue of the application's own
/// (which a limit above its demand does not bound) pull it up little
/// before the rule has shed it.
const RISE_SHIFT: u32 = 5;
/// The fall toward a lower window figure, as a shift: half the gap a
/// window.
const FALL_SHIFT: u32 = 1;

/// The baseline, in nanoseconds; 0 until the first window that has an
/// answered call.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Baseline {
    pub(super) mean: u64,
}

/// What of a window the baseline follows: the mean of its answered calls,
/// and how many there were.
#[derive(Debug, Clone, Copy)]
pub(super) struct Observed {
    mean: u64,
    answered: u64,
}

impl Observed {
    /// What of `totals` the baseline follows, or `None` when every sample
    /// was censored.
    pub(super) fn of(totals: &SampleTotals) -> Option<Observed> {
        let answered = totals.samples - totals.censored;
        let answered_nanos = totals.sum_nanos.saturating_sub(totals.censored_nanos);
        let mean = answered_nanos.checked_div(answered)?;
        Some(Observed {
            mean: mean.max(1),
            answered,
        })
    }
}

impl Baseline {
    /// Before the rule decides: the first window sets the baseline, a
    /// window at the minimum limit sets it whole, and a lower mean pulls it
    /// down.
    pub(super) fn before(&mut self, observed: Option<Observed>, at_min: bool) {
        let Some(observed) = observed else { return };
        if self.mean == 0 || at_min {
            self.mean = observed.mean;
        } else if observed.mean < self.mean {
            self.mean -= observed.weigh(self.mean - observed.mean, FALL_SHIFT);
        }
    }

    /// A probe's window, at half the limit: the baseline moves half way to
    /// its mean, up or down, weighted by its samples. Probe after probe it
    /// finds the mean with no queue, with less of one window's noise than
    /// taking each whole.
    pub(super) fn probed(&mut self, observed: Option<Observed>) {
        let Some(observed) = observed else { return };
        if self.mean == 0 {
            self.mean = observed.mean;
        } else if observed.mean < self.mean {
            self.mean -= observed.weigh(self.mean - observed.mean, FALL_SHIFT);
        } else {
            self.mean += observed.weigh(observed.mean - self.mean, FALL_SHIFT);
        }
    }

    /// After the rule decided: a window the limit did not bound and the
    /// rule did not lower pulls the baseline up.
    pub(super) fn after(&mut self, observed: Option<Observed>, bound: bool, lowered: bool) {
        let Some(observed) = observed else { return };
        if bound || lowered || self.mean == 0 || observed.mean <= self.mean {
            return;
        }
        self.mean += observed.weigh(observed.mean - self.mean, RISE_SHIFT);
    }
}

impl Observed {
    /// `gap` over 2^`shift`, weighted by the window's answered calls.
    fn weigh(&self, gap: u64, shift: u32) -> u64 {
        let weight = self.answered.min(FULL_WEIGHT);
        ((u128::from(gap) * u128::from(weight)) >> shift) as u64 / FULL_WEIGHT
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    fn seen(mean: u64, answered: u64) -> Option<Observed> {
        Some(Observed { mean, answered })
    }

    #[test]
    fn the_first_window_sets_it_and_lower_means_pull_it_by_their_weight() {
        let mut baseline = Baseline::default();
        baseline.before(seen(1000, 10), false);
        assert_eq!(baseline.mean, 1000);
        baseline.before(seen(600, 256), false);
        assert_eq!(baseline.mean, 800); // half way
        baseline.before(seen(400, 64), false);
        assert_eq!(baseline.mean, 750); // a quarter of half way
    }

    #[test]
    fn only_an_unbound_window_the_rule_did_not_lower_pulls_it_up() {
        let mut baseline = Baseline { mean: 800 };
        baseline.after(seen(1600, 256), true, false);
        baseline.after(seen(1600, 256), false, true);
        assert_eq!(baseline.mean, 800);
        baseline.after(seen(1600, 256), false, false);
        assert_eq!(baseline.mean, 825);
    }

    #[test]
    fn the_minimum_limit_relearns_it_whole_and_censored_windows_move_nothing() {
        let mut baseline = Baseline { mean: 800 };
        baseline.before(seen(8000, 3), true);
        assert_eq!(baseline.mean, 8000);
        let censored = SampleTotals {
            samples: 5,
            sum_nanos: 500,
            censored: 5,
            censored_nanos: 500,
            ..SampleTotals::default()
        };
        assert!(Observed::of(&censored).is_none());
        baseline.before(Observed::of(&censored), true);
        assert_eq!(baseline.mean, 8000);
    }
}
