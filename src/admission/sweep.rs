//! Sweeping and resizing: free slots back to the reserve, capacity in and
//! out of it.
//!
//! A **sweep** moves every shard's free slots (limit above usage) into the
//! reserve and leaves capacity `Scarce`, so that a refusal can read the
//! reserve alone. It runs after a genuine refusal while capacity was
//! plentiful, when a shrink leaves the reserve in debt, and before a
//! priority with a share below 1 checks the reserve. One sweep runs at a
//! time: the one that moved the mode from `Spread` to `Sweeping`. While it
//! runs, releases hand their free slots back themselves, so once it has
//! passed every shard none keeps a free slot. Slots it has taken off a
//! shard and not yet added to the reserve are marked `moving` there, and a
//! refusal's snapshot is not valid while they are: they are free slots in
//! nobody's hand.
//!
//! A **resize** changes the reserve: a grow adds to it and the slots reach
//! the shards through leases; a shrink takes from it, into debt if the
//! reserve holds less. In debt nothing can lease, and a sweep makes every
//! release hand its slot to the reserve, paying the debt back: no shard is
//! ever over its limit, and no release takes a lock.
//!
//! # Orderings
//!
//! The reserve's and the shards' (see [`counter`](super::counter)); resizes
//! are serialised by the counter's resize mutex, which admissions and
//! releases never take.

use crate::sync::{lock, Ordering};

use super::counter::ShardedCounter;
use super::reserve::Mode;

impl ShardedCounter {
    /// Gathers every shard's free slots into the reserve and leaves
    /// capacity scarce; does nothing if a sweep runs or capacity already is.
    #[cold]
    #[inline(never)]
    pub(super) fn sweep(&self) {
        if !self.reserve.switch(Mode::Spread, Mode::Sweeping) {
            return;
        }
        for shard in self.shards.iter() {
            if shard.slack() == 0 {
                continue;
            }
            self.reserve.set_moving(true, 0);
            let taken = shard.take_slack(u64::MAX).unwrap_or(0);
            self.reserve.set_moving(false, taken as i64);
        }
        self.reserve.switch(Mode::Sweeping, Mode::Scarce);
    }

    /// Sets the capacity to `capacity`, already checked.
    pub(super) fn resize_to(&self, capacity: usize) {
        let _resizing = lock(&self.resize);
        let old = self.capacity.swap(capacity, Ordering::Relaxed);
        let now = self.reserve.add(capacity as i64 - old as i64);
        if now.free() < 0 {
            self.sweep();
        }
    }
}
