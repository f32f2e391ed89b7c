//! The blocking face's steps of the engine's `create.rs`: those that
//! call a [`Manager`]'s hooks directly or wait on a thread.

use super::pending_create::PendingCreate;
use crate::object_pool::engine::Background;
use crate::object_pool::engine::Counted;
use crate::object_pool::engine::PoolShared;
use crate::object_pool::engine::{Made, MemberBox};
use crate::object_pool::error::TakeError;
use crate::object_pool::manager::Manager;
use crate::sync::spawn_named;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The blocking face's creations: [`Manager::create`] called on the
/// caller's thread or a helper thread.
impl<M: Manager> PoolShared<M> {
    /// Makes an object for a taker in `shard`'s slot, counting the take.
    /// `deadline` is the take's own, if it has one.
    pub(in crate::object_pool) fn create_for_taker(
        &self,
        shard: usize,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let made = self.create_in(shard, deadline);
        if made.is_ok() {
            self.count(Counted::DirectTake);
        }
        made
    }

    /// Makes an object counted by `shard`'s slot, freeing the slot if that
    /// fails. With a `deadline` (the caller's own) or a `create_timeout`,
    /// the call runs on a helper thread and the caller stops waiting at the
    /// earlier of the two: [`TakeError::Timeout`] if its own deadline came
    /// first, [`TakeError::CreateTimeout`] if the pool's bound did. The
    /// slot then stays counted until the call returns.
    pub(in crate::object_pool) fn create_in(
        &self,
        shard: usize,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let bound = self.config().create_timeout.map(|timeout| {
            Instant::now()
                .checked_add(timeout)
                .unwrap_or_else(far_future)
        });
        let Some(limit) = deadline.into_iter().chain(bound).min() else {
            return self.born(shard, self.create_here());
        };
        let Some(pending) = self.start_create(shard) else {
            // No helper thread could start: make it here, unbounded.
            return self.born(shard, self.create_here());
        };
        match self.wait_for_helper(&pending, limit) {
            Some(made) => self.born(shard, made),
            None => {
                if bound.is_some_and(|bound| bound <= limit) {
                    Err(TakeError::CreateTimeout)
                } else {
                    self.count(Counted::Timeout);
                    Err(TakeError::Timeout)
                }
            }
        }
    }

    /// Waits for a helper's creation until `deadline`: its result, or
    /// `None` once the deadline passed (the helper then disposes of it).
    /// The core the helper handed over is let go here, never the last
    /// reference: the caller borrows the pool.
    fn wait_for_helper(&self, pending: &Pending<M>, deadline: Instant) -> Option<Made<M>> {
        let (made, _core) = pending.wait_until(deadline, || self.abandon())?;
        Some(made)
    }

    /// Calls [`Manager::create`] on this thread, counted as creating.
    fn create_here(&self) -> Made<M> {
        self.creating_started();
        let made = catch_unwind(AssertUnwindSafe(|| self.manager().create()));
        self.creating_ended();
        made
    }

    /// Starts [`Manager::create`] on a helper thread for `shard`'s slot;
    /// `None` if no thread could start (the slot is still the caller's).
    /// If whoever waits gives up, the helper disposes of the late result
    /// itself: it destroys the object, or frees the slot of a failed call
    /// (see `pending_create.rs`).
    pub(in crate::object_pool) fn start_create(&self, shard: usize) -> Option<Pending<M>> {
        let shared = self.arc()?;
        let pending = Arc::new(PendingCreate::new());
        self.creating_started();
        let body = {
            let pending = Arc::clone(&pending);
            move || {
                let made = catch_unwind(AssertUnwindSafe(|| shared.manager().create()));
                shared.creating_ended();
                // The core goes with the result (see `Pending`); it comes
                // back if the waiter gave up, to dispose of the result.
                if let Err((late, shared)) = pending.finish((made, shared)) {
                    shared.abandoned_disposed();
                    shared.dispose_late(shard, late);
                }
            }
        };
        match spawn_named("sidejob-create".to_owned(), None, body) {
            Ok(_detached) => Some(pending),
            Err(_) => {
                self.creating_ended();
                None
            }
        }
    }

    /// Makes one object in the background and keeps it, unless the pool
    /// is full or closed.
    pub(in crate::object_pool) fn create_idle(&self) -> Background {
        if self.is_closed() {
            return Background::NoRoom;
        }
        let Ok(shard) = self.admit_slot(self.home()) else {
            return Background::NoRoom;
        };
        match self.create_in(shard, None) {
            Ok(idle) => {
                self.keep_made(idle);
                Background::Kept
            }
            Err(_) => Background::Failed,
        }
    }

    /// Makes the `init_size` objects. A failure is counted and does not
    /// stop the others. With a `create_timeout`, they are made at once on
    /// helper threads and waited for together, so `build` waits at most
    /// that long however many calls hang.
    pub(in crate::object_pool) fn create_initial(&self, count: usize) {
        let Some(timeout) = self.config().create_timeout else {
            for _ in 0..count {
                let _ = catch_unwind(AssertUnwindSafe(|| self.create_idle()));
            }
            return;
        };
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(far_future);
        let mut pending = Vec::with_capacity(count);
        for _ in 0..count {
            let Ok(shard) = self.admit_slot(self.home()) else {
                break;
            };
            match self.start_create(shard) {
                Some(started) => pending.push((shard, started)),
                // No helper thread: made here, unbounded.
                None => self.keep_initial(shard, self.create_here()),
            }
        }
        for (shard, started) in pending {
            // A creation not back by the deadline is abandoned: its helper
            // destroys the late object.
            if let Some(made) = self.wait_for_helper(&started, deadline) {
                self.keep_initial(shard, made);
            }
        }
    }

    /// Keeps what an initial creation made; a failure is counted, and a
    /// panic does not stop the other creations.
    fn keep_initial(&self, shard: usize, made: Made<M>) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            if let Ok(idle) = self.born(shard, made) {
                self.keep_made(idle);
            }
        }));
    }
}

/// A creation running on a helper thread. The helper hands its reference
/// to the pool's core over with the result, so that once the waiter has
/// its object no helper thread still holds the core: dropping the pool and
/// its objects then drops the manager at once, on the dropping thread.
pub(in crate::object_pool) type Pending<M> = Arc<PendingCreate<(Made<M>, Arc<PoolShared<M>>)>>;

/// A deadline past any real one, for a timeout too long to add to now.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(365 * 24 * 3600)
}
