//! Creating objects: in a slot taken for a taker or for the maintainer,
//! with the generation and lifetime a new member is born with.
//!
//! A creation with a deadline (a take's own, or the pool's
//! `create_timeout`) runs on a helper thread started for it, and the caller
//! waits for it through a [`PendingCreate`] cell until the deadline: a
//! thread stuck in a call cannot be interrupted, so the caller must not be
//! the one making it. A creation nobody waits for any more keeps its slot
//! until the call returns; then the helper destroys the late object, which
//! frees the slot. With no deadline the call runs on the caller's thread.

use std::hash::BuildHasher;
use std::panic::resume_unwind;

use crate::sync::lock;

use super::super::error::TakeError;
use super::counters::Counted;
use super::hooks::Hooks;
use super::member::{Member, MemberBox};
use super::shared::{nanos, PoolShared};

/// What a call to [`Manager::create`] came to: its result, or its panic.
pub(in crate::object_pool) type Made<M> =
    std::thread::Result<Result<<M as Hooks>::Object, <M as Hooks>::Error>>;

/// What every creation ends in, whichever face made it.
impl<M: Hooks> PoolShared<M> {
    /// A new member from what `create` made in `shard`'s slot; a failure
    /// frees the slot, and a panic goes on once it is freed.
    pub(in crate::object_pool) fn born(
        &self,
        shard: usize,
        made: Made<M>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let counters = &self.counters;
        match made {
            Ok(Ok(object)) => {
                counters.count(Counted::Create);
                let (generation, expires) = self.birth();
                Ok(Member::boxed(object, shard, generation, expires))
            }
            Ok(Err(error)) => {
                counters.count(Counted::CreateFailure);
                self.free_slot(shard);
                Err(TakeError::Create(error))
            }
            Err(panic) => {
                counters.count(Counted::CreateFailure);
                self.free_slot(shard);
                resume_unwind(panic)
            }
        }
    }

    /// A new object's generation and expiry, and its count in its
    /// generation.
    pub(in crate::object_pool) fn birth(&self) -> (u64, u64) {
        let generation = self.gate.generation();
        *lock(&self.generations).entry(generation).or_insert(0) += 1;
        let config = self.config.load();
        let expires = match config.max_lifetime {
            None => Member::<M::Object>::NEVER,
            Some(lifetime) => {
                let jitter = nanos(config.lifetime_jitter);
                let shortened = if jitter == 0 {
                    0
                } else {
                    std::collections::hash_map::RandomState::new().hash_one(generation) % jitter
                };
                let now = self.gate.clock().precise();
                now.saturating_add(nanos(lifetime) - shortened)
            }
        };
        (generation, expires)
    }

    /// Its waiter gives up on a creation: counted, and no longer one the
    /// maintainer counts on to refill.
    pub(in crate::object_pool) fn abandon(&self) {
        self.counters.count(Counted::CreateTimeout);
        self.counters.abandoned();
    }

    /// What a creation nobody waits for any more made: the object is
    /// destroyed, which frees its slot (to a waiter first); a failed or
    /// panicking call frees the slot.
    pub(in crate::object_pool) fn dispose_late(&self, shard: usize, late: Made<M>) {
        match late {
            Ok(Ok(object)) => {
                self.counters.count(Counted::Create);
                let (generation, expires) = self.birth();
                // A panicking `destroy` has nobody to go on to.
                let _ = self.destroy(Member::boxed(object, shard, generation, expires));
            }
            Ok(Err(_)) | Err(_) => {
                self.counters.count(Counted::CreateFailure);
                self.free_slot(shard);
            }
        }
    }

    /// Puts an object the maintainer made onto the stack of its slot's
    /// shard (or hands it to a waiter): the maintainer's objects spread over
    /// the stacks as their slots do.
    pub(in crate::object_pool) fn keep_made(&self, idle: MemberBox<M::Object>) {
        let stack = idle.shard;
        self.put_idle(idle, stack);
    }
}
