//! [`PoolShared`]: what a pool, its objects and its maintainer share; the
//! engine under the [`ObjectPool`](super::super::ObjectPool) face. Its methods are
//! split by concern over the sibling modules (see the face's module docs).

use std::collections::BTreeMap;
use std::sync::{OnceLock, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use crossbeam_utils::CachePadded;

use crate::admission::{ShardedCounter, Shares};
use crate::latency::LatencyHistogram;
use crate::sync::Mutex;

use super::super::config::PoolConfig;
use super::counters::{Counted, Counters};
use super::gate::Gate;
use super::hooks::Hooks;
use super::idle_stacks::{idle_stacks, IdleStacks};
use super::maintainer_wake::Maintenance;
use super::tag_shelf::DynTagShelf;
use super::wait_queue::WaitQueue;

/// What the pool, its objects and its maintainer share.
pub(in crate::object_pool) struct PoolShared<M: Hooks> {
    pub(super) manager: M,
    /// The pool's own `Arc`, for the helper threads of bounded creations
    /// (see `create.rs`).
    pub(super) this: Weak<PoolShared<M>>,
    /// One slot per object that exists or is being made.
    pub(super) slots: ShardedCounter,
    /// Idle objects, a LIFO stack per shard.
    pub(super) idle: IdleStacks<M::Object>,
    /// Read by every return; written only on the slow paths.
    pub(super) gate: CachePadded<Gate>,
    /// Waiting takers, oldest first.
    pub(super) waiters: Mutex<WaitQueue<M::Object>>,
    /// The limits and timers, read without locks.
    pub(super) config: ArcSwap<PoolConfig>,
    /// Serialises `reconfigure` calls.
    pub(super) reconfiguring: Mutex<()>,
    /// Wakes the maintainer thread.
    pub(super) maintenance: Maintenance,
    /// Idle tagged objects, made at the first tagged take.
    pub(super) tags: OnceLock<Box<dyn DynTagShelf<M::Object>>>,
    /// Objects alive per generation, for `stale_count`.
    pub(super) generations: Mutex<BTreeMap<u64, usize>>,
    pub(super) counters: CachePadded<Counters>,
    pub(super) wait_times: Mutex<LatencyHistogram>,
    /// The pool's name, for its events.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(super) name: String,
}

impl<M: Hooks> PoolShared<M> {
    /// The engine of a pool of `manager`'s objects with `config`'s limits
    /// over `shards` shards, both checked; `this` is the `Arc` it is made
    /// in (see [`Arc::new_cyclic`](std::sync::Arc::new_cyclic)).
    pub(in crate::object_pool) fn new(
        manager: M,
        config: &PoolConfig,
        shards: usize,
        this: Weak<PoolShared<M>>,
        name: String,
    ) -> Self {
        PoolShared {
            manager,
            this,
            slots: ShardedCounter::new(config.max_size, shards, Shares::default()),
            idle: idle_stacks(shards),
            gate: CachePadded::new(Gate::new(config)),
            waiters: Mutex::new(WaitQueue::new()),
            config: ArcSwap::from_pointee(config.clone()),
            reconfiguring: Mutex::new(()),
            maintenance: Maintenance::new(),
            tags: OnceLock::new(),
            generations: Mutex::new(BTreeMap::new()),
            counters: CachePadded::new(Counters::default()),
            wait_times: Mutex::new(LatencyHistogram::new()),
            name,
        }
    }
}

/// The named operations the faces call: no face reads a field of the
/// engine.
impl<M: Hooks> PoolShared<M> {
    /// The manager's hooks.
    #[inline]
    pub(in crate::object_pool) fn manager(&self) -> &M {
        &self.manager
    }

    /// The pool's own `Arc`, if the pool still stands (for helper threads
    /// and tasks that outlive a call).
    pub(in crate::object_pool) fn arc(&self) -> Option<std::sync::Arc<Self>> {
        self.this.upgrade()
    }

    /// Whether the pool was closed.
    #[inline]
    pub(in crate::object_pool) fn is_closed(&self) -> bool {
        self.gate.is_closed()
    }

    /// Whether idle objects are checked before they are handed out.
    #[inline]
    pub(in crate::object_pool) fn checks_on_take(&self) -> bool {
        self.gate.check_on_take()
    }

    /// Whether a pop needs the cold path (see `Gate::after_pop`).
    #[cfg(feature = "tokio")]
    #[inline]
    pub(in crate::object_pool) fn pops_need_care(&self) -> bool {
        self.gate.after_pop()
    }

    /// The limits and timers now.
    pub(in crate::object_pool) fn config(&self) -> arc_swap::Guard<std::sync::Arc<PoolConfig>> {
        self.config.load()
    }

    /// The hard limit: how many objects may exist at once.
    pub(in crate::object_pool) fn max_size(&self) -> usize {
        self.slots.capacity()
    }

    /// How many shards (idle stacks, and slots' shards) the pool has.
    pub(in crate::object_pool) fn shard_count(&self) -> usize {
        self.idle.len()
    }

    /// A slot for a new object, probing from shard `start`.
    #[inline]
    pub(in crate::object_pool) fn admit_slot(
        &self,
        start: usize,
    ) -> Result<usize, crate::Overload> {
        self.slots.admit_from(start)
    }

    /// Counts `what` on the slow-path counters.
    pub(in crate::object_pool) fn count(&self, what: Counted) {
        self.counters.count(what);
    }

    /// The count of async takes dropped after their first poll, for the
    /// watch a take keeps (see `async_pool/take.rs`).
    #[cfg(feature = "tokio")]
    pub(in crate::object_pool) fn cancelled_takes(&self) -> &crate::sync::AtomicU64 {
        self.counters.cancelled_takes()
    }

    /// A take's check ran past the take's deadline: told once a spell,
    /// until a check answers in time again (an event per take would be
    /// one per request while a backend is slow).
    pub(in crate::object_pool) fn check_ran_late(&self) {
        if self.counters.check_ran_late() {
            crate::events::warn_event!(
                target: "sidejob::object_pool",
                pool = %self.name,
                "a take's check of an idle object ran past the take's deadline",
            );
        }
    }

    /// A take's check answered before the take's deadline.
    pub(in crate::object_pool) fn check_answered_in_time(&self) {
        self.counters.check_answered_in_time();
    }

    /// A creation started (a refill does not count on its slot twice).
    pub(in crate::object_pool) fn creating_started(&self) {
        self.counters.creating_started();
    }

    /// A creation ended, however.
    pub(in crate::object_pool) fn creating_ended(&self) {
        self.counters.creating_ended();
    }

    /// A creation its waiter gave up on was disposed of.
    pub(in crate::object_pool) fn abandoned_disposed(&self) {
        self.counters.abandoned_disposed();
    }

    /// The maintainer's wake signal (stop, wake, wait, poll).
    pub(in crate::object_pool) fn maintenance(&self) -> &Maintenance {
        &self.maintenance
    }

    /// Whether a tagged take ever ran (the tag shelf exists).
    pub(in crate::object_pool) fn tagging_started(&self) -> bool {
        self.tags.get().is_some()
    }
}

/// A duration in nanoseconds, saturating.
pub(in crate::object_pool) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
