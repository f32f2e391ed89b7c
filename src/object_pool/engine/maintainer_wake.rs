//! The maintainer's wake signal ([`Maintenance`]): takers and frees nudge
//! it, `reconfigure` and `retire_all` wake it, the pool's drop stops it.
//! The blocking face's maintainer thread waits on its condition variable;
//! the async face's maintenance task leaves its waker in it.
//!
//! # Orderings
//!
//! `wanted` is a hint that saves the fast path a lock: a take that leaves the
//! pool short sets it (once per maintenance round) and wakes the thread; the
//! thread clears it before each round. A take reads it after locking the
//! idle stack it popped from, and the round reads every stack under its lock
//! after clearing it, so either the round sees the pop or the taker sees the flag
//! cleared and wakes the thread again: no shortfall goes unnoticed. The lock
//! orders both sides, so `Relaxed` suffices.

use std::task::Waker;
#[cfg(feature = "tokio")]
use std::task::{Context, Poll};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use crate::sync::{lock, wait_timeout, AtomicBool, Condvar, Mutex, Ordering};

use super::backoff::Pause;

/// Wakes the maintainer.
#[derive(Debug)]
pub(in crate::object_pool) struct Maintenance {
    /// Set by takers when a round is needed; see the module's `# Orderings`.
    wanted: CachePadded<AtomicBool>,
    state: Mutex<MaintenanceState>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct MaintenanceState {
    woken: bool,
    stop: bool,
    /// The async face's maintenance task, while it sleeps.
    waker: Option<Waker>,
}

impl MaintenanceState {
    /// Wakes an async maintenance task that sleeps, after the lock is let
    /// go by the caller (the waker is taken out here).
    fn take_waker(&mut self) -> Option<Waker> {
        self.waker.take()
    }
}

/// Why the maintainer woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::object_pool) enum Wake {
    /// Run a round.
    Round,
    /// The pool is dropped: exit.
    Stop,
}

impl Maintenance {
    pub(in crate::object_pool) fn new() -> Self {
        Maintenance {
            wanted: CachePadded::new(AtomicBool::new(false)),
            state: Mutex::new(MaintenanceState::default()),
            wake: Condvar::new(),
        }
    }

    /// Asks for a round; cheap when one is already asked for.
    #[inline]
    pub(in crate::object_pool) fn nudge(&self) {
        if !self.wanted.load(Ordering::Relaxed) {
            self.nudge_cold();
        }
    }

    #[cold]
    #[inline(never)]
    fn nudge_cold(&self) {
        if !self.wanted.swap(true, Ordering::Relaxed) {
            self.wake_now();
        }
    }

    /// Asks for a round now, whatever `wanted` says (the configuration
    /// changed, or objects were retired).
    pub(in crate::object_pool) fn wake_now(&self) {
        let mut state = lock(&self.state);
        state.woken = true;
        let waker = state.take_waker();
        drop(state);
        self.wake.notify_one();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Tells the maintainer to exit.
    pub(in crate::object_pool) fn stop(&self) {
        let mut state = lock(&self.state);
        state.stop = true;
        let waker = state.take_waker();
        drop(state);
        self.wake.notify_one();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    #[cfg(feature = "tokio")]
    /// The async face's [`wait`](Self::wait) without its timeout, which the
    /// task puts around it: ready once stopped, or, unless `pause` holds a
    /// refill back, once nudged (a nudge then only wakes the task, which
    /// polls again). Stores the task's waker on every poll.
    pub(in crate::object_pool) fn poll_wake(
        &self,
        cx: &mut Context<'_>,
        pause: Pause,
    ) -> Poll<Wake> {
        let mut state = lock(&self.state);
        if state.stop {
            return Poll::Ready(Wake::Stop);
        }
        if state.woken && pause.ends_when_nudged() {
            state.woken = false;
            drop(state);
            self.wanted.store(false, Ordering::Relaxed);
            return Poll::Ready(Wake::Round);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Waits as `pause` says: until nudged, stopped, or its interval
    /// passes; or, while a refill is held back, for its whole length
    /// unless stopped (a nudge then stays pending for the next round).
    pub(in crate::object_pool) fn wait(&self, pause: Pause) -> Wake {
        let mut state = lock(&self.state);
        match pause {
            Pause::UntilNudged(interval) => {
                if !state.woken && !state.stop {
                    state = wait_timeout(&self.wake, state, interval);
                }
            }
            Pause::Fixed(length) => {
                let deadline = Instant::now() + length;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if state.stop || left.is_zero() {
                        break;
                    }
                    state = wait_timeout(&self.wake, state, left);
                }
            }
        }
        if state.stop {
            return Wake::Stop;
        }
        state.woken = false;
        drop(state);
        self.wanted.store(false, Ordering::Relaxed);
        Wake::Round
    }
}
