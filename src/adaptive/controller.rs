//! [`Controller`]: the decisions of an adaptive limit, window by window,
//! with no clock and no atomics of its own, so that a test can drive it
//! through virtual time.
//!
//! # Design
//!
//! `ResourceBuilder::adaptive` puts a *governor* beside a resource's counter
//! (`src/adaptive/governor.rs`). Its rule decides the capacity once a window;
//! it changes it through `set_capacity`, the resize above, so every invariant
//! of the core holds for an adaptive resource as for any other.
//!
//! **Where samples live.** Each shard's word sits on a cache line of its own
//! (128 bytes with `CachePadded`), of which the word, its fold counter and the
//! refusal counters use 40. The samples use the rest
//! (`admission/samples.rs`): a count, a sum of hold times and of their
//! squares (the answered ones'), the least and the
//! most hold, the censored samples and their sum, the most permits the shard
//! held at a sampled release, and the drops. A sampled release adds to them
//! right after its `fetch_sub` on the same line, so a sample writes no line
//! that another shard's threads write; with one shard per thread, the line is
//! in the releasing core's cache already.
//!
//! **Which permits are timed.** Reading the clock costs about as much as the
//! whole admission (quanta's TSC read, 10 ns on the 2-vCPU machine; two per
//! sample). So a permit is timed only when its grant number on its shard, which
//! the admitting CAS returns anyway (on the slow path too), is a multiple of a
//! stride: the stride is a power of two, set at each window's close so that
//! the next window gathers about 256 samples, from 1 (every permit) to 64. A
//! permit that is not timed carries a zero start and releases as a plain
//! permit does. Drops are never sampled: every `dropped()` counts.
//!
//! **Calls that never answer.** `Permit::cancelled` (the tower layers' release
//! for a dropped response future or a failed inner call) is a *censored*
//! sample: the latency was at least the hold, so it counts in the window's sum,
//! count and maximum, not its minimum nor the baseline; past
//! `Adaptive::drop_after` × the baseline it is a drop instead (the caller timed
//! out on a downstream that did not answer). Leaving them out let only the fast
//! survivors speak, and a stall where every call timed out closed no window.
//!
//! **How a window closes.** A timed release, and a refused acquire, compares
//! the clock with the window's start (one read-mostly line, written once a
//! window). The first one past the window's length `try_lock`s the governor; a
//! thread that finds the lock taken goes on, since someone is closing. The
//! closer re-checks the time, swaps every shard's accumulators out (a few dozen
//! atomic swaps), reads the refusal and grant totals, and hands the merged
//! window to the controller, which:
//!
//! 1. carries a window with fewer than `min_samples` samples and drops into the
//!    next;
//! 2. moves the baseline (`adaptive/baseline.rs`), a reference of the windows'
//!    *mean* latency of the calls that answered: the first window sets it; a
//!    lower mean pulls it half way down (to what lies past the window's
//!    standard error, so a window low by chance moves it little), a higher
//!    one a 32nd of the way up,
//!    both weighted by the window's samples (full weight from 256), and up
//!    only from windows in which the limit did not bound the application (no
//!    refusal, peak below the limit) and the rule did not lower it. A queue
//!    the limit itself lets build raises the mean; a baseline that followed it
//!    would let the limit grow with the queue (Envoy #11579, Netflix #165). A
//!    downstream that got slower for good (Envoy #38338) is re-learnt whole:
//!    once a run of decreases has halved the limit while the application was
//!    refused (so what was in flight halved too) and, two windows in a row,
//!    the mean stayed 30% above what shedding a queue of ours would have left
//!    (the most latency a slot of the limit carried in the run, times the
//!    limit, or the baseline), at the minimum limit, where nothing of ours can queue, and
//!    by a probe whose mean is two thirds of it or less (step 5). It is a reference of means, not of the shortest sample, which
//!    Netflix's rules compare with the mean: that read
//!    jitter, a steady mix of cheap and dear requests, and a long tail (whose
//!    shortest sample is the mean over the sample count) as a queue;
//! 3. asks the rule, inside `catch_unwind`: a panicking rule keeps the limit;
//! 4. refuses growth after a window with a drop, or while the application held
//!    under half the limit and was refused nothing; clamps into
//!    `[min_limit, max_limit]`;
//! 5. every `probe_every` windows of a steady limit (`adaptive/probe.rs`), runs
//!    the next two windows at half the limit instead (the first drains what
//!    was admitted before it, whose latencies are the old queue's) and moves
//!    the baseline toward the second's mean, down or up alike (half of what
//!    lies past its standard error, a quarter of the way at least, so the
//!    probes average out their chance; in full from 16 samples on; whole
//!    for an early probe's more than an eighth lower past twice its error; up
//!    only as any window when its holds last over half a window, which the
//!    drain may not have drained),
//!    then gives the limit back
//!    (TCP BBR's `ProbeRTT`), and lets the window after it (admitted at half
//!    the limit) shrink the limit but not grow it: under lasting overload every window is bound, so
//!    this is how the baseline sheds the low bias that noise leaves on a
//!    reference that mostly falls. The first three probes, and any after one
//!    that moved the baseline by more than a sixteenth, come four times as
//!    often: the first window, which begins the baseline, is a queue when
//!    the limit starts above the downstream's concurrency;
//! 6. resizes the counter if the limit changed, through `resize_from`: only
//!    over the capacity it read and with a `try_lock`, so a user's
//!    `set_capacity` that came meanwhile, or is under way, wins and no
//!    releasing thread waits; sets the next stride and opens the next window.
//!
//! Nothing on the request path locks, allocates or writes a shared line; the
//! close is one thread's work once a window. A window with no timed release
//! and no refusal never closes, but it has nothing to decide on either; the
//! stride's cap of 64 bounds how long a window waits for its first sample after
//! traffic falls.
//!
//! **The rules.** `Aimd` is Netflix's: a drop, or a sampled request past the
//! timeout (the window's maximum), multiplies the limit by 0.9, else it grows
//! by one. `Gradient` follows Netflix's Gradient2 (`ratio = tolerance ×
//! baseline / mean`) with changes, each for a reported flaw: drops back off
//! (Netflix's issue #176); growth aims at the middle of the tolerance and holds between
//! that and the tolerance, past one slot a window only with no queue at all,
//! and by one at least within the middle of the tolerance, so it neither grows
//! without bound where the ratio sits just under 1 (PR #134) nor stays at 1
//! for good; decreases move a fifth of the way to `limit × max(ratio, 0.5)`,
//! a tenth at most, with the limit kept as a fraction between windows. `Vegas`
//! estimates the queue downstream as Netflix's does; its targets of 3 to 6
//! queued requests are capped at a third of small limits, its fast growth (6 a
//! window) happens only while nothing queues and at most half the limit, and
//! it sheds the excess queue, at most a quarter of the limit a window. With
//! those, each settles within `[K, 1.5 K]` of a downstream that queues beyond
//! `K`, with exact, jittered, bimodal and long-tailed latencies and after a
//! lasting tenfold step (`src/adaptive/simulation.rs`; under noisy means a
//! window may stray one request out), and under real threads
//! (`tests/adaptive/traffic/`, `examples/adaptive.rs`).
//!
//! **Under loom** the governor reads a still mock clock and every timed release
//! finds its window due, so the models explore closes racing admissions and
//! releases (loom models (w) and (x)).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use super::baseline::{Baseline, Observed};
use super::probe::{Probe, Step};
use super::{Adaptive, AdaptiveStats, Algorithm, Window};
use crate::admission::SampleTotals;

/// An adaptive limit's state between windows.
pub(crate) struct Controller {
    algorithm: Box<dyn Algorithm>,
    /// Whether the rule panicked since [`take_rule_panic`](Self::take_rule_panic).
    rule_panicked: bool,
    pub(super) min_limit: usize,
    pub(super) max_limit: usize,
    min_samples: u64,
    /// [`Adaptive::drop_after`].
    drop_after: f64,
    /// [`Adaptive::window`], in nanoseconds.
    window_nanos: u64,
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
    /// Whether the rule panicked since the last call (its window kept the
    /// limit), for the governor to tell.
    pub(crate) fn take_rule_panic(&mut self) -> bool {
        std::mem::take(&mut self.rule_panicked)
    }

    pub(crate) fn new(adaptive: Adaptive, initial: usize) -> Controller {
        Controller {
            algorithm: adaptive.algorithm,
            rule_panicked: false,
            min_limit: adaptive.min_limit,
            max_limit: adaptive.max_limit,
            min_samples: adaptive.min_samples,
            drop_after: adaptive.drop_after,
            window_nanos: u64::try_from(adaptive.window.as_nanos()).unwrap_or(u64::MAX),
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
        let restored = match self.probe.step() {
            Step::None => false,
            Step::Restored => true,
            // A probe's first window at half the limit: what was admitted
            // before it drained.
            Step::Drained => return None,
            Step::Measured(restore, early) => {
                // Its second: the baseline moves to its mean, and the limit
                // goes back.
                if self.baseline.probed(observed, early, self.window_nanos) {
                    self.probe.again();
                }
                self.stats.baseline = Duration::from_nanos(self.baseline.mean);
                self.stats.latency = self.window(&totals, observed, refused).mean_latency;
                self.stats.probes += 1;
                let next = restore.clamp(self.min_limit, self.max_limit);
                self.stats.limit = next;
                return (next != limit).then_some(next);
            }
        };
        if self
            .baseline
            .before(observed, limit, refused > 0, limit <= self.min_limit)
        {
            self.probe.relearnt();
        }
        let window = self.window(&totals, observed, refused);
        self.stats.latency = window.mean_latency;

        let proposed = catch_unwind(AssertUnwindSafe(|| self.algorithm.update(limit, &window)))
            .unwrap_or_else(|_| {
                self.rule_panicked = true;
                limit
            });
        // Growth only where the application asked for the limit, never
        // after a drop, nor from the window after a probe (its requests ran
        // at half the limit).
        let idle = totals.peak * 2 < limit as u64 && refused == 0;
        let proposed = if proposed > limit && (totals.drops > 0 || idle || restored) {
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
    fn window(&self, totals: &SampleTotals, observed: Option<Observed>, refused: u64) -> Window {
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
            mean_error: Duration::from_nanos(observed.map_or(0, |observed| observed.error())),
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
