//! The FIFO queue of takers waiting for an object, and the cell each waiter
//! is handed something in.
//!
//! Each waiter has its own [`WaitCell`] and condition variable, so serving
//! one wakes exactly that one. A waiter is queued under a unique, increasing
//! key (CouchDB learned that timestamps are not unique) and removed by it
//! when it gives up. Whoever serves the queue pops the oldest waiter whose
//! deadline has not passed; an expired waiter is told so and skipped, never
//! served late.
//!
//! A group take ([`PoolGroup::take`](crate::PoolGroup::take)) queues one
//! cell at every member, so that whichever member frees something first
//! serves it. The cell decides:
//!
//! # Protocol
//!
//! A cell is *waiting*, then *filled* (from one member's queue) or *gone*
//! (its waiter stopped waiting), each move made once under the cell's
//! mutex. [`fill`](WaitCell::fill) succeeds only on a waiting cell; a server
//! whose fill fails gets its object or slot back and serves the next
//! waiter, so nothing is handed to a waiter twice or to one that left. A
//! refusal from one member (it closed, or its `queue_max` dropped the
//! waiter) only counts that member out while others may still serve the
//! cell; the last one's refusal fills it. A waiter that stops waiting
//! calls [`leave`](WaitCell::leave), which takes what was handed, if
//! anything, and makes the cell gone; then it removes its entries from the
//! queues that still hold them.
//!
//! Every queue operation happens under its pool's queue lock. A lone
//! pool's waiter is in one queue only, so its cell is filled exactly when
//! a server popped it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;
#[cfg(feature = "tokio")]
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::sync::{lock, wait_timeout, Condvar, Mutex};

use super::member::MemberBox;

/// What a waiter is handed.
#[derive(Debug)]
pub(in crate::object_pool) enum Handoff<O> {
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

impl<O> Handoff<O> {
    /// Whether this is one member refusing the waiter, rather than an
    /// answer: another member may still serve it.
    fn is_refusal(&self) -> bool {
        matches!(self, Handoff::Closed | Handoff::QueueFull)
    }
}

/// Where a waiter is handed something; see the module's `# Protocol`.
#[derive(Debug)]
pub(in crate::object_pool) struct WaitCell<O> {
    deadline: Option<Instant>,
    state: Mutex<CellState<O>>,
    filled: Condvar,
}

#[derive(Debug)]
enum CellState<O> {
    /// Nothing handed yet; `open` queues may still serve it. An async
    /// waiter's task waits on `waker` (a blocking one on the condition
    /// variable).
    Waiting { open: usize, waker: Option<Waker> },
    /// Handed `handoff` by the queue of member `from` (0 for a lone pool).
    Filled { handoff: Handoff<O>, from: usize },
    /// Its waiter left.
    Gone,
}

impl<O> WaitCell<O> {
    /// A cell for a waiter until `deadline`, to be queued at `queues`
    /// queues.
    pub(in crate::object_pool) fn new(deadline: Option<Instant>, queues: usize) -> Arc<Self> {
        Arc::new(WaitCell {
            deadline,
            state: Mutex::new(CellState::Waiting {
                open: queues,
                waker: None,
            }),
            filled: Condvar::new(),
        })
    }

    /// Hands `handoff` over from member `from`'s queue: an answer only to a
    /// waiting cell (else it comes back), a refusal only counted unless it
    /// is the last open queue's.
    fn fill(&self, handoff: Handoff<O>, from: usize) -> Result<(), Handoff<O>> {
        let mut state = lock(&self.state);
        let CellState::Waiting { open, waker } = &mut *state else {
            return Err(handoff);
        };
        if handoff.is_refusal() && *open > 1 {
            *open -= 1;
            return Ok(());
        }
        let waker = waker.take();
        *state = CellState::Filled { handoff, from };
        drop(state);
        self.filled.notify_one();
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// One queue will never hold this cell (that member was closed or its
    /// queue full when the waiter came).
    pub(in crate::object_pool) fn count_out(&self) {
        if let CellState::Waiting { open, .. } = &mut *lock(&self.state) {
            *open = open.saturating_sub(1);
        }
    }

    /// Blocks until the cell is filled or its deadline passes. Either way
    /// the waiter then calls [`leave`](Self::leave).
    pub(in crate::object_pool) fn wait(&self) {
        let mut state = lock(&self.state);
        loop {
            if let CellState::Filled { .. } = *state {
                return;
            }
            let timeout = match self.deadline {
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return;
                    }
                    deadline - now
                }
                None => Duration::from_secs(3600),
            };
            state = wait_timeout(&self.filled, state, timeout);
        }
    }

    #[cfg(feature = "tokio")]
    /// The async waiter's [`wait`](Self::wait), without the deadline (its
    /// task keeps the timer): ready once filled; stores the task's waker on
    /// every poll until then.
    pub(in crate::object_pool) fn poll_filled(&self, cx: &mut Context<'_>) -> Poll<()> {
        match &mut *lock(&self.state) {
            CellState::Waiting { waker, .. } => {
                match waker {
                    Some(stored) if stored.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            CellState::Filled { .. } | CellState::Gone => Poll::Ready(()),
        }
    }

    /// Stops waiting: what was handed, and by which member's queue, if
    /// anything was; nothing can be handed after.
    pub(in crate::object_pool) fn leave(&self) -> Option<(Handoff<O>, usize)> {
        match std::mem::replace(&mut *lock(&self.state), CellState::Gone) {
            CellState::Filled { handoff, from } => Some((handoff, from)),
            CellState::Waiting { .. } | CellState::Gone => None,
        }
    }
}

/// One queued cell, and which member's queue it is in.
#[derive(Debug)]
struct Waiter<O> {
    key: u64,
    cell: Arc<WaitCell<O>>,
    from: usize,
}

/// The waiting takers, oldest first.
#[derive(Debug)]
pub(in crate::object_pool) struct WaitQueue<O> {
    waiters: VecDeque<Waiter<O>>,
    next_key: u64,
}

impl<O> WaitQueue<O> {
    pub(in crate::object_pool) fn new() -> Self {
        WaitQueue {
            waiters: VecDeque::new(),
            next_key: 0,
        }
    }

    /// How many takers wait.
    pub(in crate::object_pool) fn len(&self) -> usize {
        self.waiters.len()
    }

    /// Queues `cell` at the back, as member `from`'s queue (0 for a lone
    /// pool); returns its key.
    pub(in crate::object_pool) fn push(&mut self, cell: Arc<WaitCell<O>>, from: usize) -> u64 {
        let key = self.next_key;
        self.next_key += 1;
        self.waiters.push_back(Waiter { key, cell, from });
        key
    }

    /// Removes the waiter with `key`; `false` if it is no longer queued
    /// (someone served it, or told it it expired or the pool closed).
    pub(in crate::object_pool) fn remove(&mut self, key: u64) -> bool {
        // Keys increase from front to back.
        match self.waiters.binary_search_by_key(&key, |waiter| waiter.key) {
            Ok(index) => {
                self.waiters.remove(index);
                true
            }
            Err(_) => false,
        }
    }

    /// Hands `handoff` to the oldest waiter whose deadline has not passed
    /// and who still waits, telling the expired ones ahead of it so and
    /// dropping those that left (a group waiter served elsewhere). Gives
    /// `handoff` back if no waiter is left.
    pub(in crate::object_pool) fn serve(
        &mut self,
        mut handoff: Handoff<O>,
    ) -> Result<(), Handoff<O>> {
        let mut now = None;
        while let Some(waiter) = self.waiters.pop_front() {
            let expired = waiter
                .cell
                .deadline
                .is_some_and(|deadline| deadline <= *now.get_or_insert_with(Instant::now));
            if expired {
                let _ = waiter.cell.fill(Handoff::Expired, waiter.from);
                continue;
            }
            match waiter.cell.fill(handoff, waiter.from) {
                Ok(()) => return Ok(()),
                Err(back) => handoff = back,
            }
        }
        Err(handoff)
    }

    /// Answers the newest waiters beyond the first `queue_max` with
    /// `QueueFull`.
    pub(in crate::object_pool) fn refuse_beyond(&mut self, queue_max: usize) {
        while self.waiters.len() > queue_max {
            if let Some(waiter) = self.waiters.pop_back() {
                let _ = waiter.cell.fill(Handoff::QueueFull, waiter.from);
            }
        }
    }

    /// Tells every waiter the pool closed.
    pub(in crate::object_pool) fn close(&mut self) {
        for waiter in self.waiters.drain(..) {
            let _ = waiter.cell.fill(Handoff::Closed, waiter.from);
        }
    }
}
