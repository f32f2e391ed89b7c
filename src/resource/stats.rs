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
    /// Refused acquires by the priority they asked with, ever; they sum to
    /// `rejected`.
    pub rejected_by_priority: PriorityCounts,
    /// The part of the capacity no shard leases right now. Negative while a
    /// shrink below the usage waits for releases to pay it back.
    pub reserve: i64,
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
    /// The part of the capacity this shard leases right now: it admits
    /// while its usage is below this. The limits and the reserve sum to the
    /// capacity; the limits move to the shards where acquires happen.
    pub limit: usize,
    /// Permits held on this shard.
    pub usage: usize,
    /// Permits this shard granted, ever.
    pub accepted: u64,
    /// Refused acquires whose probe started (at home) on this shard, ever.
    pub rejected: u64,
}

/// A count per [`Priority`](crate::Priority), within [`ResourceStats`].
///
/// # Examples
///
/// ```
/// use sidejob::{Priority, Resource};
///
/// let resource = Resource::builder().capacity(0).build()?;
/// assert!(resource.try_acquire_with(Priority::Sheddable).is_err());
/// let rejected = resource.stats().rejected_by_priority;
/// assert_eq!((rejected.sheddable, rejected.get(Priority::Normal)), (1, 0));
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PriorityCounts {
    /// [`Priority::Critical`](crate::Priority::Critical)'s count.
    pub critical: u64,
    /// [`Priority::Normal`](crate::Priority::Normal)'s count.
    pub normal: u64,
    /// [`Priority::Sheddable`](crate::Priority::Sheddable)'s count.
    pub sheddable: u64,
}

impl PriorityCounts {
    /// The count for `priority`.
    ///
    /// # Examples
    ///
    /// ```
    /// let counts = sidejob::PriorityCounts::default();
    /// assert_eq!(counts.get(sidejob::Priority::Critical), 0);
    /// ```
    pub fn get(&self, priority: crate::Priority) -> u64 {
        match priority {
            crate::Priority::Critical => self.critical,
            crate::Priority::Normal => self.normal,
            crate::Priority::Sheddable => self.sheddable,
        }
    }
}
