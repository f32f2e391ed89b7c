//! The maintainer: one background thread per pool that creates the
//! `init_size` objects, keeps `min_idle` objects ready, and reaps idle and
//! expired objects.
//!
//! Takers never wait for it; it hands what it makes to the oldest waiter or
//! the idle stacks, like any returned object. Its wake signal is
//! `maintainer_wake.rs`; the backoff after failed refills is `backoff.rs`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::sync::{spin_lock, Ordering};

use super::super::manager::Manager;
use super::hooks::Hooks;
use super::maintainer_wake::Wake;
use super::shared::{bump, nanos, PoolShared};

impl<M: Hooks> PoolShared<M> {
    /// Whether fewer than `min_idle` untagged objects are idle or being
    /// made for the idle stacks.
    pub(in crate::object_pool) fn short_of_min_idle(&self) -> bool {
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
    pub(in crate::object_pool) fn reap(&self) {
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
    pub(in crate::object_pool) fn refill(&self) {
        while self.short_of_min_idle() && self.create_idle() {}
    }

    /// Replaces, as room allows, the untagged objects that tagged takes
    /// took, so that untagged takers keep finding one.
    pub(in crate::object_pool) fn replenish(&self) {
        let wanted = self.counters.replenish.swap(0, Ordering::Relaxed);
        for _ in 0..wanted {
            if !self.create_idle() {
                return;
            }
        }
    }

    /// The maintainer thread's body.
    pub(in crate::object_pool) fn maintain(
        &self,
        init_size: usize,
        started: crossbeam_channel::Sender<()>,
    ) {
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
