//! [`Drain`]: the wait for a closed live set's last child. The threads
//! face's shutdown waits for it blocking ([`Drain::wait_until`]), the async
//! face's `wait` as a future ([`Drain::wait`]), both on this one signal.
//!
//! The close counts the children alive, with every shard's set locked at
//! once ([`start`](Drain::start)); each of those children, as it leaves its
//! set, counts down ([`child_left`](Drain::child_left)), and the one that
//! reaches 0 signals. Nobody counts the sets again: an end costs one
//! `fetch_sub` however many shards there are.
//!
//! # Orderings
//!
//! - `counted` is set while the closer holds every set's lock, and a
//!   leaving child reads it under its own set's lock: it was counted by the
//!   close exactly when it reads it set (the close either had its set
//!   locked before, and saw it, or after, and did not). `remaining` is
//!   stored under the same locks, so a child that reads `counted` set
//!   finds it stored. (`Relaxed` both: the locks order them.)
//! - `remaining` counts down `AcqRel`: the child that takes it to 0 has
//!   seen every other counted child's leave, slot freed included, before it
//!   signals.
//! - `done` is stored under `lock` before the notify, and read under it by
//!   a blocked waiter, so no wake is lost; the token synchronises for the
//!   async waiters.

use std::time::Instant;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::sync::{lock, wait_until, AtomicBool, AtomicUsize, Condvar, Mutex, Ordering};

/// The count of a closed set's children still to end, and the signal that
/// none is left.
pub(crate) struct Drain {
    /// Set by the close, under every set's lock.
    counted: AtomicBool,
    /// The children counted at the close that have not left yet.
    remaining: AtomicUsize,
    done: AtomicBool,
    lock: Mutex<()>,
    emptied: Condvar,
    token: CancellationToken,
}

impl Drain {
    /// Not yet started: the set is open.
    pub(crate) fn new() -> Self {
        Drain {
            counted: AtomicBool::new(false),
            remaining: AtomicUsize::new(0),
            done: AtomicBool::new(false),
            lock: Mutex::new(()),
            emptied: Condvar::new(),
            token: CancellationToken::new(),
        }
    }

    /// The set closed with `live` children in it; the caller holds every
    /// set's lock. It calls [`finish`](Self::finish) after unlocking if
    /// `live` is 0.
    pub(crate) fn start(&self, live: usize) {
        self.remaining.store(live, Ordering::Relaxed);
        self.counted.store(true, Ordering::Relaxed);
    }

    /// Whether the close has counted the sets; read under a set's lock by a
    /// child leaving it: it was counted, and must [`child_left`](Self::child_left).
    #[inline]
    pub(crate) fn counted(&self) -> bool {
        self.counted.load(Ordering::Relaxed)
    }

    /// A child the close counted has left its set (its lock released).
    pub(crate) fn child_left(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.finish();
        }
    }

    /// The last counted child is gone: wakes every waiter.
    #[cold]
    pub(crate) fn finish(&self) {
        {
            let _guard = lock(&self.lock);
            self.done.store(true, Ordering::Release);
            self.emptied.notify_all();
        }
        self.token.cancel();
    }

    /// Blocks the calling thread until the set has drained, or `deadline`
    /// has passed (`None`: no deadline); whether it drained.
    pub(crate) fn wait_until(&self, deadline: Option<Instant>) -> bool {
        wait_until(&self.lock, &self.emptied, deadline, || {
            self.done.load(Ordering::Acquire)
        })
    }

    /// A future that resolves once the set has drained.
    pub(crate) fn wait(&self) -> WaitForCancellationFutureOwned {
        self.token.clone().cancelled_owned()
    }
}
