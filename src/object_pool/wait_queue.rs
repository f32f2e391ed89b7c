//! The FIFO queue of takers waiting for an object.
//!
//! Each waiter has its own hand-off cell and condition variable, so serving
//! one wakes exactly that one. A waiter is queued under a unique, increasing
//! key (CouchDB learned that timestamps are not unique) and removed by it when
//! it gives up. Whoever serves the queue pops the oldest waiter whose deadline
//! has not passed; an expired waiter is told so and skipped, never served
//! late.
//!
//! Every queue operation, and every fill, happens under the pool's queue
//! lock, so a waiter that times out and no longer finds itself in the queue
//! knows its cell is already filled.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crate::sync::{lock, wait_timeout, Condvar, Mutex};

use super::member::MemberBox;

/// What a waiter is handed.
#[derive(Debug)]
pub(super) enum Handoff<O> {
    /// A returned (or freshly made) object.
    Object(MemberBox<O>),
    /// A free slot on this shard: the waiter creates its own object.
    Slot(usize),
    /// The pool closed.
    Closed,
    /// `queue_max` was lowered below this waiter's place in the queue.
    QueueFull,
    /// Its deadline passed before anything came free.
    Expired,
}

/// One waiting taker.
#[derive(Debug)]
pub(super) struct Waiter<O> {
    key: u64,
    deadline: Option<Instant>,
    cell: Mutex<Option<Handoff<O>>>,
    filled: Condvar,
}

impl<O> Waiter<O> {
    /// Hands `handoff` to the waiter and wakes it. The caller holds the queue
    /// lock and has just removed the waiter from the queue.
    fn fill(&self, handoff: Handoff<O>) {
        *lock(&self.cell) = Some(handoff);
        self.filled.notify_one();
    }

    /// Blocks until the waiter is handed something, or its deadline passes
    /// (then `None`: the caller must look for itself in the queue).
    pub(super) fn wait(&self) -> Option<Handoff<O>> {
        let mut cell = lock(&self.cell);
        loop {
            if let Some(handoff) = cell.take() {
                return Some(handoff);
            }
            match self.deadline {
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return None;
                    }
                    cell = wait_timeout(&self.filled, cell, deadline - now);
                }
                None => {
                    cell = wait_timeout(&self.filled, cell, std::time::Duration::from_secs(3600))
                }
            }
        }
    }

    /// What a waiter that was removed from the queue by someone else was
    /// handed. Filled under the queue lock before the removal became visible.
    pub(super) fn take_filled(&self) -> Handoff<O> {
        lock(&self.cell)
            .take()
            .expect("a waiter removed from the queue was handed something")
    }

    /// Its queue key.
    pub(super) fn key(&self) -> u64 {
        self.key
    }
}

/// The waiting takers, oldest first.
#[derive(Debug)]
pub(super) struct WaitQueue<O> {
    waiters: VecDeque<Arc<Waiter<O>>>,
    next_key: u64,
}

impl<O> WaitQueue<O> {
    pub(super) fn new() -> Self {
        WaitQueue {
            waiters: VecDeque::new(),
            next_key: 0,
        }
    }

    /// How many takers wait.
    pub(super) fn len(&self) -> usize {
        self.waiters.len()
    }

    /// Queues a new waiter at the back.
    pub(super) fn push(&mut self, deadline: Option<Instant>) -> Arc<Waiter<O>> {
        let waiter = Arc::new(Waiter {
            key: self.next_key,
            deadline,
            cell: Mutex::new(None),
            filled: Condvar::new(),
        });
        self.next_key += 1;
        self.waiters.push_back(Arc::clone(&waiter));
        waiter
    }

    /// Removes the waiter with `key`; `false` if it is no longer queued
    /// (someone served it, or told it it expired or the pool closed).
    pub(super) fn remove(&mut self, key: u64) -> bool {
        // Keys increase from front to back.
        match self.waiters.binary_search_by_key(&key, |waiter| waiter.key) {
            Ok(index) => {
                self.waiters.remove(index);
                true
            }
            Err(_) => false,
        }
    }

    /// Hands `handoff` to the oldest waiter whose deadline has not passed,
    /// telling the expired ones ahead of it so. Gives `handoff` back if no
    /// waiter is left.
    pub(super) fn serve(&mut self, handoff: Handoff<O>) -> Result<(), Handoff<O>> {
        let mut now = None;
        while let Some(waiter) = self.waiters.pop_front() {
            let expired = waiter
                .deadline
                .is_some_and(|deadline| deadline <= *now.get_or_insert_with(Instant::now));
            if expired {
                waiter.fill(Handoff::Expired);
            } else {
                waiter.fill(handoff);
                return Ok(());
            }
        }
        Err(handoff)
    }

    /// Answers the newest waiters beyond the first `queue_max` with
    /// `QueueFull`.
    pub(super) fn refuse_beyond(&mut self, queue_max: usize) {
        while self.waiters.len() > queue_max {
            if let Some(waiter) = self.waiters.pop_back() {
                waiter.fill(Handoff::QueueFull);
            }
        }
    }

    /// Tells every waiter the pool closed.
    pub(super) fn close(&mut self) {
        for waiter in self.waiters.drain(..) {
            waiter.fill(Handoff::Closed);
        }
    }
}
