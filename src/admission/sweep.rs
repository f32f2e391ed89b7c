//! Sweeping and resizing: free slots back to the reserve, capacity in and
//! out of it.
//!
//! A **sweep** moves every shard's free slots (limit above usage) into the
//! reserve and leaves capacity `Scarce`, so that a refusal can read the
//! reserve alone. It runs after a genuine refusal while capacity was
//! plentiful, before a priority with a share below 1 checks the reserve,
//! and after a shrink that leaves the reserve in debt. One sweep runs at a
//! time: the one that moved the mode to `Sweeping`. While it runs, releases
//! hand their free slots back themselves, so once it has passed every shard
//! none keeps a free slot. Slots it has taken off a shard and not yet added
//! to the reserve are marked `moving` there, and a refusal's snapshot is not
//! valid while they are: they are free slots in nobody's hand.
//!
//! A **resize** changes the reserve: a grow adds to it, and the slots reach
//! the shards through leases. A shrink takes from it, into debt if the
//! reserve holds less: then the held permits are more than the new
//! capacity, and nothing may be admitted until enough are released. So the
//! shrink's sweep **closes** the shards: each limit drops to 0, below what
//! the shard holds. A closed shard admits nothing, and each of its releases
//! leaves it and pays the reserve (one `fetch_add`, no lock); once the debt
//! is paid, leases from the reserve reopen the shards. The invariant, with
//! `max(usage, limit)` per shard: the shards' maxima, the reserve and the
//! slots in transit sum to the capacity, and every admission takes a slot
//! that is free under it.
//!
//! # Orderings
//!
//! The reserve's and the shards' (see [`counter`](super::counter)); resizes
//! are serialised by the counter's resize mutex, which admissions and
//! releases never take.

use crate::sync::{lock, seqcst_pair, try_lock, yield_now, Ordering};

use super::counter::ShardedCounter;
use super::reserve::Mode;

impl ShardedCounter {
    /// Gathers every shard's free slots into the reserve and leaves
    /// capacity scarce; does nothing if a sweep runs or capacity already is.
    #[cold]
    #[inline(never)]
    pub(super) fn sweep(&self) {
        if self.reserve.switch(Mode::Spread, Mode::Sweeping) {
            self.sweep_claimed();
        }
    }

    /// The sweep proper, by the thread that moved the mode to `Sweeping`.
    /// Closes each shard while the reserve is in debt.
    fn sweep_claimed(&self) {
        seqcst_pair();
        for shard in self.shards.iter() {
            let debt = self.reserve.load().free() < 0;
            let (slack, limit) = shard.slack_and_limit();
            if slack == 0 && !(debt && limit > 0) {
                continue;
            }
            self.reserve.set_moving(true, 0);
            let freed = if debt {
                shard.close()
            } else {
                shard.take_slack(u64::MAX).unwrap_or(0)
            };
            self.reserve.set_moving(false, freed as i64);
        }
        self.reserve.switch(Mode::Sweeping, Mode::Scarce);
    }

    /// Sets the capacity to `capacity`, already checked.
    pub(super) fn resize_to(&self, capacity: usize) {
        let _resizing = lock(&self.resize);
        self.resize_locked(capacity);
    }

    /// Sets the capacity to `capacity` (already checked) if it is still
    /// `expected` and no other resize is under way: an adaptive limit's
    /// window, which must neither undo a user's resize that came between
    /// its read and its write nor wait for one on a releasing thread.
    /// Whether it resized.
    pub(crate) fn resize_from(&self, expected: usize, capacity: usize) -> bool {
        let Some(_resizing) = try_lock(&self.resize) else {
            return false; // a resize is under way (it wins), or a figures' last-resort read
        };
        if self.capacity.load(Ordering::Relaxed) != expected {
            return false; // resized since the window read it: that wins
        }
        self.resize_locked(capacity);
        true
    }

    /// [`resize_to`](Self::resize_to) under the resize lock.
    fn resize_locked(&self, capacity: usize) {
        // Half done from here until the reserve has the difference: a
        // snapshot keeps no read taken meanwhile (see the counter's
        // `# Orderings`).
        self.resizes.fetch_add(1, Ordering::SeqCst);
        let old = self.capacity.swap(capacity, Ordering::SeqCst);
        let now = self.reserve.add(capacity as i64 - old as i64);
        self.resizes.fetch_add(1, Ordering::SeqCst);
        if now.free() >= 0 {
            return;
        }
        // In debt: whatever the mode, this shrink's own sweep must close the
        // shards. Wait out a sweep already running (it is short and never
        // waits itself), then claim the next.
        loop {
            let seen = self.reserve.load();
            if seen.mode() == Mode::Sweeping {
                yield_now();
                continue;
            }
            if self.reserve.update(seen, 0, Mode::Sweeping).is_ok() {
                break;
            }
        }
        self.sweep_claimed();
    }
}
