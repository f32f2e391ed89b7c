//! The end of an object: destroyed by the manager or detached from the
//! pool; either way its slot is freed exactly once.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use crossbeam_utils::CachePadded;

use crate::sync::lock;

use super::counters::Counted;
use super::hooks::Hooks;
use super::member::{Member, MemberBox};
use super::shared::PoolShared;

impl<M: Hooks> PoolShared<M> {
    /// Destroys `idle` and frees its slot; hands back a panic from
    /// [`Manager::destroy`] after the slot is freed.
    #[expect(
        clippy::boxed_local,
        reason = "an object lives in its box from creation to here"
    )]
    pub(in crate::object_pool) fn destroy(
        &self,
        idle: MemberBox<M::Object>,
    ) -> Result<(), Box<dyn std::any::Any + Send>> {
        let Member {
            object,
            shard,
            generation,
            ..
        } = CachePadded::into_inner(*idle);
        let outcome = catch_unwind(AssertUnwindSafe(|| self.manager.destroy_object(object)));
        self.counters.count(Counted::Destroyed);
        self.bury(generation);
        self.free_slot(shard);
        outcome
    }

    /// [`destroy`](Self::destroy), letting a panic from
    /// [`Manager::destroy`] go on.
    pub(in crate::object_pool) fn destroy_or_resume(&self, idle: MemberBox<M::Object>) {
        if let Err(panic) = self.destroy(idle) {
            resume_unwind(panic);
        }
    }

    /// Takes the object out of the pool for good: frees its slot without
    /// destroying it.
    #[expect(
        clippy::boxed_local,
        reason = "an object lives in its box from creation to here"
    )]
    pub(in crate::object_pool) fn detach(&self, idle: MemberBox<M::Object>) -> M::Object {
        let Member {
            object,
            shard,
            generation,
            ..
        } = CachePadded::into_inner(*idle);
        self.bury(generation);
        self.free_slot(shard);
        object
    }

    /// An object leaves the pool for good: it no longer counts in its
    /// generation.
    pub(in crate::object_pool) fn bury(&self, generation: u64) {
        let mut generations = lock(&self.generations);
        if let Some(alive) = generations.get_mut(&generation) {
            *alive -= 1;
            if *alive == 0 {
                generations.remove(&generation);
            }
        }
    }
}
