//! What a task supervisor, its clones and its children share: the slots,
//! per shard the live set and counters, the cancellation of the current
//! generation of children, and the signal that the last child ended.
//!
//! # Orderings
//!
//! - `closed` is stored before `close` takes each live set's lock, and read
//!   under that lock by a registering child and after the removal by an
//!   ending one: the locks order the two sides (`Acquire`/`Release` is
//!   documentation here; the locks carry the ordering).
//! - `aborting` is stored (`Release`) before `abort_spawned` takes each live
//!   set's lock to wake the wakers left there; `watch` reads it under that
//!   lock, and a woken child reads it (`Acquire`) at the start of the poll
//!   its wake caused.
//! - `generation_number` is stored (`Release`) under the generation's lock
//!   after the generation itself, and read (`Acquire`) by every admission:
//!   a context never holds a number ahead of the generation it finds.
//! - The counters are figures (`Relaxed`); those written under a live
//!   set's lock are written with a load and a store.
//! - A child's slot is freed (the shard's usage, `Release`) before its live
//!   set is unlocked: `signal_if_idle` reads every set under its lock, so
//!   when it finds them all empty, each removal's slot release happened
//!   before, and `wait`, woken through the cancellation token (which
//!   synchronises), reads a usage of 0.

use std::sync::Arc;
#[cfg(feature = "tokio")]
use std::task::Waker;

use crossbeam_utils::CachePadded;
use slab::Slab;
use tokio_util::sync::CancellationToken;

use crate::admission::{ShardedCounter, Shares};
use crate::children::ChildId;
use crate::sync::{lock, spin_lock, AtomicBool, AtomicU64, Mutex, Ordering, SpinLock};

/// What the supervisor and its children share.
pub(super) struct TaskShared {
    /// One slot per live child.
    pub(super) slots: ShardedCounter,
    pub(super) shards: Box<[CachePadded<TaskShard>]>,
    /// Set by `close`; read under a shard's live-set lock when a child
    /// registers there (see `register`).
    pub(super) closed: AtomicBool,
    /// Set by `shutdown` when its grace runs out: every spawned child ends
    /// at its next poll (see `abortable.rs`). Read by every poll of a
    /// spawned child, on a line written only then.
    #[cfg(feature = "tokio")]
    aborting: AtomicBool,
    /// The number of the current cancellation generation, read by every
    /// admission (a line written only by `cancel_all`). Never ahead of
    /// `generation`'s: both are written under its lock.
    generation_number: AtomicU64,
    /// The current cancellation generation.
    generation: Mutex<Generation>,
    /// Cancelled once the supervisor is closed and no child is alive.
    pub(super) idle: CancellationToken,
    pub(super) name: String,
}

/// One shard's live set and counters.
pub(super) struct TaskShard {
    /// A spin lock: its critical sections are a few instructions and run no
    /// user code (cloning a spawned task's waker is tokio's reference
    /// count), and its unlock is a store where a mutex's is a
    /// read-modify-write; every spawn and every end takes it once.
    pub(super) live: SpinLock<LiveSet>,
    // `spawned`, `finished`, `panicked` and `cancelled` are written under
    // `live`'s lock; `rejected` and `closed` anywhere.
    pub(super) spawned: AtomicU64,
    pub(super) finished: AtomicU64,
    pub(super) panicked: AtomicU64,
    pub(super) cancelled: AtomicU64,
    pub(super) rejected: AtomicU64,
    pub(super) closed: AtomicU64,
}

/// The children alive on one shard, in a slab of their ids: a child joins
/// at a free entry and leaves by its key, with no hashing and, once the
/// slab has grown to the shard's peak, no allocation. An entry is one word,
/// moved in a register: a larger one, moved through memory, stalled every
/// insertion on its store forwarding (see `docs/benchmarks/history.md`).
#[derive(Default)]
pub(super) struct LiveSet {
    /// Ids handed out on this shard so far.
    issued: u64,
    pub(super) children: Slab<ChildId>,
    /// By slab key, the wakers left by spawned children the first time
    /// their future was pending: `shutdown` wakes them to abort them if
    /// they outlive the grace. Grown only by such children.
    #[cfg(feature = "tokio")]
    wakers: Vec<Option<Waker>>,
}

/// Where a registered child lives: its id and its key in its shard's slab.
/// A key is reused once its child has left, so whoever looks a child up by
/// key checks the id.
#[derive(Debug, Clone, Copy)]
pub(super) struct Place {
    shard: u32,
    key: u32,
    pub(super) id: ChildId,
}

impl Place {
    /// The shard whose slot and live set the child holds.
    #[inline]
    pub(super) fn shard(self) -> usize {
        self.shard as usize
    }

    /// The child's key in its shard's slab.
    #[inline]
    pub(super) fn key(self) -> usize {
        self.key as usize
    }
}

/// The children of one cancellation generation: those admitted since the
/// last `cancel_all`, whose token it cancels.
pub(super) struct Generation {
    number: u64,
    token: CancellationToken,
}

/// A shard's own reference to what the supervisor shares. A child's guard
/// and its context each hold one, cloned from their shard's anchor, whose
/// reference count sits on a line of its own: spawns on different shards
/// write no reference count in common (see `docs/design.md`).
pub(super) type Anchor = Arc<CachePadded<Arc<TaskShared>>>;

/// One anchor per shard of `shared`.
pub(super) fn anchors(shared: &Arc<TaskShared>) -> Box<[Anchor]> {
    (0..shared.shards.len())
        .map(|_| Arc::new(CachePadded::new(Arc::clone(shared))))
        .collect()
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

/// Adds one to a counter written only under its shard's live-set lock,
/// which the caller holds: a load and a store, no locked instruction.
/// Readers load it without the lock (`Relaxed`: a figure, ordering nothing).
fn bump_locked(counter: &AtomicU64, _live: &LiveSet) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

impl TaskShard {
    fn new() -> Self {
        TaskShard {
            live: SpinLock::new(LiveSet::default()),
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
            slots: ShardedCounter::new(capacity, shards, Shares::default()),
            shards: (0..shards)
                .map(|_| CachePadded::new(TaskShard::new()))
                .collect(),
            closed: AtomicBool::new(false),
            #[cfg(feature = "tokio")]
            aborting: AtomicBool::new(false),
            generation_number: AtomicU64::new(0),
            generation: Mutex::new(Generation {
                number: 0,
                token: CancellationToken::new(),
            }),
            idle: CancellationToken::new(),
            name,
        }
    }

    /// Registers a child admitted on `shard` in that shard's live set and
    /// counts it; `None`, with its slot given back, if the supervisor closed
    /// first. `closed` is read under the set's lock, which `close` takes
    /// after setting it, so a child either registers before `close` counts
    /// that shard or sees it closed.
    pub(super) fn register(&self, shard: usize) -> Option<Place> {
        let count = self.shards.len() as u64;
        let mut live = spin_lock(&self.shards[shard].live);
        if self.closed.load(Ordering::Acquire) {
            // Freed under the lock, as an ending child's is (see
            // `child_ended`).
            self.slots.release(shard);
            drop(live);
            bump(&self.shards[shard].closed);
            return None;
        }
        let id = ChildId::new(live.issued * count + shard as u64);
        live.issued += 1;
        bump_locked(&self.shards[shard].spawned, &live);
        let key = live.children.insert(id);
        // Both fit: shards are few, and a slab holds at most its shard's
        // limit, under 2^24. Sixteen bytes move in two registers.
        Some(Place {
            shard: shard as u32,
            key: key as u32,
            id,
        })
    }

    /// A child ended: it leaves the live set and frees its slot, once, and
    /// is counted; if it was the last of a closed supervisor, `wait` ends.
    ///
    /// The slot is freed under the live set's lock, so leaving the set and
    /// freeing the slot are one step to whoever reads the sets under their
    /// locks: a `wait` woken because every set was empty finds every slot
    /// of those children free too (`count()` is 0). Freed after the lock,
    /// another child ending at that moment could find the sets empty and
    /// wake `wait` while this one's slot was still held.
    pub(super) fn child_ended(&self, place: Place, how: Ended) {
        let shard = place.shard();
        let counters = &self.shards[shard];
        let mut live = spin_lock(&counters.live);
        let removed = live.children.remove(place.key());
        debug_assert_eq!(removed, place.id, "a child ends once");
        #[cfg(feature = "tokio")]
        let waker = live.wakers.get_mut(place.key()).and_then(Option::take);
        bump_locked(&counters.finished, &live);
        match how {
            Ended::Completed => {}
            Ended::Panicked => bump_locked(&counters.panicked, &live),
            Ended::Dropped => bump_locked(&counters.cancelled, &live),
        }
        self.slots.release(shard);
        drop(live);
        // Its waker, if it left one, is dropped outside the lock.
        #[cfg(feature = "tokio")]
        drop(waker);
        // The removal's lock ordered this after a `close` that counted the
        // shard without this child, or before one that will count it gone.
        if self.closed.load(Ordering::Acquire) {
            self.signal_if_idle();
        }
    }

    /// Whether `shutdown` aborts the spawned children (see `abortable.rs`).
    #[cfg(feature = "tokio")]
    #[inline]
    pub(super) fn is_aborting(&self) -> bool {
        // Acquire: pairs with `abort_spawned`'s release store. A child that
        // left its waker is polled after `abort_spawned` wakes it, which is
        // after the store, so that poll reads `true`; a child that had not
        // yet left its waker decides in `watch`, under its set's lock.
        self.aborting.load(Ordering::Acquire)
    }

    /// A spawned child's future went pending for the first time: leaves its
    /// waker for `abort_spawned`; `false` if the abort came first, and the
    /// child is to end now.
    #[cfg(feature = "tokio")]
    pub(super) fn watch(&self, place: Place, waker: &Waker) -> bool {
        let mut live = spin_lock(&self.shards[place.shard()].live);
        // Read under the lock `abort_spawned` takes after setting it.
        if self.aborting.load(Ordering::Relaxed) {
            return false;
        }
        let key = place.key();
        debug_assert_eq!(live.children[key], place.id, "its own entry");
        if live.wakers.len() <= key {
            live.wakers.resize(key + 1, None);
        }
        live.wakers[key] = Some(waker.clone());
        true
    }

    /// Aborts every spawned child: each ends at its next poll, and those
    /// waiting are woken for it. Tracked children, not spawned, run on.
    #[cfg(feature = "tokio")]
    pub(super) fn abort_spawned(&self) {
        // Release: see `is_aborting`. The children that take a live set's
        // lock in `watch` after this takes it read it through the lock.
        self.aborting.store(true, Ordering::Release);
        for shard in self.shards.iter() {
            let wakers: Vec<Waker> = spin_lock(&shard.live)
                .wakers
                .iter()
                .flatten()
                .cloned()
                .collect();
            wakers.into_iter().for_each(Waker::wake);
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
            .map(|shard| spin_lock(&shard.live).children.len())
            .sum()
    }

    /// The ids of every live child, in order.
    pub(super) fn which_children(&self) -> Vec<ChildId> {
        let mut ids: Vec<ChildId> = self
            .shards
            .iter()
            .flat_map(|shard| {
                spin_lock(&shard.live)
                    .children
                    .iter()
                    .map(|(_, id)| *id)
                    .collect::<Vec<_>>()
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The number of the generation the children admitted now join.
    #[inline]
    pub(super) fn current_generation(&self) -> u64 {
        // Acquire: pairs with `cancel_all`'s release store, so a child that
        // reads the new number finds its generation in `generation` too.
        self.generation_number.load(Ordering::Acquire)
    }

    /// Whether the children of generation `number` were asked to stop.
    pub(super) fn is_cancelled(&self, number: u64) -> bool {
        self.current_generation() > number
    }

    /// The token that generation `number`'s cancellation cancels; `None`
    /// if it already was.
    pub(super) fn token_for(&self, number: u64) -> Option<CancellationToken> {
        let current = lock(&self.generation);
        // Never behind `number`: the number a child read was stored under
        // this lock after its generation.
        (current.number == number).then(|| current.token.clone())
    }

    /// Cancels the children admitted so far; later ones join a new
    /// generation, uncancelled.
    pub(super) fn cancel_all(&self) {
        let old = {
            let mut current = lock(&self.generation);
            let number = current.number + 1;
            let old = std::mem::replace(
                &mut *current,
                Generation {
                    number,
                    token: CancellationToken::new(),
                },
            );
            // Release: see `current_generation`.
            self.generation_number.store(number, Ordering::Release);
            old
        };
        old.token.cancel();
    }
}
