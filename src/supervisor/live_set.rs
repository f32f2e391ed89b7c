//! What a supervisor and its children share: the slots, and per shard the
//! live set of children with the shard's counters.

use std::collections::HashMap;
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::admission::ShardedCounter;
use crate::sync::{lock, AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};

use super::child::ChildState;
use crate::children::ChildId;

/// What the supervisor and its children share.
pub(super) struct Shared {
    /// The slots: one per live child.
    pub(super) slots: ShardedCounter,
    pub(super) shards: Box<[CachePadded<SupervisorShard>]>,
    /// Set by shutdown: from then on, spawns are refused.
    pub(super) closing: AtomicBool,
    /// Wakes a shutdown waiting for children to end.
    pub(super) exits: Condvar,
    pub(super) exit_lock: Mutex<()>,
    /// Children registered whose thread the OS has not yet started or
    /// refused: a shutdown's report waits for them to be one or the other.
    pub(super) starting: AtomicUsize,
    pub(super) name: String,
    pub(super) stack_size: Option<usize>,
}

/// One shard's live set and counters.
pub(super) struct SupervisorShard {
    pub(super) live: Mutex<LiveSet>,
    pub(super) spawned: AtomicU64,
    pub(super) finished: AtomicU64,
    pub(super) panicked: AtomicU64,
    pub(super) rejected: AtomicU64,
    pub(super) closed: AtomicU64,
    pub(super) spawn_failed: AtomicU64,
}

/// The children alive on one shard.
pub(super) struct LiveSet {
    /// Ids handed out on this shard so far.
    pub(super) issued: u64,
    pub(super) children: HashMap<ChildId, Arc<ChildState>>,
}

impl SupervisorShard {
    pub(super) fn new() -> Self {
        SupervisorShard {
            live: Mutex::new(LiveSet {
                issued: 0,
                children: HashMap::new(),
            }),
            spawned: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            spawn_failed: AtomicU64::new(0),
        }
    }
}

pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Shared {
    /// A child ended: leave the live set, free the slot, count it, and wake
    /// a shutdown that waits for children.
    pub(super) fn child_ended(&self, shard: usize, id: ChildId, panicked: bool) {
        lock(&self.shards[shard].live).children.remove(&id);
        self.slots.release(shard);
        bump(&self.shards[shard].finished);
        if panicked {
            bump(&self.shards[shard].panicked);
        }
        self.wake_shutdown();
    }

    /// The OS started a registered child's thread, or refused it.
    pub(super) fn start_resolved(&self) {
        self.starting.fetch_sub(1, Ordering::SeqCst);
        self.wake_shutdown();
    }

    /// A shutdown waits for the live set to empty, and for every start to
    /// resolve: each removal and each resolution wakes it.
    fn wake_shutdown(&self) {
        if self.closing.load(Ordering::Acquire) {
            let _guard = lock(&self.exit_lock);
            self.exits.notify_all();
        }
    }

    pub(super) fn live_count(&self) -> usize {
        self.live_counts().iter().sum()
    }

    /// Each shard's live children at one moment: every shard's set is
    /// locked, in shard order, before any is read. Slots move between
    /// shards, so counts read one shard at a time could see a child that
    /// ended on one shard and the child that took its slot on another.
    /// Nothing else holds two of these locks at once.
    pub(super) fn live_counts(&self) -> Vec<usize> {
        let sets: Vec<_> = self.shards.iter().map(|shard| lock(&shard.live)).collect();
        sets.iter().map(|live| live.children.len()).collect()
    }

    /// The ids of the children whose thread started and has not ended, in
    /// order: one snapshot, every shard's set locked at once (in shard
    /// order, as `live_counts` takes them).
    pub(super) fn started_children(&self) -> Vec<ChildId> {
        let sets: Vec<_> = self.shards.iter().map(|shard| lock(&shard.live)).collect();
        let mut ids: Vec<ChildId> = sets
            .iter()
            .flat_map(|live| {
                live.children
                    .iter()
                    .filter(|(_, state)| state.started.load(Ordering::Acquire))
                    .map(|(id, _)| *id)
            })
            .collect();
        drop(sets);
        ids.sort_unstable();
        ids
    }

    /// Registers a child admitted on `shard` in that shard's live set and
    /// counts it spawned; `None`, with its slot given back, if shutdown began
    /// first (checked under the set's lock, which the shutdown sweep takes).
    pub(super) fn register(&self, shard: usize, state: &Arc<ChildState>) -> Option<ChildId> {
        let count = self.shards.len();
        let mut live = lock(&self.shards[shard].live);
        if self.closing.load(Ordering::Acquire) {
            drop(live);
            self.slots.release(shard);
            bump(&self.shards[shard].closed);
            return None;
        }
        let id = ChildId::new(live.issued * count as u64 + shard as u64);
        live.issued += 1;
        // Counted before it joins the live set, so `live` never exceeds
        // `spawned`; taken back by `unregister_unstarted` if the thread does
        // not start.
        bump(&self.shards[shard].spawned);
        live.children.insert(id, Arc::clone(state));
        // Under the shard lock: a shutdown that swept this child counts it.
        self.starting.fetch_add(1, Ordering::SeqCst);
        Some(id)
    }

    /// The OS refused a registered child's thread: undo its registration
    /// and give its slot back.
    pub(super) fn unregister_unstarted(&self, shard: usize, id: ChildId) {
        if let Some(state) = lock(&self.shards[shard].live).children.remove(&id) {
            // Before it leaves the set: a shutdown that sees it gone sees
            // it refused.
            state.refused.store(true, Ordering::Release);
        }
        self.shards[shard].spawned.fetch_sub(1, Ordering::Relaxed);
        self.slots.release(shard);
        bump(&self.shards[shard].spawn_failed);
        // A shutdown waiting for the live set must hear of it as of an end.
        self.wake_shutdown();
    }
}
