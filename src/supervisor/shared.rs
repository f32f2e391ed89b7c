//! What a supervisor and its children share: the live set (the slots, per
//! shard the children and their counters, their cancellation and the drain
//! a shutdown waits on: see `crate::children`), each child's state kept in
//! it, and the starts a shutdown waits to resolve.
//!
//! # Orderings
//!
//! - The live set's own (`children/live_set.rs`): `closed` against its
//!   locks, a child's slot freed before its set is unlocked.
//! - `starting` is raised before a child registers and lowered once the OS
//!   started its thread or refused it: a shutdown that swept the child
//!   (under its set's lock, after the registration) reads it raised until
//!   the start resolved. It is read and lowered under no common lock, so
//!   whoever lowers it always wakes a shutdown (`start_resolved`).
//! - A shutdown waits for the live set's drain (`children/drain.rs`),
//!   which the last child the close counted signals as it leaves.

use std::sync::Arc;

use crate::children::{Ended, LiveSet, Place};
use crate::sync::{lock, AtomicUsize, Condvar, Mutex, Ordering};

use super::child::ChildState;

/// What the supervisor and its children share.
pub(super) struct Shared {
    /// The slots and the children alive, each with its state.
    pub(super) live: LiveSet<Arc<ChildState>>,
    /// Wakes a shutdown waiting for the starts under way to resolve.
    pub(super) exits: Condvar,
    pub(super) exit_lock: Mutex<()>,
    /// Children registering, or registered, whose thread the OS has not
    /// yet started or refused: a shutdown's report waits for them to be
    /// one or the other.
    pub(super) starting: AtomicUsize,
    pub(super) name: String,
    pub(super) stack_size: Option<usize>,
}

impl Shared {
    pub(super) fn new(
        capacity: usize,
        shards: usize,
        name: String,
        stack_size: Option<usize>,
    ) -> Self {
        Shared {
            live: LiveSet::new(capacity, shards),
            exits: Condvar::new(),
            exit_lock: Mutex::new(()),
            starting: AtomicUsize::new(0),
            name,
            stack_size,
        }
    }

    /// Registers a child holding a slot on `shard`, its start pending;
    /// `None`, with its slot given back, if shutdown began first.
    pub(super) fn register(&self, shard: usize, state: &Arc<ChildState>) -> Option<Place> {
        // Raised before the registration, so a shutdown that sweeps this
        // child waits for its start to resolve.
        self.starting.fetch_add(1, Ordering::SeqCst);
        match self.live.register(shard, Arc::clone(state)) {
            Ok(place) => Some(place),
            Err(_) => {
                self.start_resolved();
                None
            }
        }
    }

    /// A child ended: it leaves the live set and frees its slot (counted);
    /// the last one a shutdown waits for signals the drain.
    pub(super) fn child_ended(&self, place: Place, panicked: bool) {
        let how = if panicked {
            Ended::Panicked
        } else {
            Ended::Completed
        };
        self.live.remove(place, how);
    }

    /// The OS started a registered child's thread, or refused it. Wakes a
    /// shutdown whether or not this thread saw the set closed: a shutdown
    /// closes the set, then reads `starting`, while this lowers `starting`,
    /// then would read `closed`; each could miss the other's write (a
    /// loom model found the shutdown waiting for good). The lock it takes
    /// to wake is the one the shutdown reads `starting` under.
    pub(super) fn start_resolved(&self) {
        self.starting.fetch_sub(1, Ordering::SeqCst);
        let _guard = lock(&self.exit_lock);
        self.exits.notify_all();
    }

    /// The OS refused a registered child's thread: undo its registration
    /// and give its slot back.
    pub(super) fn unregister_unstarted(&self, place: Place) {
        let state = self.live.remove_unstarted(place);
        // Before a shutdown reads it (after `start_resolved`): it never
        // ran, so a shutdown that asked it to stop does not count it.
        state.refused.store(true, Ordering::Release);
    }
}
