//! [`AdaptiveStats`]: what an adaptive limit reports.

use std::time::Duration;

/// What an adaptive limit has done, from
/// [`Resource::adaptive_stats`](crate::Resource::adaptive_stats).
///
/// # Examples
///
/// ```
/// use sidejob::adaptive::Adaptive;
///
/// let resource = sidejob::Resource::builder().capacity(16).adaptive(Adaptive::aimd()).build()?;
/// let stats = resource.adaptive_stats().expect("adaptive is on");
/// assert_eq!((stats.limit, stats.windows, stats.drops), (16, 0, 0));
/// assert_eq!(stats.algorithm, "aimd");
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct AdaptiveStats {
    /// The limit now: the resource's capacity.
    pub limit: usize,
    /// The baseline: the mean latency with no queue downstream, a
    /// long-term reference of the windows' mean latencies (not of single
    /// samples: jitter and a steady mix of fast and slow requests are not a
    /// queue, nor is a long tail). It starts at the first window's mean and
    /// falls half the way to a lower window mean each window (to what lies
    /// past that window's standard error: a window low by chance moves it
    /// little); it rises
    /// toward a higher one by a 32nd of the gap a window (both weighted by
    /// the window's samples, fully from 256 on), and only from windows in
    /// which the
    /// limit did not bound the application and the rule did not lower it,
    /// so a queue the limit itself lets build cannot push it up. A
    /// downstream that got slower for good is re-learnt whole: when a run
    /// of decreases halved the limit under refusals and, two windows in a
    /// row, the mean stayed 30% above what shedding a queue would have
    /// left, and at the minimum limit. A probe moves it either way (see
    /// [`Adaptive::probe_every`](super::Adaptive::probe_every)). Zero
    /// before the first window.
    pub baseline: Duration,
    /// The last window's mean latency. Zero before the first window.
    pub latency: Duration,
    /// Windows closed (those with enough samples to decide on).
    pub windows: u64,
    /// Latency samples in the closed windows.
    pub samples: u64,
    /// Windows that raised the limit.
    pub increases: u64,
    /// Windows that lowered it.
    pub decreases: u64,
    /// Windows run at half the limit to re-learn the baseline (see
    /// [`Adaptive::probe_every`](super::Adaptive::probe_every)).
    pub probes: u64,
    /// Whether a probe is under way: the limit is at half on purpose, and
    /// goes back when the probe ends.
    pub probing: bool,
    /// Drops reported, in closed windows.
    pub drops: u64,
    /// The rule: `aimd`, `gradient`, `vegas` or `custom`.
    pub algorithm: &'static str,
}
