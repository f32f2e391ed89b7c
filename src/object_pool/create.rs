//! Creating objects: in a slot taken for a taker or for the maintainer,
//! with the generation and lifetime a new member is born with.

use std::hash::BuildHasher;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use crate::sync::{lock, Ordering};

use super::error::TakeError;
use super::manager::Manager;
use super::member::{Member, MemberBox};
use super::shared::{bump, nanos, PoolShared};

impl<M: Manager> PoolShared<M> {
    /// Makes an object for a taker in `slot`, counting the take.
    pub(super) fn create_for_taker(
        &self,
        shard: usize,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let made = self.create_in(shard);
        if made.is_ok() {
            bump(&self.counters.direct_takes);
        }
        made
    }

    /// Makes an object counted by `slot`, freeing the slot if that fails.
    pub(super) fn create_in(
        &self,
        shard: usize,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let counters = &self.counters;
        counters.creating.fetch_add(1, Ordering::Relaxed);
        let made = catch_unwind(AssertUnwindSafe(|| self.manager.create()));
        counters.creating.fetch_sub(1, Ordering::Relaxed);
        match made {
            Ok(Ok(object)) => {
                bump(&counters.creates);
                let (generation, expires) = self.birth();
                Ok(Member::boxed(object, shard, generation, expires))
            }
            Ok(Err(error)) => {
                bump(&counters.create_failures);
                self.free_slot(shard);
                Err(TakeError::Create(error))
            }
            Err(panic) => {
                bump(&counters.create_failures);
                self.free_slot(shard);
                resume_unwind(panic)
            }
        }
    }

    /// A new object's generation and expiry, and its count in its
    /// generation.
    pub(super) fn birth(&self) -> (u64, u64) {
        let generation = self.gate.generation.load(Ordering::Relaxed);
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
                let now = self.gate.clock.precise();
                now.saturating_add(nanos(lifetime) - shortened)
            }
        };
        (generation, expires)
    }

    /// Makes one object in the background and keeps it; `false` if the pool
    /// is full or closed, or creation failed.
    pub(super) fn create_idle(&self) -> bool {
        if self.gate.closed.load(Ordering::Relaxed) {
            return false;
        }
        let Ok(shard) = self.slots.admit_from(self.home()) else {
            return false;
        };
        match self.create_in(shard) {
            Ok(idle) => {
                // Onto the stack of its slot's shard: the maintainer's
                // objects spread over the stacks as their slots do.
                let stack = idle.shard;
                self.put_idle(idle, stack);
                true
            }
            Err(_) => false,
        }
    }
}
