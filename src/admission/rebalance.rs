//! Rebalancing: shard limits after a shrink below the usage.
//!
//! Each shard's *share* of the capacity is spread exactly
//! (`limit_for`), and normally each shard admits up to its share. A shrink can leave a shard
//! holding more than its new share, since held permits are never revoked.
//! Then the other shards must not admit the full share: the overshoot is
//! charged to them, by lowering their admission limits below their shares
//! (or to zero while total usage is above capacity). A release on a shard
//! over its limit is the only event that makes room, and the shard word tells
//! the releaser so, which sends it to [`ShardedCounter::rebalance`]; everyone else
//! stays on the fast path. Once no shard is over, every limit is its share
//! again. The invariant, for admissions after the shrink returns, is:
//! the sum over shards of `max(usage, limit)` is at most the capacity, unless
//! every limit is zero.
//!
//! # Orderings
//!
//! Runs under the counter's resize mutex, which the fast path never takes;
//! every shard is read with `Acquire` and changed with the shard word's
//! `AcqRel` CAS, so the plan rests on what each shard held at that instant.

use crate::sync::{lock, Ordering};

use super::counter::ShardedCounter;
use super::sizing::limit_for;

impl ShardedCounter {
    /// A shard over its limit (after a shrink) released a permit: the room
    /// it made may let other shards admit again.
    #[cold]
    #[inline(never)]
    pub(super) fn rebalance_after_release(&self) {
        let _resizing = lock(&self.resize);
        self.rebalance(self.capacity.load(Ordering::Relaxed));
    }

    /// Sets every shard's admission limit for `capacity` given what the
    /// shards hold now. The caller holds the resize lock.
    ///
    /// Plans from one read of every shard, lowers limits first (each change
    /// reports the shard's exact usage at that instant) and raises limits
    /// only once the lowered shards are known to fit the plan, so admissions
    /// never see more room than `capacity` leaves. Shards may admit up to
    /// their old limit while the plan is being made; if that spoils it, plan
    /// again from fresh reads.
    pub(super) fn rebalance(&self, capacity: usize) {
        let capacity = capacity as u64;
        loop {
            let usage: Vec<u64> = self.shards.iter().map(|s| s.usage()).collect();
            let (closed, plan) = plan_limits(&usage, capacity);
            let mut footprint = 0;
            let mut raises = Vec::new();
            for (index, shard) in self.shards.iter().enumerate() {
                if plan[index] <= shard.limit() {
                    let held = shard.set_limit(plan[index]);
                    footprint += held.max(plan[index]);
                } else {
                    // Below its planned limit, this shard can only grow to
                    // its current, lower limit until raised; over it, it can
                    // only shrink. Either way the plan bounds it.
                    raises.push(index);
                    footprint += usage[index].max(plan[index]);
                }
            }
            match (closed, footprint <= capacity) {
                (false, true) => {
                    for index in raises {
                        self.shards[index].set_limit(plan[index]);
                    }
                    return;
                }
                // Every shard is closed and usage really is above capacity:
                // each later release on a shard that holds any is over its
                // limit of zero and rebalances again.
                (true, false) => return,
                // Releases made room while the shards were being closed, or a
                // shard admitted past the plan before its limit was lowered:
                // plan again from fresh reads.
                _ => continue,
            }
        }
    }
}

/// The admission limit of each shard for `capacity`, given each shard's
/// `usage`, and whether usage is above capacity (then every limit is 0).
/// Each shard's overshoot above its share is charged to the shards with room.
fn plan_limits(usage: &[u64], capacity: u64) -> (bool, Vec<u64>) {
    let count = usage.len();
    if usage.iter().sum::<u64>() > capacity {
        return (true, vec![0; count]);
    }
    let shares = (0..count).map(|i| limit_for(capacity as usize, count, i));
    let mut overshoot: u64 = usage
        .iter()
        .zip(shares.clone())
        .map(|(&u, share)| u.saturating_sub(share))
        .sum();
    let plan = usage
        .iter()
        .zip(shares)
        .map(|(&u, share)| {
            let cut = overshoot.min(share.saturating_sub(u));
            overshoot -= cut;
            share - cut
        })
        .collect();
    (false, plan)
}
