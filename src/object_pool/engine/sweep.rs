//! Sweeping idle objects: on close, on `retire_all`, and down to a lowered
//! `max_size`.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use crate::sync::{lock, spin_lock};

use super::hooks::Hooks;
use super::member::MemberBox;
use super::shared::PoolShared;

impl<M: Hooks> PoolShared<M> {
    /// Whether the pool holds more objects than `max_size` allows (after it
    /// was lowered); clears the flag once it fits again. Under the
    /// reconfiguration lock, so a clear cannot undo a newer shrink's flag.
    /// Never called with the queue lock held (`reconfigure` takes the two in
    /// the other order).
    pub(in crate::object_pool) fn oversized(&self) -> bool {
        if !self.gate.is_oversized() {
            return false;
        }
        let _reconfiguring = lock(&self.reconfiguring);
        let over = self.slots.usage() > self.slots.capacity();
        if !over {
            self.gate.set_oversized(false);
        }
        over
    }

    /// `max_size` shrank: destroys idle objects until the pool fits it or
    /// none is idle. Returns the first panic from `destroy`.
    pub(in crate::object_pool) fn shrink_idle_to(
        &self,
        max_size: usize,
    ) -> Option<Box<dyn std::any::Any + Send>> {
        let mut first_panic = None;
        while self.slots.usage() > max_size {
            let Some(idle) = self.steal_any() else { break };
            if let Err(panic) = self.destroy(idle) {
                first_panic.get_or_insert(panic);
            }
        }
        first_panic
    }

    /// Any idle object: the bottom (longest idle) of any stack, else the
    /// least recently used tagged one.
    pub(in crate::object_pool) fn steal_any(&self) -> Option<MemberBox<M::Object>> {
        self.idle
            .iter()
            .find_map(|stack| spin_lock(stack).take_bottom())
            .or_else(|| self.tags.get()?.take_oldest())
    }

    /// Destroys every idle object; returns the first panic from `destroy`.
    /// The caller changed `closed` or the generation first, so nothing is
    /// pushed onto a stack after its sweep (see `put_idle`).
    pub(in crate::object_pool) fn sweep_idle(&self) -> Option<Box<dyn std::any::Any + Send>> {
        let mut first_panic = None;
        for stack in self.idle.iter() {
            let members = spin_lock(stack).take_all();
            for idle in members {
                if let Err(panic) = self.destroy(idle) {
                    first_panic.get_or_insert(panic);
                }
            }
        }
        let tagged = self.tags.get().map(|shelf| shelf.drain());
        for idle in tagged.into_iter().flatten() {
            if let Err(panic) = self.destroy(idle) {
                first_panic.get_or_insert(panic);
            }
        }
        first_panic
    }

    /// Closes the pool as its face is dropped: a panicking `destroy` is
    /// contained while the thread already unwinds (a second panic would
    /// abort), and goes on otherwise.
    pub(in crate::object_pool) fn close_on_drop(&self) {
        if std::thread::panicking() {
            let _ = catch_unwind(AssertUnwindSafe(|| self.close()));
        } else {
            self.close();
        }
    }

    /// Closes the pool; see [`ObjectPool::close`](super::super::ObjectPool::close).
    pub(in crate::object_pool) fn close(&self) {
        self.gate.close();
        let mut queue = lock(&self.waiters);
        queue.close();
        self.gate.set_waiting(0);
        drop(queue);
        if let Some(panic) = self.sweep_idle() {
            resume_unwind(panic);
        }
    }
}
