//! [`Probe`]: the periodic re-probe of an adaptive limit's baseline, after
//! TCP BBR's `ProbeRTT`.
//!
//! The baseline rises only from windows the limit does not bound, so that
//! a queue of the limit's own making cannot pull it up (the drift of
//! Netflix's Gradient2, #165). Under lasting overload every window is
//! bound, and a baseline learnt from a thin or unlucky window, or from a
//! downstream that has since got slower, would stay low for good and the
//! limit with it. So every [`Adaptive::probe_every`](super::Adaptive::probe_every)
//! windows of a steady limit, two windows run at half the limit: in the
//! first, the requests admitted before it drain (a queue of ours drains
//! with them, and their latencies are the queue's); in the second, the
//! baseline moves toward its mean, down or up alike: half of what lies
//! past that window's standard error, a quarter of the way at least, so
//! successive probes average out the chance in each (an early probe's mean
//! more than an eighth lower past twice its error: all the way). The limit then
//! goes back to where it was, and the window after, whose requests were
//! admitted at half of it, may not grow it. It costs two windows in
//! `probe_every` at half the limit (BBR spends about 2% of its time in
//! `ProbeRTT`), and up to about 40% more where thin, noisy windows make
//! probes move the baseline by more than a sixteenth, each of which brings
//! the next early (a simulation of 10-sample windows of a long tail: 20 to
//! 22 probes in 1,000 windows against 16). A baseline too high is the
//! other failure: the first window begins it, and a limit started above
//! the downstream's concurrency fills that window with a queue. So the
//! first probes come early (`EARLY`).

/// Windows of a steady limit (no decrease) before a probe may run: a limit
/// still coming down sheds a queue, and half of it may still queue. One:
/// a limit that hovers (down one, up one) is steady enough.
const STEADY_WINDOWS: u64 = 1;

/// The first `EARLY_PROBES` probes, and any after one that moved the
/// baseline by a lot (either way), come this many times as often. The baseline began
/// at the first window's mean, which a limit started above the
/// downstream's concurrency fills with a queue; lower means pull it down
/// only as the queue drains, and a limit held where the mean is within
/// tolerance of a baseline that high keeps the queue. A probe at half a
/// limit that still comes down may itself queue, so one is not enough;
/// each lowers the limit, and the first at half a limit that no longer
/// queues takes the real mean: within `probe_every` windows of the start,
/// not after several. A probe that moved it a lot up, after a probe low by
/// chance was taken whole, is checked as soon.
const EARLY: u64 = 4;
/// How many probes come early from the start.
const EARLY_PROBES: u8 = 3;

/// When the next probe runs, and the limit to go back to after one.
#[derive(Debug)]
pub(super) struct Probe {
    /// Windows between probes; 0: never.
    every: u64,
    /// Probes still to come `EARLY` times as often (the last moved the
    /// baseline by a lot, or few have run).
    early: u8,
    /// Windows since the last probe or re-learn.
    since: u64,
    /// Windows since the limit last came down.
    steady: u64,
    /// The limit before the probe under way, if one is.
    restore: Option<usize>,
    /// Whether the probe's first window, the drain, is still to close.
    draining: bool,
    /// Whether a probe gave the limit back at the last window's close.
    restored: bool,
}

/// Where a probe is, at a window's close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// No probe is under way.
    None,
    /// The window that closed drained the requests admitted before the
    /// probe: the next one measures.
    Drained,
    /// The window that closed measured: the limit to go back to, and
    /// whether the probe came early (the baseline may have begun in a
    /// queue, and a mean more than an eighth lower is taken whole).
    Measured(usize, bool),
    /// The window that closed was the first after a probe: much of it was
    /// admitted at half the limit, so it shows room the limit does not
    /// have.
    Restored,
}

impl Probe {
    pub(super) fn new(every: u64) -> Probe {
        Probe {
            every,
            early: EARLY_PROBES,
            since: 0,
            steady: 0,
            restore: None,
            draining: false,
            restored: false,
        }
    }

    /// A window closed: where the probe under way, if any, is.
    pub(super) fn step(&mut self) -> Step {
        if self.restore.is_none() {
            return if std::mem::take(&mut self.restored) {
                Step::Restored
            } else {
                Step::None
            };
        }
        if std::mem::take(&mut self.draining) {
            return Step::Drained;
        }
        self.since = 0;
        let early = self.early > 0;
        self.early = self.early.saturating_sub(1);
        self.restored = true;
        self.restore
            .take()
            .map_or(Step::None, |restore| Step::Measured(restore, early))
    }

    /// The limit the probe under way will give back, if one is.
    #[cfg(all(test, not(sidejob_loom)))]
    pub(super) fn restoring(&self) -> Option<usize> {
        self.restore
    }

    /// Whether a probe is under way.
    pub(super) fn under_way(&self) -> bool {
        self.restore.is_some()
    }

    /// The probe that just measured moved the baseline by a lot: it may
    /// still be off, and the next probe comes early.
    pub(super) fn again(&mut self) {
        self.early = self.early.max(1);
    }

    /// The baseline was learnt whole another way (at the minimum limit,
    /// or after shedding did not help).
    pub(super) fn relearnt(&mut self) {
        self.since = 0;
    }

    /// A window closed moving the limit from `limit` to `next`; `wanted`:
    /// the application asked for the limit (was not idle). The limit for
    /// the next window if it is to be a probe: half of `next`, at least
    /// `min_limit`.
    pub(super) fn start(
        &mut self,
        limit: usize,
        next: usize,
        min_limit: usize,
        wanted: bool,
    ) -> Option<usize> {
        self.since += 1;
        self.steady = if next < limit { 0 } else { self.steady + 1 };
        let every = if self.early > 0 {
            (self.every / EARLY).max(1)
        } else {
            self.every
        };
        let due = self.every > 0 && self.since >= every && self.steady >= STEADY_WINDOWS;
        let half = (next / 2).max(min_limit);
        if !due || !wanted || half >= next {
            return None;
        }
        self.restore = Some(next);
        self.draining = true;
        Some(half)
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    /// Steady windows at 20 until a probe starts: how many it took.
    fn windows_to_a_probe(probe: &mut Probe) -> usize {
        (1..)
            .find(|_| probe.start(20, 20, 1, true).is_some())
            .unwrap()
    }

    /// A probe's two windows and the one after it.
    fn run_out(probe: &mut Probe, early: bool) {
        assert_eq!(probe.step(), Step::Drained);
        assert_eq!(probe.step(), Step::Measured(20, early));
        assert_eq!(probe.step(), Step::Restored); // may not grow
        assert_eq!(probe.step(), Step::None);
    }

    #[test]
    fn a_probe_runs_after_enough_steady_windows_and_gives_the_limit_back() {
        let mut probe = Probe::new(8);
        for _ in 0..EARLY_PROBES {
            assert_eq!(windows_to_a_probe(&mut probe), 2); // early: 8 / 4
            run_out(&mut probe, true);
        }
        for _ in 0..7 {
            assert_eq!(probe.start(20, 20, 1, true), None);
        }
        assert_eq!(probe.start(20, 20, 1, true), Some(10));
        run_out(&mut probe, false);
        assert_eq!(probe.start(20, 20, 1, true), None); // the count starts again
    }

    #[test]
    fn a_probe_that_lowered_the_baseline_by_a_lot_brings_the_next_early() {
        let mut probe = Probe::new(8);
        for _ in 0..EARLY_PROBES {
            windows_to_a_probe(&mut probe);
            run_out(&mut probe, true);
        }
        probe.again();
        assert_eq!(windows_to_a_probe(&mut probe), 2);
        run_out(&mut probe, true);
        assert_eq!(windows_to_a_probe(&mut probe), 8); // found: back to every 8
    }

    #[test]
    fn no_probe_while_the_limit_comes_down_is_idle_or_at_its_minimum() {
        let mut probe = Probe::new(2);
        for _ in 0..10 {
            assert_eq!(probe.start(20, 19, 1, true), None); // coming down
        }
        assert_eq!(probe.start(19, 19, 1, true), Some(9)); // steady again
        probe.step();
        probe.step();
        for _ in 0..4 {
            assert_eq!(probe.start(19, 19, 1, false), None); // idle
        }
        assert_eq!(probe.start(2, 2, 2, true), None); // half is the minimum
        assert_eq!(Probe::new(0).start(20, 20, 1, true), None); // never
    }
}
