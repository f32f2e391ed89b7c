//! What a task supervisor, its clones and its children share: the live set
//! (the slots, and per shard the children and their counters: see
//! `crate::children`), the cancellation of the current generation of
//! children, and the signal that the last child ended.
//!
//! # Orderings
//!
//! - The live set's own (`children/live_set.rs`): `closed` and `aborting`
//!   against its locks, and a child's slot freed before its set is
//!   unlocked. So when `signal_if_idle` finds every set empty, each
//!   removal's slot release happened before, and `wait`, woken through the
//!   cancellation token (which synchronises), reads a usage of 0.
//! - `generation_number` is stored (`Release`) under the generation's lock
//!   after the generation itself, and read (`Acquire`) by every admission:
//!   a context never holds a number ahead of the generation it finds.

use std::sync::Arc;

use crossbeam_utils::CachePadded;
use tokio_util::sync::CancellationToken;

use crate::children::{Ended, LiveSet, Place};
use crate::sync::{lock, AtomicU64, Mutex, Ordering};

/// What the supervisor and its children share.
pub(super) struct TaskShared {
    /// The slots and the children alive: a task keeps nothing in it but
    /// its id (and, spawned, its waker).
    pub(super) live: LiveSet<()>,
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

/// The children of one cancellation generation: those admitted since the
/// last `cancel_all`, whose token it cancels.
pub(super) struct Generation {
    number: u64,
    token: CancellationToken,
}

/// A shard's own reference to what the supervisor shares. A child's guard
/// and its context each hold one, cloned from their shard's anchor, whose
/// reference count sits on a line of its own: spawns on different shards
/// write no reference count in common (see the design notes in `mod.rs`).
pub(super) type Anchor = Arc<CachePadded<Arc<TaskShared>>>;

/// One anchor per shard of `shared`.
pub(super) fn anchors(shared: &Arc<TaskShared>) -> Box<[Anchor]> {
    (0..shared.live.shard_count())
        .map(|_| Arc::new(CachePadded::new(Arc::clone(shared))))
        .collect()
}

impl TaskShared {
    pub(super) fn new(capacity: usize, shards: usize, name: String) -> Self {
        TaskShared {
            live: LiveSet::new(capacity, shards),
            generation_number: AtomicU64::new(0),
            generation: Mutex::new(Generation {
                number: 0,
                token: CancellationToken::new(),
            }),
            idle: CancellationToken::new(),
            name,
        }
    }

    /// A child ended: it leaves the live set and frees its slot, once, and
    /// is counted; if it was the last of a closed supervisor, `wait` ends.
    pub(super) fn child_ended(&self, place: Place, how: Ended) {
        let ((), closed) = self.live.remove(place, how);
        if closed {
            self.signal_if_idle();
        }
    }

    /// Closed and nobody alive: `wait` may end.
    pub(super) fn signal_if_idle(&self) {
        if self.live.live_count() == 0 {
            self.idle.cancel();
        }
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
