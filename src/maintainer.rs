//! The maintainer: one background thread per pool that creates the
//! `init_size` objects, keeps `min_idle` objects ready, and reaps idle and
//! expired objects.
//!
//! Takers never wait for it; it hands what it makes to the oldest waiter or
//! the idle stacks, like any returned object.
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

use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::sync::{lock, wait_timeout, AtomicBool, Condvar, Mutex, Ordering};

/// Wakes the maintainer.
#[derive(Debug)]
pub(crate) struct Maintenance {
    /// Set by takers when a round is needed; see the module's `# Orderings`.
    wanted: CachePadded<AtomicBool>,
    state: Mutex<MaintenanceState>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct MaintenanceState {
    woken: bool,
    stop: bool,
}

/// Why the maintainer woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Run a round.
    Round,
    /// The pool is dropped: exit.
    Stop,
}

impl Maintenance {
    pub(crate) fn new() -> Self {
        Maintenance {
            wanted: CachePadded::new(AtomicBool::new(false)),
            state: Mutex::new(MaintenanceState::default()),
            wake: Condvar::new(),
        }
    }

    /// Asks for a round; cheap when one is already asked for.
    #[inline]
    pub(crate) fn nudge(&self) {
        if !self.wanted.load(Ordering::Relaxed) {
            self.nudge_cold();
        }
    }

    #[cold]
    #[inline(never)]
    fn nudge_cold(&self) {
        if !self.wanted.swap(true, Ordering::Relaxed) {
            lock(&self.state).woken = true;
            self.wake.notify_one();
        }
    }

    /// Asks for a round now, whatever `wanted` says (the configuration
    /// changed, or objects were retired).
    pub(crate) fn wake_now(&self) {
        lock(&self.state).woken = true;
        self.wake.notify_one();
    }

    /// Tells the maintainer to exit.
    pub(crate) fn stop(&self) {
        lock(&self.state).stop = true;
        self.wake.notify_one();
    }

    /// Waits until nudged, stopped, or `interval` passes.
    pub(crate) fn wait(&self, interval: Duration) -> Wake {
        let mut state = lock(&self.state);
        if !state.woken && !state.stop {
            state = wait_timeout(&self.wake, state, interval);
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
