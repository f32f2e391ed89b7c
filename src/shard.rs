//! One shard: an atomic usage slot with its own limit, alone on its cache line.
//!
//! A shard packs its usage and a running count of the permits it has granted
//! into one 64-bit word, so that admitting is a single compare-and-swap that
//! both checks the limit and counts the acquisition:
//!
//! ```text
//!  63                         33   32   31                               0
//! +-----------------------------+-----+----------------------------------+
//! | granted, modulo 2^31        |carry| usage (permits held right now)   |
//! +-----------------------------+-----+----------------------------------+
//! ```
//!
//! * Admitting: load the word, compare its usage with the limit, and CAS in
//!   `word + (1 << 33) + 1`. A full shard is only ever read, never written.
//! * Releasing: `fetch_sub(1)`. Usage is at least 1 while a permit exists, so
//!   the subtraction never borrows from the count.
//! * The count wraps every 2^31 grants. The admission that wraps it sets the
//!   carry bit in the same CAS; a reader (or the next wrap) folds the carry into
//!   `epochs` under the shard's fold lock. An admission that would wrap while a
//!   carry is still unfolded folds it first, so no wrap is ever lost and
//!   `accepted` is exact forever. The fold lock is taken once per 2^31 grants
//!   on the admission path, and by stats readers: never by an ordinary acquire.
//!
//! # Orderings
//!
//! * Every read of the word is `Acquire`, the admitting CAS is `AcqRel` and
//!   the release `fetch_sub` is `Release`. The word's updates are all
//!   read-modify-writes, so they form one release sequence:
//!   - a grant synchronises with every release before it, so whatever a
//!     holder did before giving its permit back happens-before the work of
//!     the next holder: the guarantee a semaphore owes its users;
//!   - a thread that sees a shard's new state also sees everything the
//!     writer did before, on any shard. The refusal check relies on it: a
//!     prober that sees shard B taken by a thread that first released shard A
//!     must see shard A free when it re-reads it (loom found the false
//!     overload that `Relaxed` reads allow here).
//! * The bound itself needs no ordering: usage lives in one word and every
//!   change to it is a single atomic step that re-validates the limit.
//! * The limit is read `Relaxed`. It guards no other memory. An admission that
//!   reads the limit before a concurrent resize takes effect is ordered before
//!   the resize, which is the documented meaning of a resize: it never revokes
//!   what was granted. Coherence still makes a resize visible to every acquire
//!   that happens after it.
//! * `rejected`, the carry fold (under its lock) and the statistics reads are
//!   `Relaxed`: they are counters, and each is read as one snapshot of one word.

use crate::sync::{lock, AtomicU64, Mutex, Ordering};

/// The usage field: permits held right now.
const USAGE_MASK: u64 = (1 << 32) - 1;
/// Set by the admission that wraps the grant count, until it is folded.
const CARRY: u64 = 1 << 32;
/// Where the grant count starts.
const COUNT_SHIFT: u32 = 33;
/// The grant count wraps after this many grants.
const COUNT_WRAP: u64 = 1 << (64 - COUNT_SHIFT);
/// Added by one admission: one more grant, one more permit held.
const ADMIT: u64 = (1 << COUNT_SHIFT) | 1;

/// The largest limit one shard can hold: usage must fit its 32-bit field.
pub(crate) const MAX_SHARD_LIMIT: u64 = USAGE_MASK;

/// An atomic usage slot. Wrapped in `CachePadded` by its owner.
#[derive(Debug)]
pub(crate) struct Shard {
    word: AtomicU64,
    limit: AtomicU64,
    rejected: AtomicU64,
    /// Completed wraps of the grant count.
    epochs: Mutex<u64>,
}

/// What one shard reports: each field a snapshot of one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardCounts {
    pub(crate) limit: u64,
    pub(crate) usage: u64,
    pub(crate) accepted: u64,
    pub(crate) rejected: u64,
}

impl Shard {
    pub(crate) fn new(limit: u64) -> Self {
        debug_assert!(limit <= MAX_SHARD_LIMIT);
        Shard {
            word: AtomicU64::new(0),
            limit: AtomicU64::new(limit),
            rejected: AtomicU64::new(0),
            epochs: Mutex::new(0),
        }
    }

    /// Takes one unit of usage if the shard is below its limit.
    ///
    /// A full shard is only read. Retries only while other threads change the
    /// word under it, so `Err` means the shard was seen full; it carries the
    /// word that was seen, for [`word`](Self::word) to re-validate.
    #[inline]
    pub(crate) fn try_admit(&self) -> Result<(), u64> {
        let limit = self.limit.load(Ordering::Relaxed);
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            if current & USAGE_MASK >= limit {
                return Err(current);
            }
            let mut next = current.wrapping_add(ADMIT);
            if next >> COUNT_SHIFT == 0 {
                // This grant wraps the count: flag the carry in the same CAS.
                if current & CARRY != 0 {
                    current = self.fold_carry();
                    continue;
                }
                next |= CARRY;
            }
            match self.word.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => current = actual,
            }
        }
    }

    /// Gives back one unit of usage taken by [`try_admit`](Self::try_admit).
    #[inline]
    pub(crate) fn release(&self) {
        let previous = self.word.fetch_sub(1, Ordering::Release);
        debug_assert!(previous & USAGE_MASK > 0, "released a shard with no usage");
    }

    /// Counts one refused acquire. The only write of the overload path.
    #[inline]
    pub(crate) fn record_rejection(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn set_limit(&self, limit: u64) {
        debug_assert!(limit <= MAX_SHARD_LIMIT);
        self.limit.store(limit, Ordering::Relaxed);
    }

    pub(crate) fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    /// The whole word. Every admission and release changes it (the grant
    /// count makes it free of ABA for 2^31 admissions), so an unchanged word
    /// means an unchanged shard.
    #[inline]
    pub(crate) fn word(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    pub(crate) fn usage(&self) -> u64 {
        self.word.load(Ordering::Relaxed) & USAGE_MASK
    }

    /// Moves a pending carry into `epochs`; returns the word as it now is.
    #[cold]
    #[inline(never)]
    fn fold_carry(&self) -> u64 {
        let mut epochs = lock(&self.epochs);
        let word = self.word.fetch_and(!CARRY, Ordering::Relaxed);
        if word & CARRY != 0 {
            *epochs += 1;
        }
        word & !CARRY
    }

    /// A snapshot of the shard's counters.
    pub(crate) fn counts(&self) -> ShardCounts {
        let mut epochs = lock(&self.epochs);
        let mut word = self.word.load(Ordering::Relaxed);
        if word & CARRY != 0 {
            // Only a holder of the fold lock clears the carry, so it is still
            // set and this takes it over together with the count it belongs to.
            word = self.word.fetch_and(!CARRY, Ordering::Relaxed) & !CARRY;
            *epochs += 1;
        }
        ShardCounts {
            limit: self.limit(),
            usage: word & USAGE_MASK,
            accepted: *epochs * COUNT_WRAP + (word >> COUNT_SHIFT),
            rejected: self.rejected.load(Ordering::Relaxed),
        }
    }

    /// Puts the grant count just below a wrap, to test the carry.
    #[cfg(all(test, not(sidejob_loom)))]
    fn set_count_for_test(&self, count: u64) {
        self.word.store(count << COUNT_SHIFT, Ordering::Relaxed);
    }
}

/// The limit of shard `index` when `capacity` is spread over `shards` shards.
///
/// Limits sum to `capacity` exactly and differ by at most one: the remainder
/// goes to the lowest shards. Each limit only grows as `capacity` grows, so a
/// resize moves every shard in the same direction.
pub(crate) fn limit_for(capacity: usize, shards: usize, index: usize) -> u64 {
    let base = capacity / shards;
    let extra = usize::from(index < capacity % shards);
    (base + extra) as u64
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
        shard.release();
        assert_ne!(shard.word(), before);
        assert!(shard.try_admit().is_ok());
        let counts = shard.counts();
        assert_eq!((counts.usage, counts.accepted), (2, 3));
    }

    #[test]
    fn accepted_stays_exact_across_count_wraps() {
        let shard = Shard::new(10);
        shard.set_count_for_test(COUNT_WRAP - 2);
        for n in 1..=5u64 {
            assert!(shard.try_admit().is_ok());
            shard.release();
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
    fn limits_spread_the_remainder_and_grow_monotonically() {
        for shards in 1..=9 {
            let mut previous = vec![0; shards];
            for capacity in 0..=40 {
                let limits: Vec<u64> = (0..shards)
                    .map(|i| limit_for(capacity, shards, i))
                    .collect();
                assert_eq!(limits.iter().sum::<u64>(), capacity as u64);
                let (min, max) = (limits.iter().min(), limits.iter().max());
                assert!(max.unwrap() - min.unwrap() <= 1);
                assert!(limits.iter().zip(&previous).all(|(new, old)| new >= old));
                previous = limits;
            }
        }
    }
}
