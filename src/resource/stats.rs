//! [`ResourceStats`] and [`ShardStats`]: what [`Resource::stats`](crate::Resource::stats) reports.

/// A snapshot of a [`Resource`](crate::Resource)'s counters, from [`Resource::stats`](crate::Resource::stats).
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::builder().capacity(5).shards(2).build()?;
/// let stats = resource.stats();
/// assert_eq!(stats.capacity, 5);
/// assert_eq!(stats.shards.iter().map(|s| s.limit).collect::<Vec<_>>(), [3, 2]);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ResourceStats {
    /// The total capacity.
    pub capacity: usize,
    /// Permits held, summed over the shards.
    pub usage: usize,
    /// Successful acquires, ever.
    pub accepted: u64,
    /// Refused acquires ([`Overload`](crate::Overload)s), ever; one per refused call.
    pub rejected: u64,
    /// Each shard's figures, in shard order.
    pub shards: Vec<ShardStats>,
}

/// One shard's figures within [`ResourceStats`].
///
/// # Examples
///
/// ```
/// let resource = sidejob::Resource::builder().capacity(2).shards(1).build()?;
/// let _permit = resource.try_acquire()?;
/// let shard = &resource.stats().shards[0];
/// assert_eq!((shard.limit, shard.usage, shard.accepted), (2, 1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ShardStats {
    /// The shard's share of the capacity. The shares sum to the capacity.
    /// After a shrink that left some shard above its share, other shards
    /// admit less than theirs until the overshoot is released.
    pub limit: usize,
    /// Permits held on this shard.
    pub usage: usize,
    /// Permits this shard granted, ever.
    pub accepted: u64,
    /// Refused acquires whose probe started (at home) on this shard, ever.
    pub rejected: u64,
}
