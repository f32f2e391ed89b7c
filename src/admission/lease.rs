//! The slow path of an admission: the home shard had no free slot for it.
//!
//! In order, each round:
//!
//! 1. **Lease from the reserve**, leaving the slots the priority must keep
//!    free. While capacity is plentiful a lease takes a chunk (the reserve
//!    over the shard count), so the next admissions on this shard are fast
//!    ones; while it is scarce, exactly one slot. The leased slots arrive on
//!    the home shard with the admission, in one CAS.
//! 2. If the reserve had nothing to spare and capacity is **scarce**, no
//!    shard keeps a free slot: refuse.
//! 3. A priority with a share below 1 **sweeps** first when capacity is
//!    plentiful, so the reserve counts every free slot and its check is
//!    exact. Any priority waits out another thread's sweep: its slots in
//!    transit are free slots nobody's read can see.
//! 4. Otherwise **move one slot home**: the home shard's own free slot, or
//!    one taken off another shard's limit. Capacity follows the admissions.
//! 5. Every shard and the reserve were full: read them all again. Unchanged,
//!    they were full at one moment between the two reads, and the refusal is
//!    genuine. It then sweeps, so capacity is scarce and the next refusals
//!    read the reserve alone: one line, whatever the shard count. Changed,
//!    run another round, at most [`ROUNDS`] in all, so a caller never spins.
//!
//! So a refusal reads every shard only on the way into scarcity, once per
//! spell of overload; the refusals of the spell read one word. Capacity
//! turns plentiful again when a lease finds half of it free.
//!
//! # Orderings
//!
//! None of its own: the shard words' and the reserve's (see
//! [`counter`](super::counter)). The moved slot is in the mover's hand
//! between taking it off the other shard and admitting it at home: it is
//! held by this admission all along.

use smallvec::SmallVec;

use crate::error::Overload;
use crate::sync::yield_now;

use super::counter::{ShardedCounter, FROM_RESERVE};
use super::priority::Priority;
use super::reserve::{Mode, View};

/// How many rounds a refusal may take when shards change under it.
const ROUNDS: usize = 4;

/// How many times a share-limited admission yields while another thread's
/// sweep runs.
const SWEEP_WAIT: usize = if cfg!(sidejob_loom) { 2 } else { 1000 };

/// Probes of up to this many shards keep what they saw on the stack; wider
/// ones allocate, on the refusal path only.
const INLINE_PROBE: usize = 32;

/// What moving a slot home found.
enum Move {
    /// A slot is home and admitted there, with the grant's number.
    Admitted(u64),
    /// Everything was full, twice the same: a genuine refusal.
    Full,
    /// Something changed between the two reads.
    Changed,
}

impl ShardedCounter {
    /// Admits one slot of `priority` for a thread whose home is `start`,
    /// when the fast path found no free slot there (or the priority may not
    /// use it).
    #[cold]
    #[inline(never)]
    pub(super) fn admit_slow(
        &self,
        start: usize,
        priority: Priority,
    ) -> Result<(usize, u64), Overload> {
        let keep = if self.shares.whole(priority) {
            0
        } else {
            self.shares.keep(priority, self.capacity()) as i64
        };
        for _ in 0..ROUNDS {
            let seen = match self.reserve.lease(keep, |seen| self.lease_size(seen, keep)) {
                Ok((lease, left)) => {
                    let grant = self.shards[start].admit_leased(lease as u64);
                    if lease > 1 {
                        // A sweep may have begun since the lease: the
                        // chunk's free slots must not stay on the shard.
                        self.settle(start);
                    }
                    // Leased while capacity stays scarce (always one slot):
                    // its release hands the slot straight back, without
                    // reading the mode.
                    let scarce = left != Mode::Spread;
                    let ticket = if scarce { start | FROM_RESERVE } else { start };
                    return Ok((ticket, grant));
                }
                Err(seen) => seen,
            };
            match seen.mode() {
                Mode::Scarce => return Err(self.refused(start, priority)),
                Mode::Sweeping => {
                    // A sweep may hold free slots in transit, in neither a
                    // shard nor the reserve: no read proves "full" until it
                    // is done. Wait it out (short: it takes no lock); then
                    // capacity is scarce and the reserve's word is exact.
                    self.await_sweep();
                    continue;
                }
                _ if keep > 0 => {
                    self.sweep();
                    self.await_sweep();
                    continue;
                }
                _ => {}
            }
            match self.move_home(start, seen) {
                Move::Admitted(grant) => return Ok((start, grant)),
                Move::Full => {
                    let refusal = self.refused(start, priority);
                    // Scarce from here: the next refusals read one word.
                    self.sweep();
                    return Err(refusal);
                }
                Move::Changed => continue,
            }
        }
        Err(self.refused(start, priority))
    }

    /// Waits out a sweep that another thread runs: its slots are on their
    /// way to the reserve, which a priority with a share below 1 must count
    /// before it refuses. A sweep takes no lock and waits for nothing, so
    /// this is short; it yields the thread meanwhile, and gives up after
    /// [`SWEEP_WAIT`] yields (a sweeper descheduled that long).
    #[cold]
    fn await_sweep(&self) {
        for _ in 0..SWEEP_WAIT {
            if self.reserve.load().mode() != Mode::Sweeping {
                return;
            }
            yield_now();
        }
    }

    /// How many slots a lease takes from a reserve seen as `seen`, and the
    /// mode it leaves.
    fn lease_size(&self, seen: View, keep: i64) -> (i64, Mode) {
        let free = seen.free();
        match seen.mode() {
            Mode::Spread if keep == 0 => (free / self.shards.len() as i64, Mode::Spread),
            Mode::Scarce if self.plentiful(free) => (1, Mode::Spread),
            mode => (1, mode),
        }
    }

    /// Whether `free` slots in the reserve are enough to leave scarcity:
    /// at least two, and half the capacity beyond what priorities keep.
    pub(super) fn plentiful(&self, free: i64) -> bool {
        let capacity = self.capacity();
        free >= 2 && free >= (capacity / 2 + self.shares.most_kept(capacity)) as i64
    }

    /// Brings one free slot to shard `start` and admits it there: the home
    /// shard's own, or one off another shard. `reserve` is the reserve as
    /// it was seen with nothing to lease.
    fn move_home(&self, start: usize, reserve: View) -> Move {
        let count = self.shards.len();
        let next = |index: usize| if index + 1 == count { 0 } else { index + 1 };
        // What each shard looked like when it was seen full, in probe order.
        let mut seen: SmallVec<[u64; INLINE_PROBE]> = SmallVec::new();
        match self.shards[start].try_admit() {
            Ok(grant) => return Move::Admitted(grant),
            Err(word) => seen.push(word),
        }
        let mut index = start;
        for _ in 1..count {
            index = next(index);
            match self.shards[index].take_slack(1) {
                Ok(_) => {
                    return Move::Admitted(self.shards[start].admit_leased(1));
                }
                Err(word) => seen.push(word),
            }
        }
        let now = self.reserve.load();
        if now != reserve || now.moving() {
            return Move::Changed;
        }
        let mut index = start;
        let unchanged = seen.iter().all(|&word| {
            let same = self.shards[index].word() == word;
            index = next(index);
            same
        });
        if unchanged {
            Move::Full
        } else {
            Move::Changed
        }
    }
}
