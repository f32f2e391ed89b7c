//! [`ShardedCounter`]: a row of [`Shard`]s holding an exact share of one
//! capacity each, admitted through the probe. The mechanism under the
//! [`Resource`](crate::Resource), `Supervisor` and `ObjectPool` faces.
//!
//! # Orderings
//!
//! Admission, release and limit changes are single atomic steps on one
//! shard's word; the shard module justifies their orderings. Resizes and
//! rebalances are serialised by a mutex the fast path never takes, and they
//! read every shard with `Acquire` after taking it. The capacity itself is a
//! `Relaxed` atomic: it is written only under that mutex and read as a
//! figure, never to admit. The rejection counters are `Relaxed` counters.

use crossbeam_utils::CachePadded;

use crate::error::{BuildError, Overload};
use crate::sync::{lock, AtomicU64, AtomicUsize, Mutex, Ordering};

use super::probe;
use super::shard::{Shard, ShardCounts};
use super::sizing::{check_capacity, limit_for};

/// A capacity of slots split across shards, each an atomic usage word on
/// its own cache line.
#[derive(Debug)]
pub(crate) struct ShardedCounter {
    pub(super) shards: Box<[CachePadded<Shard>]>,
    /// Refused admissions, by the shard where their probe started. Apart
    /// from the shard words, so counting a refusal never disturbs probes
    /// reading a full shard.
    rejections: Box<[CachePadded<AtomicU64>]>,
    pub(super) capacity: AtomicUsize,
    pub(super) resize: Mutex<()>,
}

impl ShardedCounter {
    /// `capacity` slots over `shards` shards, both already checked
    /// ([`Sizing::checked`](super::Sizing::checked)).
    pub(crate) fn new(capacity: usize, shards: usize) -> Self {
        ShardedCounter {
            shards: (0..shards)
                .map(|index| CachePadded::new(Shard::new(limit_for(capacity, shards, index))))
                .collect(),
            rejections: (0..shards)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            capacity: AtomicUsize::new(capacity),
            resize: Mutex::new(()),
        }
    }

    /// Admits one slot starting at shard `start`; returns the shard it came
    /// from. The caller owns the slot and must give it back with
    /// [`release`](Self::release) exactly once.
    #[inline]
    pub(crate) fn admit_from(&self, start: usize) -> Result<usize, Overload> {
        match probe::admit(&self.shards, start) {
            Some(admission) => Ok(admission.shard),
            None => Err(self.refused(start)),
        }
    }

    /// Counts a refusal whose probe started at shard `start`.
    #[cold]
    #[inline(never)]
    fn refused(&self, start: usize) -> Overload {
        self.rejections[start].fetch_add(1, Ordering::Relaxed);
        Overload
    }

    /// Gives back a slot admitted on `shard`.
    #[inline]
    pub(crate) fn release(&self, shard: usize) {
        if self.shards[shard].release() {
            self.rebalance_after_release();
        }
    }

    /// The total capacity: the sum of the shard shares.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// The number of shards.
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Slots held on shard `shard` right now.
    pub(crate) fn shard_usage(&self, shard: usize) -> usize {
        self.shards[shard].usage() as usize
    }

    /// Slots held right now, summed over the shards, each read once.
    pub(crate) fn usage(&self) -> usize {
        self.shards.iter().map(|shard| shard.usage() as usize).sum()
    }

    /// Shard `shard`'s usage and grants, read together.
    pub(crate) fn shard_counts(&self, shard: usize) -> ShardCounts {
        self.shards[shard].counts()
    }

    /// Refusals whose probe started on shard `shard`, ever.
    pub(crate) fn shard_rejected(&self, shard: usize) -> u64 {
        self.rejections[shard].load(Ordering::Relaxed)
    }

    /// Changes the capacity, spreading it exactly over the shards; held
    /// slots are never revoked (see the [rebalance](super::rebalance)).
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` when the shards cannot hold it;
    /// nothing changed then.
    pub(crate) fn set_capacity(&self, capacity: usize) -> Result<(), BuildError> {
        check_capacity(capacity, self.shards.len())?;
        let _resizing = lock(&self.resize);
        self.capacity.store(capacity, Ordering::Relaxed);
        self.rebalance(capacity);
        Ok(())
    }
}
