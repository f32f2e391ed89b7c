//! What a task supervisor, its clones and its children share: the slots,
//! per shard the live set and counters, the cancellation of the current
//! generation of children, and the signal that the last child ended.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use arc_swap::ArcSwap;
use crossbeam_utils::CachePadded;
use tokio_util::sync::CancellationToken;

use crate::admission::ShardedCounter;
use crate::children::ChildId;
use crate::sync::{lock, AtomicBool, AtomicU64, Mutex, Ordering};

/// What the supervisor and its children share.
pub(super) struct TaskShared {
    /// One slot per live child.
    pub(super) slots: ShardedCounter,
    pub(super) shards: Box<[CachePadded<TaskShard>]>,
    /// Set by `close`; read under a shard's live-set lock when a child
    /// registers there (see `register`).
    pub(super) closed: AtomicBool,
    /// The token of the children admitted since the last `cancel_all`.
    pub(super) cancel: ArcSwap<CancellationToken>,
    /// Cancelled once the supervisor is closed and no child is alive.
    pub(super) idle: CancellationToken,
    pub(super) name: String,
}

/// One shard's live set and counters.
pub(super) struct TaskShard {
    pub(super) live: Mutex<LiveSet>,
    pub(super) spawned: AtomicU64,
    pub(super) finished: AtomicU64,
    pub(super) panicked: AtomicU64,
    pub(super) cancelled: AtomicU64,
    pub(super) rejected: AtomicU64,
    pub(super) closed: AtomicU64,
}

/// The children alive on one shard.
#[derive(Default)]
pub(super) struct LiveSet {
    /// Ids handed out on this shard so far.
    issued: u64,
    pub(super) children: HashMap<ChildId, LiveChild, BuildHasherDefault<IdHasher>>,
}

/// Hashes a child's id as itself: ids are unique integers that count up,
/// so the default SipHash buys nothing here but its cost, twice per child.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 << 8) | u64::from(byte);
        }
    }

    fn write_u64(&mut self, id: u64) {
        // Spread the low bits (an id is `issued * shards + shard`), so that
        // the table's buckets fill evenly.
        self.0 = id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// What the supervisor keeps of a live child.
#[derive(Default)]
pub(super) struct LiveChild {
    /// Set once a spawned child's task is on its runtime: `shutdown`
    /// aborts it if it outlives the grace.
    #[cfg(feature = "tokio")]
    pub(super) abort: Option<tokio::task::AbortHandle>,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// Its future completed.
    Completed,
    /// Its poll (or the closure making it) panicked.
    Panicked,
    /// It was dropped unfinished: aborted, cancelled, its runtime shut down.
    Dropped,
}

pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl TaskShard {
    fn new() -> Self {
        TaskShard {
            live: Mutex::new(LiveSet::default()),
            spawned: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            closed: AtomicU64::new(0),
        }
    }
}

impl TaskShared {
    pub(super) fn new(capacity: usize, shards: usize, name: String) -> Self {
        TaskShared {
            slots: ShardedCounter::new(capacity, shards),
            shards: (0..shards)
                .map(|_| CachePadded::new(TaskShard::new()))
                .collect(),
            closed: AtomicBool::new(false),
            cancel: ArcSwap::from_pointee(CancellationToken::new()),
            idle: CancellationToken::new(),
            name,
        }
    }

    /// Registers a child admitted on `shard` in that shard's live set and
    /// counts it; `None`, with its slot given back, if the supervisor closed
    /// first. `closed` is read under the set's lock, which `close` takes
    /// after setting it, so a child either registers before `close` counts
    /// that shard or sees it closed.
    pub(super) fn register(&self, shard: usize) -> Option<ChildId> {
        let count = self.shards.len() as u64;
        let mut live = lock(&self.shards[shard].live);
        if self.closed.load(Ordering::Acquire) {
            drop(live);
            self.slots.release(shard);
            bump(&self.shards[shard].closed);
            return None;
        }
        let id = ChildId::new(live.issued * count + shard as u64);
        live.issued += 1;
        bump(&self.shards[shard].spawned);
        live.children.insert(id, LiveChild::default());
        Some(id)
    }

    /// A child ended: it leaves the live set and frees its slot, once, and
    /// is counted; if it was the last of a closed supervisor, `wait` ends.
    pub(super) fn child_ended(&self, shard: usize, id: ChildId, how: Ended) {
        let removed = lock(&self.shards[shard].live).children.remove(&id);
        debug_assert!(removed.is_some(), "a child ends once");
        self.slots.release(shard);
        let counters = &self.shards[shard];
        bump(&counters.finished);
        match how {
            Ended::Completed => {}
            Ended::Panicked => bump(&counters.panicked),
            Ended::Dropped => bump(&counters.cancelled),
        }
        // The removal's lock ordered this after a `close` that counted the
        // shard without this child, or before one that will count it gone.
        if self.closed.load(Ordering::Acquire) {
            self.signal_if_idle();
        }
    }

    /// Closed and nobody alive: `wait` may end.
    pub(super) fn signal_if_idle(&self) {
        if self.live_count() == 0 {
            self.idle.cancel();
        }
    }

    pub(super) fn live_count(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| lock(&shard.live).children.len())
            .sum()
    }

    /// The ids of every live child, in order.
    pub(super) fn which_children(&self) -> Vec<ChildId> {
        let mut ids: Vec<ChildId> = self
            .shards
            .iter()
            .flat_map(|shard| {
                lock(&shard.live)
                    .children
                    .keys()
                    .copied()
                    .collect::<Vec<_>>()
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The token the children admitted now get.
    pub(super) fn current_token(&self) -> CancellationToken {
        CancellationToken::clone(&self.cancel.load())
    }

    /// Cancels the children admitted so far; later ones get a new token.
    pub(super) fn cancel_all(&self) {
        let old = self.cancel.swap(Arc::new(CancellationToken::new()));
        old.cancel();
    }
}
