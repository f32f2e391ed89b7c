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
//! window by half of the gap that lies past the window's standard error
//! (the spread of its answered holds over the square root of their count:
//! how far chance alone moves its mean), weighted by the window's samples
//! (a full weight from a few hundred on): a faster downstream is found
//! within a few windows, and one window fast by chance, or a thin one,
//! moves it little. Without the standard error every window low by chance
//! pulled it down while, under lasting overload, none may pull it up: for a
//! mix of 2 and 38 ms requests at a few dozen samples a window it sank a
//! sixth below the mean with no queue, and the rules read that noise as a
//! queue and held the limit under the downstream's concurrency.
//! It rises toward a higher one by a 32nd of the gap, weighted the same,
//! only from a window the limit did not bound and the rule did not lower:
//! a queue the limit lets build, or one the rule is shedding, cannot pull
//! it up. A downstream that got slower for good is re-learnt whole: once a
//! run of decreases has halved the limit while the application asked for
//! more and, two windows in a row, the mean stayed well above what shedding
//! a queue of ours would have left (the most latency a slot carried in
//! the run, times the limit, or the baseline), and at the minimum limit, where nothing of
//! ours can queue; a probe (`probe.rs`) at half the limit moves it down or
//! up alike: half of what lies past that window's standard error, and a
//! quarter of the way at least, so the probes average out a baseline begun
//! in a window low or high by chance (an early probe's mean more than an
//! eighth lower past twice its error: all the way there).

use crate::admission::{SampleTotals, SQUARE_UNIT_NANOS};

/// The samples of a window whose figure moves the baseline with its full
/// weight: what the governor's stride aims for.
const FULL_WEIGHT: u64 = 256;
/// The samples of a probe's window whose lower mean moves the baseline in
/// full. Weighted as a chance window is (in full from 256), a probe at a
/// few hundred requests a second (a few dozen samples a window) moved it
/// a few per cent of the gap, and left a baseline learnt from a queue in
/// place for many probes. Sixteen samples put the mean within a quarter
/// of one sample's spread.
const PROBE_FULL_WEIGHT: u64 = 16;
/// The rise toward a higher window figure, as a shift: a 32nd of the gap
/// a window, slow enough that noise and a queue of the application's own
/// (which a limit above its demand does not bound) pull it up little
/// before the rule has shed it.
const RISE_SHIFT: u32 = 5;
/// The fall toward a lower window figure, as a shift: half the gap a
/// window.
const FALL_SHIFT: u32 = 1;
/// A probe's move toward a mean within its standard error, as a shift: a
/// quarter of the gap, so the baseline averages the probes (its own spread
/// about 0.38 of one probe's standard error) with no bias either way.
const AVERAGE_SHIFT: u32 = 2;

/// The baseline, in nanoseconds; 0 until the first window that has an
/// answered call.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Baseline {
    pub(super) mean: u64,
    /// The run of decreases under way (no increase since), begun in a
    /// window the application was refused in (so the limit was what was
    /// in flight), if one is.
    run: Option<Run>,
    /// The mean of the last window, if it showed that the run's shedding
    /// did not help (two in a row re-learn the baseline, the lesser mean).
    unhelped: Option<u64>,
}

/// A run of decreases: the limit it began at, and the most latency a slot
/// of the limit carried in its first quarter (the mean over all samples,
/// timed out ones included, over the limit), in nanoseconds: what a queue
/// of ours costs a slot, so what shedding it would leave at a lower limit.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Run {
    from: usize,
    per_slot: f64,
}

impl Eq for Run {}

/// What of a window the baseline follows: the mean of its answered calls
/// and how many there were, and the mean of all its samples, censored
/// ones included (what the rule sees), and the standard error of the
/// answered mean: how far chance alone moves it (the spread of the holds
/// over the square root of their count; 0 when the spread is unknown).
#[derive(Debug, Clone, Copy)]
pub(super) struct Observed {
    mean: u64,
    answered: u64,
    all: u64,
    error: u64,
}

impl Observed {
    /// The standard error of the answered mean, in nanoseconds.
    pub(super) fn error(&self) -> u64 {
        self.error
    }

    /// What of `totals` the baseline follows, or `None` when every sample
    /// was censored.
    pub(super) fn of(totals: &SampleTotals) -> Option<Observed> {
        // A window decided on its drops alone may have no samples at all.
        let all = totals.sum_nanos.checked_div(totals.samples)?;
        let answered = totals.samples.saturating_sub(totals.censored);
        let answered_nanos = totals.sum_nanos.saturating_sub(totals.censored_nanos);
        let mean = answered_nanos.checked_div(answered)?;
        Some(Observed {
            mean: mean.max(1),
            answered,
            all: all.max(1),
            error: standard_error(answered, answered_nanos, totals.sum_squares),
        })
    }
}

/// The standard error of the mean of `answered` holds (at least one)
/// summing to `nanos`, whose squares sum to `squares` (in units of
/// `SQUARE_UNIT_NANOS`), in nanoseconds: 0 with no squares.
fn standard_error(answered: u64, nanos: u64, squares: u64) -> u64 {
    // A count and a sum that a window's close split from their squares
    // may make the variance come out below zero: none then.
    let unit = (SQUARE_UNIT_NANOS * SQUARE_UNIT_NANOS) as f64;
    let n = answered as f64;
    let mean = nanos as f64 / n;
    let variance = squares as f64 * unit / n - mean * mean;
    (variance.max(0.0) / n).sqrt() as u64
}

impl Baseline {
    /// Before the rule decides on a window at `limit`, in which the
    /// application was refused (`pressed`) or not: the first window sets
    /// the baseline, a window at the minimum limit sets it whole, and so
    /// does one that shows shedding did not help (below); a lower mean
    /// pulls it down. Whether it was learnt whole from a window that
    /// showed it (not the first, which only begins it).
    pub(super) fn before(
        &mut self,
        observed: Option<Observed>,
        limit: usize,
        pressed: bool,
        at_min: bool,
    ) -> bool {
        let Some(observed) = observed else {
            return false;
        };
        // A run of decreases has halved the limit while the application
        // asked for more (so what was in flight halved too), and two
        // windows in a row the mean is still well above what shedding a
        // queue of ours would have left: the most a slot carried early in
        // the run, times the limit, or the baseline, whichever is more. So the
        // downstream got slower for good: learn it now, not once the limit
        // has sunk to its minimum. (A limit above what the application
        // asks sheds nothing, hence the refusals; one window's mean may be
        // high by chance, hence two, and a third above the prediction.)
        let baseline = self.mean;
        let unhelped = pressed
            && self.run.is_some_and(|run| {
                let left = (run.per_slot * limit as f64) as u64;
                // Past the window's chance spread too: a mean high by
                // chance two windows in a row is not a slower downstream.
                let high = observed.all.saturating_sub(observed.error);
                limit * 2 <= run.from && high * 10 >= left.max(baseline) * 13
            });
        let before = self.unhelped.take();
        let futile = unhelped && before.is_some();
        if unhelped {
            self.unhelped = Some(observed.mean);
        }
        if self.mean == 0 || at_min || futile {
            // The first window only begins the baseline: a limit started
            // above the downstream's concurrency fills it with a queue.
            let first = self.mean == 0;
            // Of two windows that showed it, the lesser mean: a baseline
            // too high would let a queue grow.
            self.mean = before.map_or(observed.mean, |before| before.min(observed.mean));
            self.run = None;
            self.unhelped = None;
            return !first;
        }
        // Only what lies past the window's chance spread: under lasting
        // overload no window pulls it up, so a fall by every window low by
        // chance would ratchet it down.
        let low = observed.mean + observed.error;
        if low < self.mean {
            self.mean -= observed.weigh(self.mean - low, FALL_SHIFT);
        }
        false
    }

    /// A probe's window, at half the limit: the one window that may pull
    /// the baseline up under lasting overload, so it moves it either way
    /// alike, in full from `PROBE_FULL_WEIGHT` samples on (a probe is a
    /// deliberate measure, and one at a few hundred requests a second would
    /// otherwise move it a few per cent): a quarter of the way to its mean,
    /// or half of what lies past the window's standard error where that is
    /// more. A probe whose mean is within its error of the baseline moves
    /// it a quarter of the way: the baseline averages the probes, so one
    /// begun in a window low or high by chance (a sixth either way at a few
    /// dozen samples of a bimodal mix) comes to the mean within a few
    /// probes; left alone within the error, it stayed up to one standard
    /// error off for good, and the rules read that as a queue or as room.
    ///
    /// Two lower means are taken whole, where they are lower for sure (the
    /// mean plus twice its standard error under the mark: once is passed
    /// by a probe in six by chance, and one taken whole set the baseline a
    /// third low): an `early` probe's under seven eighths of it, as the
    /// baseline may have begun in a queue (the first window's), which a
    /// baseline too high keeps; and any under two thirds of it. A probe at
    /// half a limit that still queues (just after the downstream's
    /// concurrency fell) pulls it toward that queue; the next, at a limit
    /// the rule has cut, pulls it back. A probe whose holds last over half
    /// a `window` may not have drained a queue of ours in its drain window:
    /// its higher mean moves it only as any window's does.
    ///
    /// Whether it moved by more than a sixteenth, either way: the next
    /// probe comes early, to check it. A baseline a probe left far off is
    /// so found within a few dozen windows; checked only every
    /// `probe_every` windows, one a third low held Gradient under a
    /// downstream's concurrency that had risen fourfold for over a hundred.
    pub(super) fn probed(&mut self, observed: Option<Observed>, early: bool, window: u64) -> bool {
        let Some(observed) = observed else {
            return false;
        };
        let was = self.mean;
        // A quarter of a gap, or half of what lies past the spread.
        let step =
            |gap: u64| (gap >> AVERAGE_SHIFT).max(gap.saturating_sub(observed.error) >> FALL_SHIFT);
        // Lower for sure: past twice the spread, for a whole take (one
        // standard error is passed by a window in six, and a probe low by
        // chance taken whole set the baseline a third low).
        let sure = observed.mean + 2 * observed.error;
        if self.mean == 0 || sure * 3 < self.mean * 2 {
            self.mean = observed.mean;
            self.run = None;
        } else if early && sure * 8 < self.mean * 7 {
            self.mean -= observed.weigh_as(self.mean - observed.mean, 0, PROBE_FULL_WEIGHT);
        } else if observed.mean <= self.mean {
            self.mean -= observed.weigh_as(step(self.mean - observed.mean), 0, PROBE_FULL_WEIGHT);
        } else if observed.mean.saturating_mul(2) > window {
            // Holds over half a window long: the drain window before did
            // not drain what the limit had queued, so this mean may hold a
            // queue of ours (taken as a fall is, it held Gradient over
            // 1.5 K after the example's tenfold step). Weighted as any
            // window.
            self.mean += observed.weigh(observed.mean - self.mean, FALL_SHIFT);
        } else {
            self.mean += observed.weigh_as(step(observed.mean - self.mean), 0, PROBE_FULL_WEIGHT);
        }
        self.mean.abs_diff(was) > was / 16
    }

    /// After the rule moved the limit from `limit` to `next`: a window the
    /// limit did not bound and the rule did not lower pulls the baseline
    /// up; a decrease in a window the application was refused in
    /// (`pressed`) begins a run of them (or goes on with one), an increase
    /// ends it.
    pub(super) fn after(
        &mut self,
        observed: Option<Observed>,
        bound: bool,
        pressed: bool,
        limit: usize,
        next: usize,
    ) {
        let Some(observed) = observed else { return };
        let per_slot = observed.all as f64 / limit.max(1) as f64;
        if next > limit {
            self.run = None;
        } else if let Some(run) = &mut self.run {
            // Over the run's first quarter only: its first window may mix
            // the times before and after a change; later, at a lower
            // limit, a slot carries more if the downstream got slower,
            // which is what the run is to tell.
            if pressed && limit * 4 >= run.from * 3 {
                run.per_slot = run.per_slot.max(per_slot);
            }
        } else if next < limit && pressed {
            self.run = Some(Run {
                from: limit,
                per_slot,
            });
        }
        if bound || next < limit || self.mean == 0 || observed.mean <= self.mean {
            return;
        }
        self.mean += observed.weigh(observed.mean - self.mean, RISE_SHIFT);
    }
}

impl Observed {
    /// `gap` over 2^`shift`, weighted by the window's answered calls.
    fn weigh(&self, gap: u64, shift: u32) -> u64 {
        self.weigh_as(gap, shift, FULL_WEIGHT)
    }

    /// `gap` over 2^`shift`, weighted by the window's answered calls, in
    /// full from `full` on.
    fn weigh_as(&self, gap: u64, shift: u32, full: u64) -> u64 {
        let weight = self.answered.min(full);
        ((u128::from(gap) * u128::from(weight)) >> shift) as u64 / full
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    fn at(mean: u64) -> Baseline {
        Baseline {
            mean,
            ..Baseline::default()
        }
    }

    fn seen(mean: u64, answered: u64) -> Option<Observed> {
        noisy(mean, answered, 0)
    }

    fn noisy(mean: u64, answered: u64, error: u64) -> Option<Observed> {
        Some(Observed {
            mean,
            answered,
            all: mean,
            error,
        })
    }

    #[test]
    fn a_window_has_the_standard_error_of_its_answered_mean() {
        // Holds of 2560, 2560, 7680 and 7680 ns (10 and 30 units of 256
        // ns): mean 5120, spread 2560, over the root of 4: 1280.
        let totals = SampleTotals {
            samples: 5,
            sum_nanos: 20_480 + 9000,
            sum_squares: 2 * 100 + 2 * 900,
            censored: 1,
            censored_nanos: 9000,
            ..SampleTotals::default()
        };
        let observed = Observed::of(&totals).unwrap();
        assert_eq!((observed.mean, observed.answered), (5120, 4));
        assert_eq!(observed.error, 1280);
        // No squares (a simulated window): no spread known.
        let bare = SampleTotals {
            sum_squares: 0,
            ..totals
        };
        assert_eq!(Observed::of(&bare).unwrap().error, 0);
    }

    #[test]
    fn a_window_low_by_chance_moves_it_only_past_its_standard_error() {
        let mut baseline = at(1000);
        // 900 ± 100: within chance of it.
        baseline.before(noisy(900, 256, 100), 8, true, false);
        assert_eq!(baseline.mean, 1000);
        // 600 ± 100: half way to 700.
        baseline.before(noisy(600, 256, 100), 8, true, false);
        assert_eq!(baseline.mean, 850);
    }

    #[test]
    fn a_probe_moves_it_either_way_alike_and_past_its_standard_error_by_half() {
        let mut baseline = at(1000);
        // 1300 ± 100 over 16 samples: half way to 1200 (more than a
        // quarter of the gap), in full from 16 samples (weighted as a
        // window, it moved 1000 by 9).
        baseline.probed(noisy(1300, 16, 100), false, 10_000);
        assert_eq!(baseline.mean, 1100);
        // 800 ± 100: half way to 900.
        baseline.probed(noisy(800, 16, 100), false, 10_000);
        assert_eq!(baseline.mean, 1000);
        // 1040 ± 100: within chance, a quarter of the way, up or down.
        baseline.probed(noisy(1040, 16, 100), false, 10_000);
        assert_eq!(baseline.mean, 1010);
        baseline.probed(noisy(970, 16, 100), false, 10_000);
        assert_eq!(baseline.mean, 1000);
        // A thin probe moves it by its weight: 8 samples of 16.
        baseline.probed(noisy(1080, 8, 100), false, 10_000);
        assert_eq!(baseline.mean, 1010);
    }

    #[test]
    fn a_probe_with_holds_over_half_a_window_rises_as_any_window() {
        let mut baseline = at(1000);
        // The drain may not have drained a queue of ours: weighted as any
        // window, 300 × 16 / 256 / 2.
        baseline.probed(noisy(1300, 16, 100), false, 2_000);
        assert_eq!(baseline.mean, 1009);
        // Lower by less than its error, holds that long: a quarter of the
        // way down (this once subtracted 1009 from 959 and wrapped the
        // baseline to 2^56 ns).
        baseline.probed(noisy(959, 16, 100), false, 1_000);
        assert_eq!(baseline.mean, 997);
    }

    #[test]
    fn probes_within_their_error_average_to_the_mean_a_lucky_first_window_missed() {
        // Begun a sixth low by chance; every probe reads the real mean,
        // 1200, within its error of 300: the baseline comes to it.
        let mut baseline = at(1000);
        for _ in 0..12 {
            baseline.probed(noisy(1200, 30, 300), false, 100_000);
        }
        assert!((1190..=1200).contains(&baseline.mean), "{}", baseline.mean);
        // And one begun high comes down alike.
        let mut baseline = at(1400);
        for _ in 0..12 {
            baseline.probed(noisy(1200, 30, 300), false, 100_000);
        }
        assert!((1200..=1210).contains(&baseline.mean), "{}", baseline.mean);
    }

    #[test]
    fn a_whole_take_is_sure_and_checked_by_the_next_probe_whichever_way_it_moved() {
        // An early probe over an eighth lower past twice its error: taken
        // whole, and the next probe comes early.
        let mut baseline = at(1000);
        assert!(baseline.probed(noisy(600, 16, 100), true, 10_000));
        assert_eq!(baseline.mean, 600);
        // Past once its error, not twice (a probe in six by chance): half
        // way past it.
        let mut baseline = at(1000);
        assert!(baseline.probed(noisy(700, 16, 100), true, 10_000));
        assert_eq!(baseline.mean, 900);
        // Within an eighth past its error: a quarter of the way.
        let mut baseline = at(1000);
        assert!(!baseline.probed(noisy(850, 16, 100), true, 10_000));
        assert_eq!(baseline.mean, 963);
        // Under two thirds past twice its error, early or not: whole.
        let mut baseline = at(1000);
        assert!(baseline.probed(noisy(400, 16, 100), false, 10_000));
        assert_eq!(baseline.mean, 400);
        // Were that take low by chance, the next probe, early, pulls it up
        // by more than a sixteenth and brings the one after early too.
        assert!(baseline.probed(noisy(1000, 16, 100), false, 10_000));
        assert_eq!(baseline.mean, 650);
        // A move within a sixteenth brings no early probe.
        assert!(!baseline.probed(noisy(720, 16, 100), false, 10_000));
        assert_eq!(baseline.mean, 667);
    }

    #[test]
    fn the_first_window_sets_it_and_lower_means_pull_it_by_their_weight() {
        let mut baseline = Baseline::default();
        baseline.before(seen(1000, 10), 8, true, false);
        assert_eq!(baseline.mean, 1000);
        baseline.before(seen(600, 256), 8, true, false);
        assert_eq!(baseline.mean, 800); // half way
        baseline.before(seen(400, 64), 8, true, false);
        assert_eq!(baseline.mean, 750); // a quarter of half way
    }

    #[test]
    fn only_an_unbound_window_the_rule_did_not_lower_pulls_it_up() {
        let mut baseline = at(800);
        baseline.after(seen(1600, 256), true, true, 8, 8);
        baseline.after(seen(1600, 256), false, false, 8, 7);
        assert_eq!(baseline.mean, 800);
        baseline.after(seen(1600, 256), false, false, 7, 7);
        assert_eq!(baseline.mean, 825);
    }

    #[test]
    fn the_minimum_limit_relearns_it_whole_and_censored_windows_move_nothing() {
        let mut baseline = at(800);
        assert!(baseline.before(seen(8000, 3), 1, true, true));
        assert_eq!(baseline.mean, 8000);
        let censored = SampleTotals {
            samples: 5,
            sum_nanos: 500,
            censored: 5,
            censored_nanos: 500,
            ..SampleTotals::default()
        };
        assert!(Observed::of(&censored).is_none());
        assert!(!baseline.before(Observed::of(&censored), 1, true, true));
        assert_eq!(baseline.mean, 8000);
    }

    #[test]
    fn a_window_of_drops_alone_or_of_stray_marks_is_no_observation() {
        // A window decided on a drop, whose one sample's count a take left
        // for the next window while taking its censored mark.
        let stray = SampleTotals {
            censored: 1,
            censored_nanos: 40,
            drops: 1,
            ..SampleTotals::default()
        };
        assert!(Observed::of(&stray).is_none());
        let drops_only = SampleTotals {
            drops: 3,
            ..SampleTotals::default()
        };
        assert!(Observed::of(&drops_only).is_none());
    }

    #[test]
    fn halving_a_pressed_limit_with_no_fall_of_the_mean_relearns_it_whole() {
        let mut baseline = at(1000);
        // A tenfold step: the rule sheds from 20; the mean stays.
        baseline.after(seen(10_000, 256), true, true, 20, 18);
        for limit in [18, 15, 12, 10] {
            assert!(!baseline.before(seen(10_000, 256), limit, true, false));
            baseline.after(seen(10_000, 256), true, true, limit, limit - 1);
        }
        // Twice at half the limit or less: learnt.
        assert!(baseline.before(seen(9_500, 256), 9, true, false));
        assert_eq!(baseline.mean, 9_500);
        // A queue shed: the mean falls with the limit; one window high by
        // chance is no proof.
        baseline.after(seen(40_000, 256), true, true, 40, 36);
        assert!(!baseline.before(seen(40_000, 256), 20, true, false));
        for limit in [36, 30, 24, 20] {
            let mean = 1000 * limit as u64;
            assert!(!baseline.before(seen(mean, 256), limit, true, false));
            baseline.after(seen(mean, 256), true, true, limit, limit - 4);
        }
        // A limit above the demand (nothing refused): lowering it sheds
        // nothing, and proves nothing.
        let mut baseline = at(1000);
        for limit in [48, 40, 32, 24, 20] {
            assert!(!baseline.before(seen(4_000, 256), limit, false, false));
            baseline.after(seen(4_000, 256), false, false, limit, limit - 4);
        }
    }
}
