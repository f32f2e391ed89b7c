//! What a [`TaskSupervisor`](super::TaskSupervisor) reports.

/// A snapshot of a [`TaskSupervisor`](super::TaskSupervisor)'s counters,
/// from [`TaskSupervisor::stats`](super::TaskSupervisor::stats).
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::TaskSupervisor::new(1);
/// let task = supervisor.try_track(|_| async {}).unwrap();
/// assert!(supervisor.try_track(|_| async {}).is_err());
/// drop(task); // dropped unfinished
/// let stats = supervisor.stats();
/// assert_eq!((stats.spawned, stats.finished, stats.cancelled, stats.rejected), (1, 1, 1, 1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct TaskSupervisorStats {
    /// The most children alive at once.
    pub capacity: usize,
    /// Children alive now.
    pub live: usize,
    /// Children admitted, by `try_track` or `try_spawn`.
    pub spawned: u64,
    /// Children that ended, however. Counted in the step in which a child
    /// leaves the live set, and read with `live` at one moment:
    /// `spawned == live + finished` in every snapshot.
    pub finished: u64,
    /// Of those, children whose poll (or whose closure) panicked.
    pub panicked: u64,
    /// Of those, children dropped unfinished: aborted, cancelled, or their
    /// runtime shut down.
    pub cancelled: u64,
    /// Children refused because the supervisor was full.
    pub rejected: u64,
    /// Children refused because the supervisor was closed.
    pub closed: u64,
    /// Per shard.
    pub shards: Vec<TaskShardStats>,
}

/// One shard of a [`TaskSupervisorStats`].
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::TaskSupervisor::builder().capacity(4).shards(2).build()?;
/// let shards = supervisor.stats().shards;
/// assert_eq!(shards.iter().map(|s| s.limit).sum::<usize>(), 4);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct TaskShardStats {
    /// The part of the capacity this shard leases right now; the limits
    /// move to the shards whose threads spawn.
    pub limit: usize,
    /// Slots held on the shard.
    pub usage: usize,
    /// Children alive on the shard.
    pub live: usize,
}
