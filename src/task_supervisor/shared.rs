//! What a task supervisor, its clones and its children share: the live set
//! (the slots, per shard the children and their counters, their
//! cancellation in generations and the drain `wait` awaits: see
//! `crate::children`), and the supervisor's name.
//!
//! # Orderings
//!
//! The live set's own (`children/live_set.rs`): `closed` and `aborting`
//! against its locks, a child's slot freed before its set is unlocked, and
//! the drain counted down after it. So when the last counted child signals
//! the drain, each removal's slot release happened before, and `wait`,
//! woken through the drain's token (which synchronises), finds every
//! child's slot free. (A spawn that took a slot before the close and is
//! refused at its registration gives that slot back a moment later:
//! `count()` may show it in between.)

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::children::{Ended, LiveSet, Place};

/// What the supervisor and its children share.
pub(super) struct TaskShared {
    /// The slots and the children alive, their cancellation and their
    /// drain: a task keeps nothing in it but its id (and, spawned, its
    /// waker).
    pub(super) live: LiveSet<()>,
    pub(super) name: String,
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
            name,
        }
    }

    /// A child ended: it leaves the live set and frees its slot, once, and
    /// is counted; if it was the last of a closed supervisor, `wait` ends.
    pub(super) fn child_ended(&self, place: Place, how: Ended) {
        self.live.remove(place, how);
    }
}
