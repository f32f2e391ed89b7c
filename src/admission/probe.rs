//! The probe: admission over a row of shards, starting at one, refusing only
//! when every shard was full at one moment.
//!
//! The worker pool's: its shards are [`SplitShard`](super::SplitShard)s with
//! a fixed split, so a full shard's slot cannot move and the probe admits on
//! whichever shard has room. (The [`ShardedCounter`](super::ShardedCounter)
//! moves capacity instead; its slow path is [`lease`](super::lease).)
//!
//! # Orderings
//!
//! The probe adds none of its own: it relies on each shard's reads being
//! `Acquire` and its admissions `AcqRel`, so a prober that sees a shard taken
//! by a thread that first freed another shard also sees that other shard
//! free when it re-reads it.

use crossbeam_utils::CachePadded;
use smallvec::SmallVec;

/// How many probes a refusal may take when shards change under it.
const PROBE_ROUNDS: usize = 4;

/// Probes of up to this many shards keep what they saw on the stack; wider
/// ones allocate, on the refusal path only.
const INLINE_PROBE: usize = 32;

/// One shard as the probe sees it.
pub(crate) trait AdmissionShard {
    /// What a refused admission saw; equal snapshots mean the shard did not
    /// change in between.
    type Seen: Copy + Eq;

    /// Takes one unit if the shard is below its limit: `Ok` with the grant's
    /// number on the shard, or `Err` with the full shard as it was seen.
    fn try_admit(&self) -> Result<u64, Self::Seen>;

    /// The shard as it is now, to compare with what a refusal saw.
    fn seen(&self) -> Self::Seen;
}

/// One admitted unit: the shard it came from, and its grant number there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admission {
    pub(crate) shard: usize,
    /// The shard's grant count before this grant (modulo a power of two).
    pub(crate) grant: u64,
}

/// Admits one unit, starting at shard `start`; `None` when every shard was
/// full at one moment.
#[inline]
pub(crate) fn admit<S: AdmissionShard>(
    shards: &[CachePadded<S>],
    start: usize,
) -> Option<Admission> {
    match shards[start].try_admit() {
        Ok(grant) => Some(Admission {
            shard: start,
            grant,
        }),
        Err(seen) => probe(shards, start, seen),
    }
}

/// The start shard was full: try every other shard once, in order, and
/// refuse only if every shard was full at one moment.
///
/// Seeing each shard full in turn is not enough: a slot can free up behind
/// the probe. So a probe that found no room re-reads every shard; if none
/// changed, all shards were full at once between the two reads, and the
/// refusal is genuine. If one changed, the probe runs again, at most
/// [`PROBE_ROUNDS`] times in all, so a caller never spins.
#[cold]
#[inline(never)]
fn probe<S: AdmissionShard>(
    shards: &[CachePadded<S>],
    start: usize,
    start_seen: S::Seen,
) -> Option<Admission> {
    let count = shards.len();
    let next = |index: usize| if index + 1 == count { 0 } else { index + 1 };
    let admitted = |shard: usize, grant: u64| Some(Admission { shard, grant });
    // What each shard looked like when it was seen full, in probe order.
    let mut seen: SmallVec<[S::Seen; INLINE_PROBE]> = SmallVec::new();
    seen.push(start_seen);
    let mut index = start;
    for _ in 1..count {
        index = next(index);
        match shards[index].try_admit() {
            Ok(grant) => return admitted(index, grant),
            Err(view) => seen.push(view),
        }
    }
    for _ in 1..PROBE_ROUNDS {
        let mut index = start;
        let unchanged = seen.iter().all(|&view| {
            let same = shards[index].seen() == view;
            index = next(index);
            same
        });
        if unchanged {
            break;
        }
        let mut index = start;
        for last_seen in seen.iter_mut() {
            match shards[index].try_admit() {
                Ok(grant) => return admitted(index, grant),
                Err(view) => *last_seen = view,
            }
            index = next(index);
        }
    }
    None
}
