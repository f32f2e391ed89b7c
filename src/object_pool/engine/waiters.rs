//! Waiting takers: joining the FIFO queue, being served an object or a
//! slot, and freeing a slot, which goes to the oldest waiter first.

use std::sync::Arc;
use std::time::Instant;

use crate::sync::lock;

use super::super::error::TakeError;
use super::counters::Counted;
use super::hooks::Hooks;
use super::member::MemberBox;
use super::shared::PoolShared;
use super::wait_queue::{Handoff, WaitCell};

/// What a take may use: a [`Handoff`] that is not a refusal.
pub(in crate::object_pool) enum Served<O> {
    /// An object, to hand out (or check first).
    Object(MemberBox<O>),
    /// A free slot on this shard, to make an object in.
    Slot(usize),
}

/// Where a taker stands after trying to join the queue.
pub(in crate::object_pool) enum Joined<O> {
    /// Something was free after all (found under the queue lock): the
    /// taker accepts it as its own search's find.
    Found(Handoff<O>),
    /// Queued under `key`: the taker waits for `cell` to be filled.
    Queued { key: u64, cell: Arc<WaitCell<O>> },
}

impl<M: Hooks> PoolShared<M> {
    /// Joins the wait queue until `deadline` (`None`: no end), unless
    /// something is free after all: registers first, then looks (see the
    /// module's `# Protocol`).
    ///
    /// # Errors
    ///
    /// `Closed`, or `QueueFull` (counted) when `queue_max` takers wait.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn join_queue(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Joined<M::Object>, TakeError<M::Error>> {
        let home = self.home();
        let cell = WaitCell::new(deadline, 1);
        let mut queue = lock(&self.waiters);
        if self.gate.is_closed() {
            return Err(TakeError::Closed);
        }
        let key = queue.push(Arc::clone(&cell), 0);
        self.gate.set_waiting(queue.len());
        // Expired objects the scan meets are destroyed only once the lock
        // is let go: a destroy frees a slot, which takes it.
        let mut doomed = Vec::new();
        let found = self.find_free(home, &mut doomed);
        if found.is_some() || queue.len() > self.config.load().queue_max {
            queue.remove(key);
            self.gate.set_waiting(queue.len());
            drop(queue);
            self.expire_all(doomed);
            return match found {
                Some(handoff) => Ok(Joined::Found(handoff)),
                None => {
                    self.counters.count(Counted::Rejected);
                    Err(TakeError::QueueFull)
                }
            };
        }
        drop(queue);
        self.expire_all(doomed);
        self.counters.count(Counted::Wait);
        Ok(Joined::Queued { key, cell })
    }

    /// The waiter queued under `key` stops waiting (filled, timed out or
    /// dropped): what it was handed, or `Expired` once it is out of the
    /// queue. Its wait, from `started`, is recorded.
    pub(in crate::object_pool) fn stop_waiting(
        &self,
        key: u64,
        cell: &WaitCell<M::Object>,
        started: Instant,
    ) -> Handoff<M::Object> {
        let handoff = match cell.leave() {
            Some((handoff, _)) => handoff,
            None => {
                self.unqueue(key);
                Handoff::Expired
            }
        };
        lock(&self.wait_times).record(started.elapsed());
        handoff
    }

    #[cfg(feature = "tokio")]
    /// Gives back what a taker was handed and will not use (its future was
    /// dropped): an object goes back idle, or to the next waiter; a slot to
    /// the next waiter, or is freed.
    pub(in crate::object_pool) fn hand_on(&self, handoff: Handoff<M::Object>) {
        match handoff {
            Handoff::Object(member) => {
                let home = member.home;
                self.put_idle(member, home);
            }
            Handoff::Slot(shard) => self.free_slot(shard),
            Handoff::Closed | Handoff::QueueFull | Handoff::Expired => {}
        }
    }

    /// What a taker was handed or found: an object or a slot to use, or
    /// else the take's error (counted).
    pub(in crate::object_pool) fn served(
        &self,
        handoff: Handoff<M::Object>,
    ) -> Result<Served<M::Object>, TakeError<M::Error>> {
        match handoff {
            Handoff::Object(member) => Ok(Served::Object(member)),
            Handoff::Slot(shard) => Ok(Served::Slot(shard)),
            Handoff::Closed => Err(TakeError::Closed),
            Handoff::QueueFull => {
                self.counters.count(Counted::Rejected);
                Err(TakeError::QueueFull)
            }
            Handoff::Expired => {
                self.counters.count(Counted::Timeout);
                Err(TakeError::Timeout)
            }
        }
    }

    /// Queues `cell` for a group's wait at any of its pools (this one is
    /// `index` in the group): its key, or `Err(closed)` if the pool is
    /// closed or its queue full.
    pub(in crate::object_pool) fn queue_for_group(
        &self,
        cell: &std::sync::Arc<WaitCell<M::Object>>,
        index: usize,
    ) -> Result<u64, bool> {
        let mut queue = lock(&self.waiters);
        let closed = self.gate.is_closed();
        if closed || queue.len() >= self.config.load().queue_max {
            return Err(closed);
        }
        let key = queue.push(std::sync::Arc::clone(cell), index);
        self.gate.set_waiting(queue.len());
        Ok(key)
    }

    /// A group's waiter, counted on this pool, began to wait.
    pub(in crate::object_pool) fn group_wait_began(&self) {
        self.counters.count(Counted::Wait);
    }

    /// A group's waiter, counted on this pool, waited `waited`; `timed_out`
    /// if it got nothing.
    pub(in crate::object_pool) fn group_wait_ended(
        &self,
        waited: std::time::Duration,
        timed_out: bool,
    ) {
        lock(&self.wait_times).record(waited);
        if timed_out {
            self.counters.count(Counted::Timeout);
        }
    }

    /// Takes the waiter with `key` out of the queue, if it is still there.
    pub(in crate::object_pool) fn unqueue(&self, key: u64) {
        let mut queue = lock(&self.waiters);
        if queue.remove(key) {
            self.gate.set_waiting(queue.len());
        }
    }

    /// Frees `slot`: to the oldest waiter, which makes its own object, or
    /// back to the resource. Under the queue lock, so a waiter that found no
    /// slot before it slept is always served (see `# Protocol`).
    ///
    /// Above a lowered `max_size`, the slot goes back to the resource, which
    /// admits nobody until the pool fits again: a waiter handed it would
    /// make an object and keep the pool above its size for as long as
    /// takers wait. The size is read under the queue lock, so two frees
    /// cannot both see the pool too big and both give their slot back.
    pub(in crate::object_pool) fn free_slot(&self, shard: usize) {
        let mut queue = lock(&self.waiters);
        let oversized = self.gate.is_oversized() && self.slots.usage() > self.slots.capacity();
        if !oversized && !self.gate.is_closed() {
            let served = queue.serve(Handoff::Slot(shard));
            self.gate.set_waiting(queue.len());
            if served.is_ok() {
                return;
            }
        }
        self.slots.release(shard);
        drop(queue);
        if self.gate.keeps_min_idle() {
            self.maintenance.nudge();
        }
    }

    /// `max_size` grew: hands each waiter a new slot while there is room.
    pub(in crate::object_pool) fn serve_waiters_with_new_slots(&self) {
        let mut queue = lock(&self.waiters);
        while queue.len() > 0 {
            let Ok(shard) = self.slots.admit_from(0) else {
                break;
            };
            if let Err(Handoff::Slot(shard)) = queue.serve(Handoff::Slot(shard)) {
                self.slots.release(shard);
            }
        }
        self.gate.set_waiting(queue.len());
    }
}
