//! [`Cancellation`]: a supervisor's request that its children stop, in
//! generations. A child joins the generation current at its admission and
//! is cancelled once the generation has moved past it; `cancel_all` moves
//! it. The threads face waits for it blocking (`wait_cancelled`), the async
//! face through the generation's token (`token_for`), both on this one
//! mechanism.
//!
//! # Orderings
//!
//! `number` is stored (`Release`) under the generation's lock after the
//! generation itself, and read (`Acquire`) by every admission: a child never
//! holds a number ahead of the generation it finds. A blocked waiter checks
//! it under that lock, which `cancel_all` holds while it stores and
//! notifies, so no wake is lost.

use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use tokio_util::sync::CancellationToken;

use crate::sync::{lock, wait_until, AtomicU64, Condvar, Mutex, Ordering};

/// The generations of one supervisor's children.
pub(crate) struct Cancellation {
    /// The current generation's number, read by every admission (a line
    /// written only by `cancel_all`). Never ahead of `current`'s.
    number: CachePadded<AtomicU64>,
    current: Mutex<Generation>,
    /// Wakes the children blocked in [`wait_cancelled`](Self::wait_cancelled).
    cancelled: Condvar,
}

/// The children admitted since the last `cancel_all`.
struct Generation {
    number: u64,
    /// Cancelled with the generation: what an async child awaits.
    token: CancellationToken,
}

impl Generation {
    fn new(number: u64) -> Self {
        Generation {
            number,
            token: CancellationToken::new(),
        }
    }
}

impl Cancellation {
    /// Generation 0, uncancelled.
    pub(crate) fn new() -> Self {
        Cancellation {
            number: CachePadded::new(AtomicU64::new(0)),
            current: Mutex::new(Generation::new(0)),
            cancelled: Condvar::new(),
        }
    }

    /// The number of the generation the children admitted now join.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        // Acquire: pairs with `cancel_all`'s release store, so a child that
        // reads the new number finds its generation in `current` too.
        self.number.load(Ordering::Acquire)
    }

    /// Whether the children of generation `number` were asked to stop.
    #[inline]
    pub(crate) fn is_cancelled(&self, number: u64) -> bool {
        self.generation() > number
    }

    /// Asks the children admitted so far to stop; later ones join a new
    /// generation, uncancelled.
    pub(crate) fn cancel_all(&self) {
        let _old = {
            let mut current = lock(&self.current);
            let number = current.number + 1;
            let old = std::mem::replace(&mut *current, Generation::new(number));
            // Release: see `generation`.
            self.number.store(number, Ordering::Release);
            // Under the lock a blocked waiter checks the number under.
            self.cancelled.notify_all();
            old
        };
        // Outside the lock: a token's cancel runs its waiters' wakers.
        _old.token.cancel();
    }

    /// Blocks the calling thread until generation `number` is cancelled, or
    /// `timeout` has passed; whether it was cancelled.
    pub(crate) fn wait_cancelled(&self, number: u64, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        wait_until(&self.current, &self.cancelled, deadline, || {
            self.is_cancelled(number)
        })
    }

    /// The token generation `number`'s cancellation cancels; `None` if it
    /// already was.
    pub(crate) fn token_for(&self, number: u64) -> Option<CancellationToken> {
        let current = lock(&self.current);
        // Never behind `number`: the number a child read was stored under
        // this lock after its generation.
        (current.number == number).then(|| current.token.clone())
    }
}
