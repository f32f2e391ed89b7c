//! One shard: an atomic usage word with its own limit, alone on its cache line.
//!
//! A shard packs everything admission needs into one 64-bit word, so that
//! admitting is a single compare-and-swap that checks the limit, takes the
//! slot and counts the grant:
//!
//! ```text
//!  63            49   48   47               24   23                0
//! +----------------+-----+-------------------+-------------------+
//! | granted mod 2^15|carry| limit             | usage             |
//! +----------------+-----+-------------------+-------------------+
//! ```
//!
//! The limit is the shard's *lease*: the part of the capacity it holds right
//! now. Usage never exceeds it. The lease moves (see the
//! [counter](super::counter)): an admission that found its home shard full
//! leases from the [reserve](super::reserve) or takes one free slot of
//! another shard, and a sweep gathers free slots back into the reserve.
//!
//! * Admitting: load the word, compare its usage with its limit, and CAS in
//!   `word + (1 << 49) + 1`. A full shard is only ever read, never written.
//! * Admitting with a lease ([`admit_leased`](Shard::admit_leased)): usage,
//!   limit and grant count grow in one CAS, so the leased slots appear on the
//!   shard already taken by the admission that brought them.
//! * Releasing: `fetch_sub(1)`. Usage is at least 1 while a permit exists, so
//!   the subtraction never borrows.
//! * Giving slots away ([`take_slack`](Shard::take_slack)): a CAS lowers the
//!   limit, never below the usage, so a held slot is never taken.
//! * The grant count wraps every 2^15 grants. The admission that wraps it sets
//!   the carry bit in the same CAS. The next admission to wrap it folds the
//!   carry into `folds` first, so no wrap is lost and `accepted` is exact
//!   forever. `folds` is a sequence counter: twice the number of folds, odd
//!   while one is under way. Folders take turns by moving it from even to
//!   odd; readers never write it, and retry if it moved while they read the
//!   word. So reading the counters takes no lock at all.
//! * Every admission, release and lease change changes the word (the grant
//!   count keeps it free of ABA for 2^15 grants), so an unchanged word means
//!   an unchanged shard. The refusal check relies on that.
//!
//! # Orderings
//!
//! * Every read of the word is `Acquire`, the admitting and lease CASes are
//!   `AcqRel` and the release `fetch_sub` is `SeqCst`. The word's updates are
//!   all read-modify-writes, so they form one release sequence:
//!   - a grant synchronises with every release before it, so whatever a
//!     holder did before giving its permit back happens-before the work of
//!     the next holder: the guarantee a semaphore owes its users;
//!   - a thread that sees a shard's new state also sees everything the
//!     writer did before, on any shard. The refusal check relies on it: a
//!     prober that sees shard B taken by a thread that first released shard A
//!     must see shard A free when it re-reads it (loom found the false
//!     overload that `Relaxed` reads allow here).
//! * The release is `SeqCst` because it is one half of a store-then-load
//!   pair with the sweep: the releaser then reads the reserve's mode, the
//!   sweeper sets the mode and then reads the shards, and one of them must
//!   see the other (see the [counter](super::counter)). `take_slack`'s CAS is
//!   `SeqCst` for the same pair. On x86 both cost what `AcqRel` does.
//! * The bound itself needs no ordering: usage and limit live in one word, and
//!   every change to it is a single atomic step that re-validates both.
//! * The fold and the counter snapshot use `SeqCst` on `folds` and on the
//!   word: a reader's two reads of `folds` must bracket its read of the word
//!   in one total order with the folder's steps (odd, clear carry, even).
//!   Both are cold: once per 2^15 grants, and per stats call.

use super::priority::PRIORITIES;
use super::samples::ShardSamples;
use crate::sync::{spin_loop, AtomicU64, Ordering};

/// Width of the usage and limit fields.
const FIELD_BITS: u32 = 24;
/// The usage field: permits held right now.
const USAGE_MASK: u64 = (1 << FIELD_BITS) - 1;
/// Where the limit field starts.
const LIMIT_SHIFT: u32 = FIELD_BITS;
/// The limit field, in place.
const LIMIT_MASK: u64 = USAGE_MASK << LIMIT_SHIFT;
/// Set by the admission that wraps the grant count, until it is folded.
const CARRY: u64 = 1 << (2 * FIELD_BITS);
/// Where the grant count starts.
const COUNT_SHIFT: u32 = 2 * FIELD_BITS + 1;
/// The grant count wraps after this many grants.
const COUNT_WRAP: u64 = 1 << (64 - COUNT_SHIFT);
/// Added by one admission: one more grant, one more permit held.
const ADMIT: u64 = (1 << COUNT_SHIFT) | 1;

/// The largest limit one shard can hold.
pub(crate) const MAX_SHARD_LIMIT: u64 = USAGE_MASK;

#[inline]
fn usage_of(word: u64) -> u64 {
    word & USAGE_MASK
}

#[inline]
pub(crate) fn limit_of(word: u64) -> u64 {
    (word & LIMIT_MASK) >> LIMIT_SHIFT
}

/// One shard's atomic usage word. Wrapped in `CachePadded` by its owner.
#[derive(Debug)]
pub(crate) struct Shard {
    word: AtomicU64,
    /// Twice the completed wraps of the grant count; odd during a fold.
    folds: AtomicU64,
    /// Refused admissions whose probe started here, by priority. On the
    /// shard's own line: a refusal reads this shard's word anyway, so
    /// counting it touches no other line of the thread's. (A prober of
    /// another shard that reads this word may take a cache miss when a
    /// refusal is counted; it compares the word, which did not change.)
    rejected: [AtomicU64; PRIORITIES],
    /// An adaptive limit's samples of this shard's permits (see
    /// [`samples`](super::samples)); untouched while none is on. On the
    /// shard's own line, which a sampled release writes anyway.
    pub(crate) samples: ShardSamples,
}

/// What one shard reports: each field a snapshot of one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardCounts {
    pub(crate) usage: u64,
    pub(crate) limit: u64,
    pub(crate) accepted: u64,
}

impl Shard {
    pub(crate) fn new(limit: u64) -> Self {
        debug_assert!(limit <= MAX_SHARD_LIMIT);
        Shard {
            word: AtomicU64::new(limit << LIMIT_SHIFT),
            folds: AtomicU64::new(0),
            rejected: [0; PRIORITIES].map(AtomicU64::new),
            samples: ShardSamples::default(),
        }
    }

    /// Takes one unit of usage if the shard is below its limit.
    ///
    /// A full shard is only read. Retries only while other threads change the
    /// word under it, so `Err` means the shard was seen full; it carries the
    /// word that was seen, for [`word`](Self::word) to re-validate. `Ok`
    /// carries the grant's number on this shard (modulo 2^15).
    #[inline]
    pub(crate) fn try_admit(&self) -> Result<u64, u64> {
        self.grant(Ordering::AcqRel, |current| {
            (usage_of(current) < limit_of(current)).then(|| current.wrapping_add(ADMIT))
        })
    }

    /// One grant by CAS: `step` makes the next word from the current one
    /// (`None`: the shard cannot grant, and nothing is written). A grant
    /// that wraps the count flags the carry in the same CAS, folding a
    /// pending one first. `Ok` with the grant's number, `Err` with the word
    /// `step` refused. `success` is the CAS's ordering.
    #[inline(always)]
    fn grant(&self, success: Ordering, step: impl Fn(u64) -> Option<u64>) -> Result<u64, u64> {
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let Some(mut next) = step(current) else {
                return Err(current);
            };
            if next >> COUNT_SHIFT == 0 {
                // This grant wraps the count: flag the carry in the same CAS.
                if current & CARRY != 0 {
                    current = self.fold_carry();
                    continue;
                }
                next |= CARRY;
            }
            match self
                .word
                .compare_exchange_weak(current, next, success, Ordering::Acquire)
            {
                Ok(_) => return Ok(current >> COUNT_SHIFT),
                Err(actual) => current = actual,
            }
        }
    }

    /// Gives back one unit of usage taken by [`try_admit`](Self::try_admit)
    /// or [`admit_leased`](Self::admit_leased). The slot stays leased to this
    /// shard, free for its next admission, unless the shard was over its
    /// limit (closed by a shrink while it held more): then the slot leaves
    /// the shard, and the release returns `true` so that the caller pays it
    /// to the reserve.
    #[inline]
    #[must_use]
    pub(crate) fn release(&self) -> bool {
        let previous = self.word.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(usage_of(previous) > 0, "released a shard with no usage");
        usage_of(previous) > limit_of(previous)
    }

    /// Gives back one unit of usage and takes its slot off the shard: the
    /// limit drops with the usage (unless the shard is over its limit,
    /// where the slot leaves anyway). The caller hands the slot to the
    /// reserve.
    pub(crate) fn release_leaving(&self) {
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            debug_assert!(usage_of(current) > 0, "released a shard with no usage");
            let next = if usage_of(current) > limit_of(current) {
                current - 1
            } else {
                current - 1 - (1 << LIMIT_SHIFT)
            };
            match self.word.compare_exchange_weak(
                current,
                next,
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    /// Admits one unit that brings `lease` more slots with it: usage grows
    /// by one and the limit becomes `max(usage, limit) + lease`, whatever
    /// the shard held. Returns the grant's number, as
    /// [`try_admit`](Self::try_admit) does.
    ///
    /// The caller took the `lease` slots from the reserve or another shard;
    /// until this CAS they were counted nowhere, held by this admission. On
    /// a shard over its limit (closed by a shrink) the lease reopens it: the
    /// slots it holds stay counted once, in `max(usage, limit)`.
    pub(crate) fn admit_leased(&self, lease: u64) -> u64 {
        // `SeqCst`: the chunk lease's check of the mode that follows pairs
        // with the sweep, as a release does.
        let granted = self.grant(Ordering::SeqCst, |current| {
            let limit = usage_of(current).max(limit_of(current)) + lease;
            debug_assert!(limit <= MAX_SHARD_LIMIT);
            Some((current.wrapping_add(ADMIT) & !LIMIT_MASK) | (limit << LIMIT_SHIFT))
        });
        match granted {
            Ok(grant) => grant,
            Err(_) => unreachable!("a lease always admits"),
        }
    }

    /// Lowers the limit by up to `most` of its free slots (limit above
    /// usage): `Ok` with how many it took (at least one), or `Err` with the
    /// word as it was seen when the shard had no free slot.
    #[inline]
    pub(crate) fn take_slack(&self, most: u64) -> Result<u64, u64> {
        let mut current = self.word.load(Ordering::SeqCst);
        loop {
            let slack = limit_of(current).saturating_sub(usage_of(current));
            if slack == 0 {
                return Err(current);
            }
            let taken = slack.min(most);
            match self.word.compare_exchange_weak(
                current,
                current - (taken << LIMIT_SHIFT),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Ok(taken),
                Err(actual) => current = actual,
            }
        }
    }

    /// The limit admissions are checked against right now.
    #[cfg(all(test, not(sidejob_loom)))]
    fn limit(&self) -> u64 {
        limit_of(self.word.load(Ordering::Acquire))
    }

    /// The whole word, to tell whether the shard changed since it was seen.
    #[inline]
    pub(crate) fn word(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    /// Free slots (limit above usage) and the limit, right now; read in
    /// the sweep's store-then-load pair, so `SeqCst`.
    pub(crate) fn slack_and_limit(&self) -> (u64, u64) {
        let word = self.word.load(Ordering::SeqCst);
        (
            limit_of(word).saturating_sub(usage_of(word)),
            limit_of(word),
        )
    }

    /// Closes the shard: its limit drops to 0, below the slots it holds,
    /// so it admits nothing and each of its releases leaves it (see
    /// [`release`](Self::release)). Returns the free slots it had.
    pub(crate) fn close(&self) -> u64 {
        let previous = self.word.fetch_and(!LIMIT_MASK, Ordering::SeqCst);
        limit_of(previous).saturating_sub(usage_of(previous))
    }

    /// Permits held on this shard right now, read without ordering: a
    /// figure for a sample, not for admission.
    #[inline]
    pub(crate) fn held(&self) -> u64 {
        usage_of(self.word.load(Ordering::Relaxed))
    }

    /// Permits held on this shard right now.
    #[cfg(all(test, not(sidejob_loom)))]
    fn usage(&self) -> u64 {
        usage_of(self.word.load(Ordering::Acquire))
    }

    /// Counts a refusal of the priority at `index` that started here. A
    /// `Relaxed` counter: it orders nothing.
    #[inline]
    pub(crate) fn count_refusal(&self, index: usize) {
        self.rejected[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Refusals that started here, ever, by priority index.
    pub(crate) fn refusals(&self) -> [u64; PRIORITIES] {
        self.rejected
            .each_ref()
            .map(|count| count.load(Ordering::Relaxed))
    }

    /// Moves a pending carry into `folds`; returns the word as it now is.
    #[cold]
    #[inline(never)]
    fn fold_carry(&self) -> u64 {
        // Take the folder's turn: move the sequence from even to odd.
        let mut sequence = self.folds.load(Ordering::SeqCst);
        loop {
            if sequence & 1 == 1 {
                spin_loop();
                sequence = self.folds.load(Ordering::SeqCst);
                continue;
            }
            match self.folds.compare_exchange_weak(
                sequence,
                sequence + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => break,
                Err(actual) => sequence = actual,
            }
        }
        let word = self.word.fetch_and(!CARRY, Ordering::SeqCst);
        let folded = u64::from(word & CARRY != 0);
        self.folds.store(sequence + 2 * folded, Ordering::SeqCst);
        word & !CARRY
    }

    /// A snapshot of the shard's counters. Reads only; never waits for the
    /// admission path, which may only make it retry.
    pub(crate) fn counts(&self) -> ShardCounts {
        loop {
            let before = self.folds.load(Ordering::SeqCst);
            if before & 1 == 1 {
                spin_loop();
                continue;
            }
            let word = self.word.load(Ordering::SeqCst);
            if self.folds.load(Ordering::SeqCst) == before {
                let wraps = before / 2 + u64::from(word & CARRY != 0);
                return ShardCounts {
                    usage: usage_of(word),
                    limit: limit_of(word),
                    accepted: wraps * COUNT_WRAP + (word >> COUNT_SHIFT),
                };
            }
        }
    }

    /// Puts the grant count at `count`, to test the carry.
    #[cfg(all(test, not(sidejob_loom)))]
    fn set_count_for_test(&self, count: u64) {
        let limit = self.limit();
        self.word.store(
            (count << COUNT_SHIFT) | (limit << LIMIT_SHIFT),
            Ordering::Relaxed,
        );
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_and_reads_full_without_writing() {
        let shard = Shard::new(2);
        assert!(shard.try_admit().is_ok());
        assert!(shard.try_admit().is_ok());
        let before = shard.word();
        assert_eq!(shard.try_admit(), Err(before));
        assert_eq!(shard.word(), before);
        assert!(!shard.release());
        assert_ne!(shard.word(), before);
        assert!(shard.try_admit().is_ok());
        let counts = shard.counts();
        assert_eq!((counts.usage, counts.accepted), (2, 3));
    }

    #[test]
    fn leases_arrive_taken_and_slack_leaves_without_touching_held_slots() {
        let shard = Shard::new(0);
        assert!(shard.try_admit().is_err());
        assert_eq!(shard.admit_leased(3), 0); // one taken, two free
        assert_eq!((shard.usage(), shard.limit()), (1, 3));
        assert_eq!(shard.take_slack(5), Ok(2));
        assert_eq!((shard.usage(), shard.limit()), (1, 1));
        let full = shard.word();
        assert_eq!(shard.take_slack(1), Err(full)); // the held slot stays
        assert!(!shard.release());
        assert_eq!(shard.take_slack(1), Ok(1));
        assert_eq!((shard.usage(), shard.limit()), (0, 0));
        assert_eq!(shard.counts().accepted, 1);
    }

    #[test]
    fn a_closed_shard_admits_nothing_and_its_releases_leave_it() {
        let shard = Shard::new(3);
        assert!(shard.try_admit().is_ok());
        assert!(shard.try_admit().is_ok());
        assert_eq!(shard.close(), 1); // one free slot went with the limit
        assert!(shard.try_admit().is_err());
        assert!(shard.release()); // 2 held, limit 0: over
        assert_eq!(shard.admit_leased(1), 2); // a lease reopens it: limit 1 + 1
        assert!(!shard.release()); // 1 held, limit 2
        assert_eq!(shard.take_slack(5), Ok(1));
    }

    #[test]
    fn accepted_stays_exact_across_count_wraps() {
        let shard = Shard::new(10);
        shard.set_count_for_test(COUNT_WRAP - 2);
        for n in 1..=5u64 {
            assert!(shard.try_admit().is_ok());
            assert!(!shard.release());
            assert_eq!(shard.counts().accepted, COUNT_WRAP - 2 + n);
        }
        // A second wrap while the first carry is still pending folds it first.
        let shard = Shard::new(10);
        shard.set_count_for_test(COUNT_WRAP - 1);
        assert!(shard.try_admit().is_ok()); // wraps, carry pending
        shard
            .word
            .fetch_add((COUNT_WRAP - 1) << COUNT_SHIFT, Ordering::Relaxed);
        assert!(shard.try_admit().is_ok()); // wraps again: folds, then carries
        let counts = shard.counts();
        assert_eq!(counts.accepted, 2 * COUNT_WRAP);
        assert_eq!(counts.usage, 2);
    }

    #[test]
    fn concurrent_readers_see_accepted_grow_exactly_across_wraps() {
        use std::sync::atomic::AtomicBool;
        const PER_THREAD: u64 = 3 * COUNT_WRAP;
        let shard = Shard::new(4);
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let admitters: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| {
                        let mut admitted = 0;
                        while admitted < PER_THREAD {
                            if shard.try_admit().is_ok() {
                                assert!(!shard.release());
                                admitted += 1;
                            }
                        }
                    })
                })
                .collect();
            scope.spawn(|| {
                let mut last = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let accepted = shard.counts().accepted;
                    assert!(accepted >= last, "accepted went back: {last} -> {accepted}");
                    assert!(accepted <= 2 * PER_THREAD);
                    last = accepted;
                }
            });
            for admitter in admitters {
                admitter.join().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        assert_eq!(shard.counts().accepted, 2 * PER_THREAD);
        assert_eq!(shard.counts().usage, 0);
    }
}
