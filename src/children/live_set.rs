//! [`LiveSet`]: the children alive under a supervisor, with their slots,
//! their [`Cancellation`] and the [`Drain`] that a shutdown or `wait`
//! waits on. Both supervisors are thin faces over it: `Supervisor` keeps
//! each child thread's shared state in it, `TaskSupervisor` nothing but the
//! ids (and the wakers of spawned tasks, for an abort).
//!
//! A child takes a slot of the admission core's counter, then joins its
//! slot's shard's set; it leaves the set and frees the slot in one step,
//! under the set's lock. Each shard's set is a slab: a child joins at a free
//! entry and leaves by its key, with no hashing and, once the slab has grown
//! to the shard's peak, no allocation. A task's entry is one word, moved in
//! a register: a larger one, moved through memory, stalled every insertion
//! on its store forwarding (see `docs/benchmarks/history.md`).
//!
//! # Orderings
//!
//! - `closed` is stored before whoever closes takes each set's lock (to
//!   sweep or count it), and read under that lock by a registering child:
//!   the locks order the two sides, so a child either registers before the
//!   closer visits its shard or sees the set closed. (`Acquire`/`Release`
//!   is documentation here; the locks carry the ordering.)
//! - The close counts the children for the [`Drain`] with every set locked
//!   at once, and a leaving child reads whether it was counted under its
//!   own set's lock (see `drain.rs`).
//! - `aborting` is stored (`Release`) before [`LiveSet::abort_all`] takes
//!   each set's lock to wake the wakers left there; [`LiveSet::watch`]
//!   reads it under that lock, and a woken child reads it (`Acquire`) at
//!   the start of the poll its wake caused.
//! - A child's slot is freed (the shard's usage, `Release`) before its set
//!   is unlocked: whoever reads the sets under their locks and finds them
//!   empty finds every one of those children's slots free too.
//! - The counters are figures (`Relaxed`); those written under a set's lock
//!   are written with a load and a store, no locked instruction.

use crossbeam_utils::CachePadded;
use slab::Slab;

#[cfg(feature = "tokio")]
use std::task::Waker;

use super::{Cancellation, Drain};
use crate::admission::{ShardedCounter, Shares};
use crate::children::ChildId;
use crate::sync::{spin_lock, AtomicBool, AtomicU64, Ordering, SpinGuard, SpinLock};

/// The children alive under one supervisor, per shard, and their slots.
pub(crate) struct LiveSet<E> {
    /// One slot per live child.
    slots: ShardedCounter,
    shards: Box<[CachePadded<LiveShard<E>>]>,
    /// Set by [`close`](Self::close): read under a shard's lock by a child
    /// registering there.
    closed: AtomicBool,
    /// The children's generations: what asks them to stop.
    cancellation: Cancellation,
    /// Counts the children alive at the close down to the last.
    drain: Drain,
    /// Set by [`abort_all`](Self::abort_all): read by every poll of a
    /// spawned task, on a line written only then.
    #[cfg(feature = "tokio")]
    aborting: AtomicBool,
}

/// One shard's set and counters.
struct LiveShard<E> {
    /// A spin lock: its critical sections are a few instructions and run no
    /// user code (cloning a task's waker is tokio's reference count), and
    /// its unlock is a store where a mutex's is a read-modify-write; every
    /// spawn and every end takes it once.
    members: SpinLock<Members<E>>,
    counts: Counts,
}

/// The children alive on one shard.
struct Members<E> {
    /// Ids handed out on this shard so far.
    issued: u64,
    children: Slab<Member<E>>,
    /// By slab key, the wakers left by spawned tasks the first time their
    /// future was pending: [`LiveSet::abort_all`] wakes them. Grown only
    /// by such children.
    #[cfg(feature = "tokio")]
    wakers: Vec<Option<Waker>>,
}

/// A live child: its id, and what its face keeps of it.
struct Member<E> {
    id: ChildId,
    entry: E,
}

/// One shard's counters. `spawned`, `finished`, `panicked`, `cancelled` and
/// `spawn_failed` are written under the shard's lock; `rejected` and
/// `closed` anywhere.
#[derive(Default)]
struct Counts {
    spawned: AtomicU64,
    finished: AtomicU64,
    panicked: AtomicU64,
    cancelled: AtomicU64,
    rejected: AtomicU64,
    closed: AtomicU64,
    spawn_failed: AtomicU64,
}

/// The counters summed over the shards.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Totals {
    /// Children admitted and registered.
    pub(crate) spawned: u64,
    /// Children that ended, however.
    pub(crate) finished: u64,
    /// Of those, the ones that panicked.
    pub(crate) panicked: u64,
    /// Of those, the ones dropped unfinished.
    pub(crate) cancelled: u64,
    /// Refused for overload.
    pub(crate) rejected: u64,
    /// Refused because the set was closed.
    pub(crate) closed: u64,
    /// Registered, then never started (the OS refused a thread).
    pub(crate) spawn_failed: u64,
}

/// Where a registered child lives: its id and its key in its shard's slab.
/// A key is reused once its child has left, so whoever looks a child up by
/// key checks the id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    shard: u32,
    key: u32,
    /// The child's id.
    pub(crate) id: ChildId,
}

impl Place {
    /// The shard whose slot and set the child holds.
    #[inline]
    pub(crate) fn shard(self) -> usize {
        self.shard as usize
    }
}

/// Why a child was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Every slot is held.
    Overload,
    /// The set is closed.
    Closed,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It returned (its thread's closure or its future completed).
    Completed,
    /// It panicked.
    Panicked,
    /// It was dropped unfinished: aborted, cancelled, its runtime shut down.
    Dropped,
}

/// Adds one to a counter: `Relaxed`, a figure that orders nothing.
fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Adds one to a counter written only under its shard's lock, which the
/// caller holds (`_members`): a load and a store, no locked instruction.
fn bump_locked<E>(counter: &AtomicU64, _members: &Members<E>) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

impl<E> LiveSet<E> {
    /// An empty, open set of `capacity` slots over `shards` shards.
    pub(crate) fn new(capacity: usize, shards: usize) -> Self {
        LiveSet {
            slots: ShardedCounter::new(capacity, shards, Shares::default()),
            shards: (0..shards)
                .map(|_| {
                    CachePadded::new(LiveShard {
                        members: SpinLock::new(Members {
                            issued: 0,
                            children: Slab::new(),
                            #[cfg(feature = "tokio")]
                            wakers: Vec::new(),
                        }),
                        counts: Counts::default(),
                    })
                })
                .collect(),
            closed: AtomicBool::new(false),
            cancellation: Cancellation::new(),
            drain: Drain::new(),
            #[cfg(feature = "tokio")]
            aborting: AtomicBool::new(false),
        }
    }

    /// The children's cancellation.
    #[inline]
    pub(crate) fn cancellation(&self) -> &Cancellation {
        &self.cancellation
    }

    /// The wait for the last child once the set is closed.
    #[inline]
    pub(crate) fn drain(&self) -> &Drain {
        &self.drain
    }

    /// The slots: capacity, usage and resizing are the counter's.
    #[inline]
    pub(crate) fn slots(&self) -> &ShardedCounter {
        &self.slots
    }

    /// How many shards.
    #[inline]
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// A slot for a new child, probing from shard `start`: the shard it
    /// was taken on, or why none was (counted on `start`).
    #[inline]
    pub(crate) fn take_slot(&self, start: usize) -> Result<usize, Refused> {
        if self.is_closed() {
            return Err(self.refused_closed(start));
        }
        self.slots.admit_from(start).map_err(|_| {
            // A refusal racing a close is reported as closed.
            if self.is_closed() {
                self.refused_closed(start)
            } else {
                bump(&self.shards[start].counts.rejected);
                Refused::Overload
            }
        })
    }

    #[cold]
    fn refused_closed(&self, start: usize) -> Refused {
        bump(&self.shards[start].counts.closed);
        Refused::Closed
    }

    /// Registers a child holding a slot on `shard` in that shard's set and
    /// counts it spawned; gives `entry` back, with the slot freed, if the
    /// set closed first (read under the set's lock: see the orderings).
    pub(crate) fn register(&self, shard: usize, entry: E) -> Result<Place, E> {
        let count = self.shards.len() as u64;
        let mut members = spin_lock(&self.shards[shard].members);
        if self.closed.load(Ordering::Acquire) {
            // Freed under the lock, as an ending child's is.
            self.slots.release(shard);
            drop(members);
            bump(&self.shards[shard].counts.closed);
            return Err(entry);
        }
        let id = ChildId::new(members.issued * count + shard as u64);
        members.issued += 1;
        bump_locked(&self.shards[shard].counts.spawned, &members);
        let key = members.children.insert(Member { id, entry });
        // Both fit: shards are few, and a slab holds at most its shard's
        // limit, under 2^24. Sixteen bytes move in two registers.
        Ok(Place {
            shard: shard as u32,
            key: key as u32,
            id,
        })
    }

    /// A child ended: it leaves the set and frees its slot in one step,
    /// under the set's lock, and is counted; if the close counted it, it
    /// counts the drain down. Returns its entry.
    pub(crate) fn remove(&self, place: Place, how: Ended) -> E {
        let shard = place.shard();
        let counts = &self.shards[shard].counts;
        let mut members = spin_lock(&self.shards[shard].members);
        let member = members.children.remove(place.key as usize);
        debug_assert_eq!(member.id, place.id, "a child ends once");
        #[cfg(feature = "tokio")]
        let waker = members
            .wakers
            .get_mut(place.key as usize)
            .and_then(Option::take);
        bump_locked(&counts.finished, &members);
        match how {
            Ended::Completed => {}
            Ended::Panicked => bump_locked(&counts.panicked, &members),
            Ended::Dropped => bump_locked(&counts.cancelled, &members),
        }
        self.slots.release(shard);
        // Under the lock: see the drain's orderings.
        let counted = self.drain.counted();
        drop(members);
        // Its waker, if it left one, is dropped outside the lock.
        #[cfg(feature = "tokio")]
        drop(waker);
        if counted {
            self.drain.child_left();
        }
        member.entry
    }

    /// A registered child never started (the OS refused its thread): it
    /// leaves the set uncounted as spawned, counted as a failed spawn, and
    /// its slot is freed.
    pub(crate) fn remove_unstarted(&self, place: Place) -> E {
        let shard = place.shard();
        let counts = &self.shards[shard].counts;
        let mut members = spin_lock(&self.shards[shard].members);
        let member = members.children.remove(place.key as usize);
        debug_assert_eq!(member.id, place.id, "a child leaves once");
        counts.spawned.store(
            counts.spawned.load(Ordering::Relaxed) - 1,
            Ordering::Relaxed,
        );
        bump_locked(&counts.spawn_failed, &members);
        self.slots.release(shard);
        let counted = self.drain.counted();
        drop(members);
        if counted {
            self.drain.child_left();
        }
        member.entry
    }

    /// Closes the set: from now on no child registers. Counts the children
    /// alive, every set locked at once, for the drain, which signals when
    /// the last of them has left (at once if none). A second close does
    /// nothing.
    pub(crate) fn close(&self) {
        // Release: see the orderings; the sets' locks carry it.
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let sets = self.lock_all();
        let live = sets.iter().map(|set| set.children.len()).sum();
        self.drain.start(live);
        drop(sets);
        if live == 0 {
            self.drain.finish();
        }
    }

    /// Whether [`close`](Self::close) was called.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Every shard's set locked at once, in shard order: what is read under
    /// them is of one moment. Slots move between shards, so sets read one
    /// at a time could see a child that ended on one shard and the child
    /// that took its slot on another. Nothing else holds two of these locks.
    fn lock_all(&self) -> Vec<SpinGuard<'_, Members<E>>> {
        self.shards
            .iter()
            .map(|shard| spin_lock(&shard.members))
            .collect()
    }

    /// Each shard's live children at one moment.
    pub(crate) fn live_counts(&self) -> Vec<usize> {
        let sets = self.lock_all();
        sets.iter().map(|set| set.children.len()).collect()
    }

    /// Each shard's live children and the counters, at one moment: the
    /// counters written under the sets' locks are read with every set
    /// locked, so `spawned ≥ live + finished` holds exactly (a child that
    /// ends leaves its set and is counted finished in one step).
    pub(crate) fn live_counts_and_totals(&self) -> (Vec<usize>, Totals) {
        let sets = self.lock_all();
        let live = sets.iter().map(|set| set.children.len()).collect();
        let totals = self.totals();
        drop(sets);
        (live, totals)
    }

    /// The live children at one moment.
    pub(crate) fn live_count(&self) -> usize {
        self.live_counts().into_iter().sum()
    }

    /// The ids of the live children whose entry `listed` accepts, in order,
    /// at one moment.
    pub(crate) fn ids(&self, listed: impl Fn(&E) -> bool) -> Vec<ChildId> {
        let sets = self.lock_all();
        let mut ids: Vec<ChildId> = sets
            .iter()
            .flat_map(|set| {
                set.children
                    .iter()
                    .filter(|(_, member)| listed(&member.entry))
                    .map(|(_, member)| member.id)
            })
            .collect();
        drop(sets);
        ids.sort_unstable();
        ids
    }

    /// A clone of every live child's entry, each shard's read under its
    /// lock (for a sweep that acts on them outside the locks).
    pub(crate) fn entries(&self) -> Vec<E>
    where
        E: Clone,
    {
        let mut entries = Vec::new();
        for shard in self.shards.iter() {
            let members = spin_lock(&shard.members);
            entries.extend(
                members
                    .children
                    .iter()
                    .map(|(_, member)| member.entry.clone()),
            );
        }
        entries
    }

    /// The counters summed over the shards.
    pub(crate) fn totals(&self) -> Totals {
        let sum = |field: fn(&Counts) -> &AtomicU64| -> u64 {
            self.shards
                .iter()
                .map(|shard| field(&shard.counts).load(Ordering::Relaxed))
                .sum()
        };
        Totals {
            spawned: sum(|c| &c.spawned),
            finished: sum(|c| &c.finished),
            panicked: sum(|c| &c.panicked),
            cancelled: sum(|c| &c.cancelled),
            rejected: sum(|c| &c.rejected),
            closed: sum(|c| &c.closed),
            spawn_failed: sum(|c| &c.spawn_failed),
        }
    }

    /// Whether [`abort_all`](Self::abort_all) was called.
    #[cfg(feature = "tokio")]
    #[inline]
    pub(crate) fn is_aborting(&self) -> bool {
        // Acquire: pairs with `abort_all`'s release store. A child that
        // left its waker is polled after `abort_all` wakes it, which is
        // after the store, so that poll reads `true`; a child that had not
        // yet left its waker decides in `watch`, under its set's lock.
        self.aborting.load(Ordering::Acquire)
    }

    /// A spawned task went pending for the first time: leaves its waker for
    /// [`abort_all`](Self::abort_all); `false` if the abort came first, and
    /// the child is to end now.
    #[cfg(feature = "tokio")]
    pub(crate) fn watch(&self, place: Place, waker: &Waker) -> bool {
        let mut members = spin_lock(&self.shards[place.shard()].members);
        // Read under the lock `abort_all` takes after setting it.
        if self.aborting.load(Ordering::Relaxed) {
            return false;
        }
        let key = place.key as usize;
        debug_assert_eq!(members.children[key].id, place.id, "its own entry");
        if members.wakers.len() <= key {
            members.wakers.resize(key + 1, None);
        }
        members.wakers[key] = Some(waker.clone());
        true
    }

    /// Aborts every watching child: each ends at its next poll, and those
    /// waiting are woken for it.
    #[cfg(feature = "tokio")]
    pub(crate) fn abort_all(&self) {
        // Release: see `is_aborting`. The children that take a set's lock
        // in `watch` after this takes it read it through the lock.
        self.aborting.store(true, Ordering::Release);
        for shard in self.shards.iter() {
            let wakers: Vec<Waker> = spin_lock(&shard.members)
                .wakers
                .iter()
                .flatten()
                .cloned()
                .collect();
            wakers.into_iter().for_each(Waker::wake);
        }
    }
}
