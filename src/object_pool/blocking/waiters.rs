//! The blocking face's steps of the engine's `waiters.rs`: those that
//! call a [`Manager`]'s hooks directly or wait on a thread.

use std::time::Instant;

use crate::object_pool::engine::Handoff;
use crate::object_pool::engine::MemberBox;
use crate::object_pool::engine::PoolShared;
use crate::object_pool::engine::{Joined, Served};
use crate::object_pool::error::TakeError;
use crate::object_pool::manager::Manager;

/// The blocking face's waits, which create on the caller's thread.
impl<M: Manager> PoolShared<M> {
    /// Joins the wait queue, unless something is free after all, and waits
    /// until `deadline` (`None`: no end). A creation for this taker ends by
    /// the deadline too.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn wait_for(
        &self,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let started = Instant::now();
        let (key, cell) = match self.join_queue(deadline)? {
            Joined::Found(found) => {
                return match self.accept_found(found, deadline)? {
                    Some(member) => Ok(member),
                    // It failed its check and was destroyed: look again,
                    // by the same deadline.
                    None => self.wait_for(deadline),
                };
            }
            Joined::Queued { key, cell } => (key, cell),
        };
        cell.wait();
        let handoff = self.stop_waiting(key, &cell, started);
        self.accept(handoff, deadline)
    }

    /// What a taker does with what its own search found: as
    /// [`accept`](Self::accept), but an object found idle is checked first
    /// when `check_on_take` is set (outside every lock); `Ok(None)` if it
    /// failed and was destroyed, and the take must look again.
    pub(in crate::object_pool) fn accept_found(
        &self,
        found: Handoff<M::Object>,
        deadline: Option<Instant>,
    ) -> Result<Option<MemberBox<M::Object>>, TakeError<M::Error>> {
        match found {
            Handoff::Object(member) if self.checks_on_take() => {
                self.check_taken_by(member, deadline)
            }
            found => self.accept(found, deadline).map(Some),
        }
    }

    /// What a taker does with what it was handed, or found. An object handed
    /// by a returner was checked on its return, and a new one needs none;
    /// one made for a slot is made by `deadline`, the take's own.
    pub(in crate::object_pool) fn accept(
        &self,
        handoff: Handoff<M::Object>,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        match self.served(handoff)? {
            Served::Slot(shard) => self.create_for_taker(shard, deadline),
            Served::Object(idle) => Ok(idle),
        }
    }
}
