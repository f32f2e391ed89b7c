//! What a [`Supervisor`](super::Supervisor) reports: its counters and what
//! a shutdown did.

/// A snapshot of a [`Supervisor`](super::Supervisor)'s counters, from [`Supervisor::stats`](super::Supervisor::stats).
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::new(0);
/// let _ = supervisor.spawn(|_| ());
/// assert_eq!(supervisor.stats().rejected, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct SupervisorStats {
    /// The most children alive at once.
    pub capacity: usize,
    /// Children alive now.
    pub live: usize,
    /// Children started, ever. Counted as a child joins the live set.
    pub spawned: u64,
    /// Children that ended (returned or panicked), ever. Counted in the
    /// step in which a child leaves the live set, and read with `live` at
    /// one moment: `spawned == live + finished` in every snapshot.
    pub finished: u64,
    /// Children that panicked, ever.
    pub panicked: u64,
    /// Spawns refused with `Overload`, ever.
    pub rejected: u64,
    /// Spawns refused because the supervisor was shut down, ever.
    pub closed: u64,
    /// Spawns whose thread the OS refused to start, ever.
    pub spawn_failed: u64,
    /// Each shard's figures, in shard order.
    pub shards: Vec<SupervisorShardStats>,
}

/// One shard's figures within [`SupervisorStats`].
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::builder().capacity(3).shards(2).build()?;
/// let limits: Vec<usize> = supervisor.stats().shards.iter().map(|s| s.limit).collect();
/// assert_eq!(limits, [2, 1]);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct SupervisorShardStats {
    /// The part of the capacity this shard leases right now; the limits
    /// move to the shards whose threads spawn.
    pub limit: usize,
    /// Slots held on this shard: its live children, plus any spawn or exit
    /// under way.
    pub usage: usize,
    /// Children alive on this shard.
    pub live: usize,
}
