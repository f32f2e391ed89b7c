//! The maintainer: one background thread per pool that creates the
//! `init_size` objects, keeps `min_idle` objects ready, and reaps idle and
//! expired objects.
//!
//! Takers never wait for it; it hands what it makes to the oldest waiter or
//! the idle stacks, like any returned object. This module holds both the
//! thread's wake signal ([`Maintenance`]) and its work (`maintain`, `reap`,
//! `refill`, `replenish`).
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

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Waker;
#[cfg(feature = "tokio")]
use std::task::{Context, Poll};
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::sync::{lock, spin_lock, wait_timeout, AtomicBool, Condvar, Mutex, Ordering};

use super::hooks::Hooks;
use super::manager::Manager;
use super::shared::{bump, nanos, PoolShared};

/// Wakes the maintainer.
#[derive(Debug)]
pub(super) struct Maintenance {
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
pub(super) enum Wake {
    /// Run a round.
    Round,
    /// The pool is dropped: exit.
    Stop,
}

impl Maintenance {
    pub(super) fn new() -> Self {
        Maintenance {
            wanted: CachePadded::new(AtomicBool::new(false)),
            state: Mutex::new(MaintenanceState::default()),
            wake: Condvar::new(),
        }
    }

    /// Asks for a round; cheap when one is already asked for.
    #[inline]
    pub(super) fn nudge(&self) {
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
    pub(super) fn wake_now(&self) {
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
    pub(super) fn stop(&self) {
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
    /// The async face's [`wait`](Self::wait) without its timeout: ready
    /// once nudged or stopped; stores the task's waker on every poll.
    pub(super) fn poll_wake(&self, cx: &mut Context<'_>) -> Poll<Wake> {
        let mut state = lock(&self.state);
        if state.stop {
            return Poll::Ready(Wake::Stop);
        }
        if state.woken {
            state.woken = false;
            drop(state);
            self.wanted.store(false, Ordering::Relaxed);
            return Poll::Ready(Wake::Round);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Waits until nudged, stopped, or `interval` passes.
    pub(super) fn wait(&self, interval: Duration) -> Wake {
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

impl<M: Hooks> PoolShared<M> {
    /// Whether fewer than `min_idle` untagged objects are idle or being
    /// made for the idle stacks.
    pub(super) fn short_of_min_idle(&self) -> bool {
        let min_idle = self.config.load().min_idle;
        let counters = &self.counters;
        // Abandoned creations make nothing to keep. Each count moves on
        // its own, so the difference may be briefly below zero.
        let creating = counters
            .creating
            .load(Ordering::Relaxed)
            .saturating_sub(counters.abandoned.load(Ordering::Relaxed));
        self.untagged_idle_count() + creating < min_idle
    }

    /// Destroys idle objects whose lifetime ran out, and objects idle longer
    /// than `idle_timeout` while the pool is above `soft_limit` and
    /// `min_idle`, longest idle first. Never touches an object in use.
    pub(super) fn reap(&self) {
        let config = self.config.load();
        if config.idle_timeout.is_none() && config.max_lifetime.is_none() {
            return;
        }
        let now = self.gate.clock.tick();
        // A stamp can be one interval early (see `clock.rs`).
        let idle_limit = config
            .idle_timeout
            .map(|timeout| nanos(timeout).saturating_add(nanos(config.maintenance_interval())));
        let size = self.slots.usage();
        let mut budget = match idle_limit {
            Some(_) => size
                .saturating_sub(config.soft_limit.unwrap_or(config.max_size))
                .min(self.untagged_idle_count().saturating_sub(config.min_idle)),
            None => 0,
        };
        let (mut expired, mut reaped) = (Vec::new(), Vec::new());
        for stack in self.idle.iter() {
            let mut stack = spin_lock(stack);
            // Bottom first: the longest idle.
            let members = std::mem::take(&mut stack.members);
            for idle in members {
                if now >= idle.expires {
                    expired.push(idle);
                } else if budget > 0
                    && idle_limit.is_some_and(|limit| now.saturating_sub(idle.idle_since) > limit)
                {
                    budget -= 1;
                    reaped.push(idle);
                } else {
                    stack.members.push(idle);
                }
            }
        }
        // Tagged objects idle too long go whatever the soft limit.
        if let Some(shelf) = self.tags.get() {
            let (tagged_expired, tagged_idled) = shelf.reap(now, idle_limit);
            expired.extend(tagged_expired);
            reaped.extend(tagged_idled);
        }
        for idle in expired {
            self.expire(idle);
        }
        for idle in reaped {
            bump(&self.counters.reaped);
            let _ = self.destroy(idle);
        }
    }
}

/// The blocking face's maintainer thread, which creates with
/// [`Manager::create`].
impl<M: Manager> PoolShared<M> {
    /// Tops the idle objects up to `min_idle`, stopping at the first failure
    /// (the next round retries).
    pub(super) fn refill(&self) {
        while self.short_of_min_idle() && self.create_idle() {}
    }

    /// Replaces, as room allows, the untagged objects that tagged takes
    /// took, so that untagged takers keep finding one.
    pub(super) fn replenish(&self) {
        let wanted = self.counters.replenish.swap(0, Ordering::Relaxed);
        for _ in 0..wanted {
            if !self.create_idle() {
                return;
            }
        }
    }

    /// The maintainer thread's body.
    pub(super) fn maintain(&self, init_size: usize, started: crossbeam_channel::Sender<()>) {
        self.create_initial(init_size);
        drop(started);
        loop {
            let _ = catch_unwind(AssertUnwindSafe(|| {
                self.reap();
                self.refill();
                self.replenish();
            }));
            let interval = self.config.load().maintenance_interval();
            if self.maintenance.wait(interval) == Wake::Stop {
                return;
            }
        }
    }
}
