//! A shard whose slots are given back by one thread: the usage count of a
//! worker pool's mailbox, split between the senders' line and the worker's.
//!
//! A [`Shard`](super::shard::Shard) keeps its usage in one word that admitting
//! threads CAS and releasing threads `fetch_sub`. In a worker pool every
//! message is admitted by a sender and released by the shard's one worker, so
//! both cores would write that word for every message, and the worker's locked
//! `fetch_sub` would wait for the line each time. This shard counts the two
//! sides apart instead, each on its own cache line:
//!
//! ```text
//! senders' line:  word = | admitted mod 2^40 | limit (24 bits) |
//!                 released_seen: a recent value of `released`
//! worker's line:  released: every slot given back so far (u64)
//! ```
//!
//! * Usage is `admitted - released` (modulo 2^40; it never exceeds the
//!   limit, far below that).
//! * Admitting: load the word and `released_seen`. `released` only grows, so
//!   `admitted - released_seen` is at least the usage: if it is below the
//!   limit, CAS in `word + one admission`, never reading the worker's line.
//!   If not, read `released` itself, publish it to `released_seen`
//!   (`fetch_max`), and decide on the fresh figure: a refusal always rests on
//!   a fresh read, so it is refused only when the shard really is full.
//! * Releasing, by the shard's one worker only: a load and a plain store of
//!   `released + 1` on the worker's own line. No locked instruction, and the
//!   senders read the line only when their cached figure says full.
//! * `accepted` is `released + usage`, exact forever without any fold: the
//!   admitted count may wrap, but the difference never does.
//! * A refusal's snapshot is the pair (word, released). The word changes with
//!   every admission (the count is free of ABA for 2^40 grants) and
//!   `released` with every release, so an unchanged pair means an unchanged
//!   shard, as the probe's refusal check needs.
//!
//! # Orderings
//!
//! * The word's reads are `Acquire` and its admitting CAS `AcqRel`, as in
//!   [`Shard`](super::shard::Shard): a prober that sees one shard's new state
//!   sees everything its writer did before, on any shard. The admitting CAS
//!   and the releaser's read of usage are in fact `SeqCst` (no dearer on
//!   x86): the worker pool's mailbox orders a worker going to sleep against
//!   an admission by them.
//! * The release store is `Release` and every read of `released` is
//!   `Acquire`: a sender that admits on the strength of a release sees the
//!   whole handling of the message that freed the slot, so usage as any
//!   observer counts it never exceeds the limit. `released_seen` carries the
//!   same edge on to other senders (`fetch_max` `AcqRel`, loads `Acquire`).
//! * A snapshot of usage reads `released`, then the word, then `released`
//!   again, and retries unless the two agree: then both figures held at the
//!   instant the word was read.
//! * Limit changes are `AcqRel` CASes on the word, like admissions.

use crossbeam_utils::CachePadded;

use super::probe::AdmissionShard;
use crate::sync::{AtomicU64, Ordering};

/// Width of the limit field.
const LIMIT_BITS: u32 = 24;
/// The limit field.
const LIMIT_MASK: u64 = (1 << LIMIT_BITS) - 1;
/// Added to the word by one admission.
const ADMIT: u64 = 1 << LIMIT_BITS;
/// The admitted count wraps modulo this.
const COUNT_MASK: u64 = (1 << (64 - LIMIT_BITS)) - 1;

#[inline]
fn limit_of(word: u64) -> u64 {
    word & LIMIT_MASK
}

#[inline]
fn admitted_of(word: u64) -> u64 {
    word >> LIMIT_BITS
}

/// Usage given a word and a figure of `released` not above the real one:
/// at least the usage when the word was read.
#[inline]
fn usage_of(word: u64, released: u64) -> u64 {
    admitted_of(word).wrapping_sub(released) & COUNT_MASK
}

/// One shard's usage, admitted by any thread and released by one.
/// Wrapped in `CachePadded` by its owner.
#[derive(Debug)]
pub(crate) struct SplitShard {
    word: AtomicU64,
    /// A value `released` had; lags it, never leads it.
    released_seen: AtomicU64,
    /// Slots given back, ever. Written by the shard's worker only.
    released: CachePadded<AtomicU64>,
}

/// A refused admission's view of a shard: unchanged view, unchanged shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SplitSeen {
    word: u64,
    released: u64,
}

/// A consistent reading of a split shard's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SplitCounts {
    pub(crate) usage: u64,
    pub(crate) accepted: u64,
    pub(crate) limit: u64,
}

impl SplitShard {
    pub(crate) fn new(limit: u64) -> Self {
        debug_assert!(limit <= LIMIT_MASK);
        SplitShard {
            word: AtomicU64::new(limit),
            released_seen: AtomicU64::new(0),
            released: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// Gives back one slot. Only the shard's one releasing thread may call
    /// this, once per admission.
    #[inline]
    pub(crate) fn release(&self) {
        // Relaxed: this thread wrote every value the counter ever had.
        let released = self.released.load(Ordering::Relaxed);
        debug_assert!(
            usage_of(self.word.load(Ordering::Relaxed), released) > 0,
            "released a shard with no usage"
        );
        self.released.store(released + 1, Ordering::Release);
    }

    /// Sets the admission limit. From then on the shard admits only while
    /// usage is below it.
    pub(crate) fn set_limit(&self, limit: u64) {
        debug_assert!(limit <= LIMIT_MASK);
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let next = (current & !LIMIT_MASK) | limit;
            match self.word.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    /// Usage as the releasing thread sees it: exact, since it alone moves
    /// `released`.
    pub(crate) fn usage_from_releaser(&self) -> u64 {
        let released = self.released.load(Ordering::Relaxed);
        // SeqCst: pairs with the admitting CAS (see `try_admit`).
        usage_of(self.word.load(Ordering::SeqCst), released)
    }

    /// The grant number (see [`AdmissionShard::try_admit`]) of the shard's
    /// `count`-th admission, counting from 0: grants count modulo 2^40.
    #[inline]
    pub(crate) fn grant_number(count: u64) -> u64 {
        count & COUNT_MASK
    }

    /// A reading of usage, grants and limit that all held at one instant.
    pub(crate) fn counts(&self) -> SplitCounts {
        let mut before = self.released.load(Ordering::Acquire);
        loop {
            let word = self.word.load(Ordering::Acquire);
            let after = self.released.load(Ordering::Acquire);
            if after == before {
                let usage = usage_of(word, before);
                return SplitCounts {
                    usage,
                    accepted: before + usage,
                    limit: limit_of(word),
                };
            }
            before = after;
        }
    }

    /// The shard looked full with the cached figure: read the worker's line.
    #[cold]
    #[inline(never)]
    fn refresh(&self) -> u64 {
        let released = self.released.load(Ordering::Acquire);
        self.released_seen.fetch_max(released, Ordering::AcqRel);
        released
    }
}

impl AdmissionShard for SplitShard {
    type Seen = SplitSeen;

    /// Takes one slot if the shard is below its limit; `Ok` carries the
    /// grant's number on this shard (modulo 2^40).
    #[inline]
    fn try_admit(&self) -> Result<u64, SplitSeen> {
        let mut current = self.word.load(Ordering::Acquire);
        let mut released = self.released_seen.load(Ordering::Acquire);
        loop {
            if usage_of(current, released) >= limit_of(current) {
                let fresh = self.refresh();
                if fresh == released {
                    return Err(SplitSeen {
                        word: current,
                        released,
                    });
                }
                released = fresh;
                // The word may have moved while `released` was read.
                current = self.word.load(Ordering::Acquire);
                continue;
            }
            // SeqCst (a plain `lock cmpxchg` on x86, as `AcqRel` is): the
            // worker pool's mailbox pairs this admission with its worker's
            // going to sleep (see `worker_pool/mailbox.rs`).
            match self.word.compare_exchange_weak(
                current,
                current.wrapping_add(ADMIT),
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(admitted_of(current)),
                Err(actual) => current = actual,
            }
        }
    }

    #[inline]
    fn seen(&self) -> SplitSeen {
        // `released` first: the pair then never shows a release the word's
        // admissions do not cover.
        let released = self.released.load(Ordering::Acquire);
        SplitSeen {
            word: self.word.load(Ordering::Acquire),
            released,
        }
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_and_frees_on_release() {
        let shard = SplitShard::new(2);
        assert_eq!(shard.try_admit(), Ok(0));
        assert_eq!(shard.try_admit(), Ok(1));
        let seen = shard.seen();
        assert_eq!(shard.try_admit(), Err(seen));
        assert_eq!(
            shard.seen(),
            seen,
            "a refusal writes nothing the probe compares"
        );
        shard.release();
        assert_ne!(shard.seen(), seen);
        assert_eq!(shard.try_admit(), Ok(2));
        let counts = shard.counts();
        assert_eq!((counts.usage, counts.accepted, counts.limit), (2, 3, 2));
    }

    #[test]
    fn a_stale_cached_count_is_refreshed_before_refusing() {
        let shard = SplitShard::new(1);
        assert!(shard.try_admit().is_ok());
        shard.release(); // `released_seen` still says 0
        assert_eq!(shard.released_seen.load(Ordering::Relaxed), 0);
        assert!(shard.try_admit().is_ok(), "the slot is free");
        assert_eq!(shard.released_seen.load(Ordering::Relaxed), 1);
        assert!(shard.try_admit().is_err());
    }

    #[test]
    fn a_limit_of_zero_refuses_and_usage_drains() {
        let shard = SplitShard::new(3);
        assert!(shard.try_admit().is_ok());
        shard.set_limit(0);
        assert!(shard.try_admit().is_err());
        assert_eq!(shard.usage_from_releaser(), 1);
        shard.release();
        assert_eq!(shard.usage_from_releaser(), 0);
        assert_eq!(shard.counts().accepted, 1);
    }

    #[test]
    fn accepted_stays_exact_when_the_admitted_count_wraps() {
        let shard = SplitShard::new(4);
        // Just below the wrap of the 40-bit count, as after 2^40 grants.
        let before_wrap = COUNT_MASK - 1;
        shard
            .word
            .store((before_wrap << LIMIT_BITS) | 4, Ordering::Relaxed);
        shard.released.store(before_wrap, Ordering::Relaxed);
        shard.released_seen.store(before_wrap, Ordering::Relaxed);
        for n in 1..=4u64 {
            assert!(shard.try_admit().is_ok());
            assert_eq!(shard.counts().usage, n);
            assert_eq!(shard.counts().accepted, before_wrap + n);
        }
        assert!(
            shard.try_admit().is_err(),
            "the bound holds across the wrap"
        );
        for n in 1..=4u64 {
            shard.release();
            assert_eq!(shard.counts().usage, 4 - n);
        }
        assert!(shard.try_admit().is_ok());
        assert_eq!(shard.counts().accepted, before_wrap + 5);
    }

    #[test]
    fn one_releaser_and_two_admitters_keep_the_bound() {
        const LIMIT: u64 = 3;
        const PER_SENDER: u64 = 100_000;
        let shard = SplitShard::new(LIMIT);
        let (sender, receiver) = crossbeam_channel::unbounded::<()>();
        std::thread::scope(|scope| {
            let senders: Vec<_> = (0..2)
                .map(|_| {
                    let sender = sender.clone();
                    let shard = &shard;
                    scope.spawn(move || {
                        let mut admitted = 0;
                        while admitted < PER_SENDER {
                            if shard.try_admit().is_ok() {
                                assert!(shard.counts().usage <= LIMIT);
                                sender.send(()).unwrap();
                                admitted += 1;
                            }
                        }
                    })
                })
                .collect();
            drop(sender);
            scope.spawn(|| {
                // The one releaser: frees a slot per message it receives.
                for () in receiver.iter() {
                    assert!(shard.usage_from_releaser() <= LIMIT);
                    shard.release();
                }
            });
            for sender in senders {
                sender.join().unwrap();
            }
        });
        let counts = shard.counts();
        assert_eq!((counts.usage, counts.accepted), (0, 2 * PER_SENDER));
    }
}
