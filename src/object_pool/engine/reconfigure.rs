//! Changing a running pool: its limits and timers (`reconfigure`), and
//! retiring every object (`retire_all`), for both faces.

use std::panic::resume_unwind;
use std::sync::Arc;

use crate::admission::check_capacity;
use crate::error::BuildError;
use crate::sync::lock;

use super::super::config::{max_size_error, PoolConfig};
use super::hooks::Hooks;
use super::shared::PoolShared;

impl<M: Hooks> PoolShared<M> {
    /// Applies `change` to the configuration, checked; `start_maintainer`
    /// makes sure the face's maintainer runs when the new one needs it.
    /// See [`ObjectPool::reconfigure`](super::super::ObjectPool::reconfigure).
    pub(in crate::object_pool) fn reconfigure(
        &self,
        change: impl FnOnce(&mut PoolConfig),
        start_maintainer: impl FnOnce(&PoolConfig) -> Result<(), BuildError>,
    ) -> Result<(), BuildError> {
        let shared = self;
        let _reconfiguring = lock(&shared.reconfiguring);
        let old = shared.config.load_full();
        let mut new = PoolConfig::clone(&old);
        change(&mut new);
        new.validate()?;
        check_capacity(new.max_size).map_err(max_size_error)?;
        start_maintainer(&new)?;
        shared.config.store(Arc::new(new.clone()));
        shared.gate.set_settings(new.min_idle, new.check_on_take);
        // Once lifetimes were on, objects with one may remain: keep checking.
        if new.needs_after_pop() || old.max_lifetime.is_some() {
            shared.gate.set_after_pop();
        }
        if new.queue_max < old.queue_max {
            let mut queue = lock(&shared.waiters);
            queue.refuse_beyond(new.queue_max);
            shared.gate.set_waiting(queue.len());
        }
        let mut panic = None;
        if new.max_size > old.max_size {
            shared
                .slots
                .set_capacity(new.max_size)
                .map_err(max_size_error)?;
            shared.serve_waiters_with_new_slots();
        } else if new.max_size < old.max_size {
            // The flag first, so that no slot freed meanwhile goes to a
            // waiter (see `free_slot`).
            shared.gate.set_oversized(true);
            shared
                .slots
                .set_capacity(new.max_size)
                .map_err(max_size_error)?;
            panic = shared.shrink_idle_to(new.max_size);
        }
        shared.maintenance.wake_now();
        if let Some(panic) = panic {
            resume_unwind(panic);
        }
        Ok(())
    }

    /// Retires every object that exists now: idle ones are destroyed at
    /// once, ones in use when they come back. A panic from a `destroy`
    /// goes on once every idle object is dealt with.
    pub(in crate::object_pool) fn retire_all(&self) {
        self.gate.next_generation();
        if let Some(panic) = self.sweep_idle() {
            resume_unwind(panic);
        }
        self.maintenance.wake_now();
    }

    /// How many objects made before the last `retire_all` still exist.
    pub(in crate::object_pool) fn stale_count(&self) -> usize {
        let current = self.gate.generation();
        lock(&self.generations)
            .range(..current)
            .map(|(_, alive)| alive)
            .sum()
    }
}
