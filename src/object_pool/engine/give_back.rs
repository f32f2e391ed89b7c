//! Returning an object: checked by the manager, then pushed on its own
//! stack (or the tag shelf), handed to a waiter, or destroyed.

use crate::sync::{lock, spin_lock};

use super::counters::Counted;
use super::held::Held;
use super::hooks::Hooks;
use super::member::MemberBox;
use super::shared::PoolShared;
use super::wait_queue::Handoff;

impl<M: Hooks> PoolShared<M> {
    /// Takes back a returned object: reused if its holder did not panic and
    /// it passes [`Manager::check`], destroyed otherwise.
    #[inline]
    pub(in crate::object_pool) fn give_back(&self, idle: MemberBox<M::Object>) {
        if std::thread::panicking() {
            return self.give_back_from_panic(idle);
        }
        // If `check` panics, the guard destroys the object (its slot freed)
        // as the panic passes through. The object stays in its box, so
        // moving it in and out of the guard moves a pointer.
        let mut guard = DestroyOnUnwind {
            pool: self,
            held: Held::new(idle),
        };
        let Some(idle) = guard.held.member_mut() else {
            return;
        };
        let reusable = self.manager.check_now(&mut idle.object);
        let Some(idle) = guard.held.take() else {
            return;
        };
        if reusable {
            // The taker's home stack: its next take finds this object
            // first (LIFO as the thread sees it).
            let home = idle.home;
            self.put_idle(idle, home);
        } else {
            self.destroy_or_resume(idle);
        }
    }

    /// The holder panicked: the object's state is unknown, so it is
    /// destroyed. A panicking `destroy` now would abort, so it is contained.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn give_back_from_panic(&self, idle: MemberBox<M::Object>) {
        let _ = self.destroy(idle);
    }

    /// Keeps a reusable object: onto idle stack `stack`, or to a waiter.
    /// Objects that expired or were retired are destroyed instead.
    #[inline]
    pub(in crate::object_pool) fn put_idle(&self, idle: MemberBox<M::Object>, stack: usize) {
        if idle.special {
            return self.put_special(idle, stack);
        }
        self.put_on_stack(idle, stack);
    }

    /// Pushes an untagged object onto idle stack `stack`, or hands it to
    /// the cold path when takers wait or the gate says otherwise.
    #[inline]
    pub(in crate::object_pool) fn put_on_stack(
        &self,
        mut idle: MemberBox<M::Object>,
        stack: usize,
    ) {
        let gate = &self.gate;
        idle.idle_since = gate.clock().coarse();
        let mut top = spin_lock(&self.idle[stack]);
        if gate.keeps_idle(idle.generation) {
            top.push(idle);
            return;
        }
        drop(top);
        self.put_idle_cold(idle, stack);
    }

    /// `put_idle` for an object with a lifetime or a tag: destroys it if
    /// its lifetime ran out, else keeps it on the shelf (tagged) or its
    /// stack `stack`.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn put_special(&self, mut idle: MemberBox<M::Object>, stack: usize) {
        if idle.may_expire() && self.gate.clock().precise() >= idle.expires {
            return self.expire(idle);
        }
        if idle.tag.is_none() {
            return self.put_on_stack(idle, stack);
        }
        idle.idle_since = self.gate.clock().coarse();
        self.put_tagged(idle, stack);
    }

    /// Shelves a returned tagged object, as `put_idle` pushes an untagged
    /// one: the shelf's lock stands in for the stack's.
    pub(in crate::object_pool) fn put_tagged(&self, idle: MemberBox<M::Object>, stack: usize) {
        let shelf = self.tags.get().expect("a tagged object implies the shelf");
        let generation = idle.generation;
        let gate = &self.gate;
        let shelved = shelf.put(idle, &|| gate.keeps_idle(generation));
        if let Err(idle) = shelved {
            self.put_idle_cold(idle, stack);
        }
    }

    /// Takers wait, or the pool is closed or above its size, or the object
    /// is stale. An untagged object nobody takes goes onto `stack`.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn put_idle_cold(&self, idle: MemberBox<M::Object>, stack: usize) {
        if self.oversized() {
            self.destroy_or_resume(idle);
            return;
        }
        let mut queue = lock(&self.waiters);
        let stale = self.gate.generation() != idle.generation;
        if self.gate.is_closed() || stale {
            drop(queue);
            self.destroy_or_resume(idle);
            return;
        }
        let served = queue.serve(Handoff::Object(idle));
        self.gate.set_waiting(queue.len());
        let mut idle = match served {
            Ok(()) => return self.counters.count(Counted::DirectTake),
            Err(Handoff::Object(idle)) => idle,
            Err(_) => unreachable!("serve hands back what it was given"),
        };
        // Nobody waits any more. Holding the queue lock, no taker can
        // register before the push. `close` and `retire_all` change their
        // flag before they sweep this stack, so it is read again under its
        // lock.
        let gate = &self.gate;
        let generation = idle.generation;
        let admit = || !gate.is_closed() && gate.generation() == generation;
        idle.idle_since = self.gate.clock().coarse();
        if idle.tag.is_some() {
            let shelf = self.tags.get().expect("a tagged object implies the shelf");
            if let Err(idle) = shelf.put(idle, &admit) {
                drop(queue);
                self.destroy_or_resume(idle);
            }
            return;
        }
        let mut top = spin_lock(&self.idle[stack]);
        if !admit() {
            drop(top);
            drop(queue);
            self.destroy_or_resume(idle);
            return;
        }
        top.push(idle);
    }
}

/// Destroys the object it still holds when dropped, which happens only when
/// [`Manager::check`] panics.
struct DestroyOnUnwind<'a, M: Hooks> {
    pool: &'a PoolShared<M>,
    /// As in `Pooled`: `drop` takes what is left.
    held: Held<M::Object>,
}

impl<M: Hooks> Drop for DestroyOnUnwind<'_, M> {
    fn drop(&mut self) {
        if let Some(idle) = self.held.take() {
            // Already unwinding: a second panic from `destroy` is contained.
            let _ = self.pool.destroy(idle);
        }
    }
}
