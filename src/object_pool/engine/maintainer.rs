//! The maintainer: one background thread per pool that creates the
//! `init_size` objects, keeps `min_idle` objects ready, and reaps idle and
//! expired objects.
//!
//! Takers never wait for it; it hands what it makes to the oldest waiter or
//! the idle stacks, like any returned object. Its wake signal is
//! `maintainer_wake.rs`; the backoff after failed refills is `backoff.rs`.

use std::time::Instant;

use crate::sync::spin_lock;

use super::backoff::{Pause, RefillBackoff};
use super::counters::Counted;
use super::hooks::Hooks;
use super::shared::{nanos, PoolShared};

impl<M: Hooks> PoolShared<M> {
    /// Whether fewer than `min_idle` untagged objects are idle or being
    /// made for the idle stacks.
    pub(in crate::object_pool) fn short_of_min_idle(&self) -> bool {
        let min_idle = self.config.load().min_idle;
        // Abandoned creations make nothing to keep.
        self.untagged_idle_count() + self.counters.creating_to_keep() < min_idle
    }

    /// Destroys idle objects whose lifetime ran out, and objects idle longer
    /// than `idle_timeout` while the pool is above `soft_limit` and
    /// `min_idle`, longest idle first. Never touches an object in use.
    pub(in crate::object_pool) fn reap(&self) {
        let config = self.config.load();
        if config.idle_timeout.is_none() && config.max_lifetime.is_none() {
            return;
        }
        let now = self.gate.clock().tick();
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
            let members = stack.take_all();
            for idle in members {
                if now >= idle.expires {
                    expired.push(idle);
                } else if budget > 0
                    && idle_limit.is_some_and(|limit| now.saturating_sub(idle.idle_since) > limit)
                {
                    budget -= 1;
                    reaped.push(idle);
                } else {
                    stack.push(idle);
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
            self.counters.count(Counted::Reaped);
            let _ = self.destroy(idle);
        }
    }
}

/// What a round's refill came to, for [`RefillBackoff`].
pub(in crate::object_pool) type Refill = Result<bool, RefillFailed>;

/// A creation of the refill or replenishment failed, timed out or
/// panicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::object_pool) struct RefillFailed;

/// What one background creation came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::object_pool) enum Background {
    /// An object was made and kept.
    Kept,
    /// Nothing was tried: the pool is full or closed.
    NoRoom,
    /// `create` failed, panicked, or ran past `create_timeout`.
    Failed,
}

impl Background {
    /// Whether to go on creating; `Err` if this creation failed.
    pub(in crate::object_pool) fn go_on(self) -> Result<bool, RefillFailed> {
        match self {
            Background::Kept => Ok(true),
            Background::NoRoom => Ok(false),
            Background::Failed => Err(RefillFailed),
        }
    }
}

/// The round's schedule, whichever face runs it.
impl<M: Hooks> PoolShared<M> {
    /// Takes what a round's refill came to into the backoff: a failure is
    /// counted and holds the next refill back; an object made resets it
    /// (and ends an outage); a round with nothing to make changes neither
    /// the delay nor the outage.
    pub(in crate::object_pool) fn after_refill(&self, backoff: &mut RefillBackoff, refill: Refill) {
        match refill {
            Ok(true) => {
                if backoff.is_failing() {
                    crate::events::info_event!(
                        target: "sidejob::object_pool",
                        pool = %self.name,
                        "refills recovered",
                    );
                }
                backoff.succeeded();
            }
            Ok(false) => backoff.idle(),
            Err(RefillFailed) => {
                self.counters.count(Counted::FailedRefill);
                if !backoff.is_failing() {
                    crate::events::warn_event!(
                        target: "sidejob::object_pool",
                        pool = %self.name,
                        "a refill failed: refills back off until one succeeds",
                    );
                }
                let interval = self.config.load().maintenance_interval();
                backoff.failed(Instant::now(), interval);
            }
        }
    }

    /// How the maintenance sleeps after a round.
    pub(in crate::object_pool) fn pause(&self, backoff: &RefillBackoff) -> Pause {
        let interval = self.config.load().maintenance_interval();
        backoff.pause(Instant::now(), interval)
    }

    /// The untagged objects that tagged takes took, to be replaced now.
    pub(in crate::object_pool) fn take_replenish(&self) -> usize {
        self.counters.take_replenish()
    }

    /// What one replacing creation came to, with `left` more to make:
    /// whether to go on; on a failure, the ones not yet replaced are put
    /// back for the retry.
    pub(in crate::object_pool) fn replenished(
        &self,
        made: Background,
        left: usize,
    ) -> Result<bool, RefillFailed> {
        let go_on = made.go_on();
        if go_on.is_err() && left > 0 {
            self.counters.replenish_more(left);
        }
        go_on
    }
}
