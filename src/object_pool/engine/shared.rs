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
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};

use super::super::config::PoolConfig;
use super::clock::PoolClock;
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

#[derive(Debug)]
pub(in crate::object_pool) struct Gate {
    /// The pool clock; its coarse reading, which a return stamps, lives on
    /// this line, which the return reads anyway.
    pub(super) clock: PoolClock,
    pub(super) closed: AtomicBool,
    /// The wait queue's length; see the module's `# Protocol`.
    pub(super) waiting: AtomicUsize,
    /// Raised by `retire_all`; an object of an older generation is
    /// destroyed when it comes back.
    pub(super) generation: AtomicU64,
    /// `min_idle`'s value, for takes to know whether to nudge the
    /// maintainer without loading the configuration.
    pub(super) min_idle: AtomicUsize,
    /// Whether a pop needs the cold path: `min_idle` is set (nudge the
    /// maintainer), some object may have a lifetime (check it), or objects
    /// are checked on take.
    pub(super) after_pop: AtomicBool,
    /// `check_on_take`'s value, read by the cold take paths.
    pub(super) check_on_take: AtomicBool,
    /// Set while `max_size` was lowered below the size: returned objects
    /// are destroyed until the pool fits.
    pub(super) oversized: AtomicBool,
}

/// Slow-path counters; fast-path takes are counted on the idle stacks.
#[derive(Debug, Default)]
pub(in crate::object_pool) struct Counters {
    /// Takes served by a creation or a hand-off rather than a stack.
    pub(super) direct_takes: AtomicU64,
    pub(super) waits: AtomicU64,
    pub(super) timeouts: AtomicU64,
    pub(super) rejected: AtomicU64,
    pub(super) creates: AtomicU64,
    pub(super) create_failures: AtomicU64,
    /// Refill and replenishment rounds that a failed creation ended.
    pub(super) failed_refills: AtomicU64,
    pub(super) destroyed: AtomicU64,
    pub(super) reaped: AtomicU64,
    pub(super) expired: AtomicU64,
    /// Pops of objects not handed out, expired or failing the check on
    /// take (counted as takes on their stack or the shelf, so subtracted).
    pub(super) discarded_pops: AtomicU64,
    /// Idle objects that failed `check_on_take`, destroyed.
    pub(super) failed_take_checks: AtomicU64,
    pub(super) evicted: AtomicU64,
    /// Creations given up on at a deadline.
    pub(super) create_timeouts: AtomicU64,
    /// Async takes dropped after their first poll, before they finished.
    pub(super) cancelled: AtomicU64,
    pub(super) creating: AtomicUsize,
    /// Of those, creations their waiter gave up on: their objects will be
    /// destroyed, so a refill does not count on them.
    pub(super) abandoned: AtomicUsize,
    /// Untagged objects that tagged takes took, to be replaced in the
    /// background.
    pub(super) replenish: AtomicUsize,
}

pub(in crate::object_pool) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
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
            gate: CachePadded::new(Gate {
                clock: PoolClock::new(),
                closed: AtomicBool::new(false),
                waiting: AtomicUsize::new(0),
                generation: AtomicU64::new(0),
                min_idle: AtomicUsize::new(config.min_idle),
                after_pop: AtomicBool::new(config.needs_after_pop()),
                check_on_take: AtomicBool::new(config.check_on_take),
                oversized: AtomicBool::new(false),
            }),
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

/// What a face counts on the engine's slow-path counters.
#[derive(Debug, Clone, Copy)]
pub(in crate::object_pool) enum Counted {
    /// A take served by a creation or a hand-off rather than a stack.
    DirectTake,
    /// A take that timed out.
    Timeout,
    /// A take refused at once.
    Rejected,
    /// A creation that failed (the async face's; the blocking face's are
    /// counted where its creations are).
    #[cfg(feature = "tokio")]
    CreateFailure,
    /// A creation given up on at its deadline (as `CreateFailure`).
    #[cfg(feature = "tokio")]
    CreateTimeout,
    /// A pop not handed out (counted as a take on its stack).
    DiscardedPop,
    /// An idle object that failed `check_on_take`.
    FailedTakeCheck,
}

/// The named operations the faces call: no face reads a field of the
/// engine.
impl<M: Hooks> PoolShared<M> {
    /// The pool's name.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(in crate::object_pool) fn name(&self) -> &str {
        &self.name
    }

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
        // Relaxed: a hint on the slow paths; the protocol reads it under
        // the locks it names (see the face's `# Orderings`).
        self.gate.closed.load(Ordering::Relaxed)
    }

    /// Whether idle objects are checked before they are handed out.
    #[inline]
    pub(in crate::object_pool) fn checks_on_take(&self) -> bool {
        // Relaxed: a setting, read as a hint (see `reconfigure.rs`).
        self.gate.check_on_take.load(Ordering::Relaxed)
    }

    /// Whether a pop needs the cold path (see `Gate::after_pop`).
    #[cfg(feature = "tokio")]
    #[inline]
    pub(in crate::object_pool) fn pops_need_care(&self) -> bool {
        // Relaxed: as `checks_on_take`.
        self.gate.after_pop.load(Ordering::Relaxed)
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
        let counters = &self.counters;
        bump(match what {
            Counted::DirectTake => &counters.direct_takes,
            Counted::Timeout => &counters.timeouts,
            Counted::Rejected => &counters.rejected,
            #[cfg(feature = "tokio")]
            Counted::CreateFailure => &counters.create_failures,
            #[cfg(feature = "tokio")]
            Counted::CreateTimeout => &counters.create_timeouts,
            Counted::DiscardedPop => &counters.discarded_pops,
            Counted::FailedTakeCheck => &counters.failed_take_checks,
        });
    }

    /// The count of async takes dropped after their first poll, for the
    /// watch a take keeps (see `async_pool/take.rs`).
    #[cfg(feature = "tokio")]
    pub(in crate::object_pool) fn cancelled_takes(&self) -> &AtomicU64 {
        &self.counters.cancelled
    }

    /// A creation started (a refill does not count on its slot twice).
    pub(in crate::object_pool) fn creating_started(&self) {
        // Relaxed: a figure the refill reads as a hint.
        self.counters.creating.fetch_add(1, Ordering::Relaxed);
    }

    /// A creation ended, however.
    pub(in crate::object_pool) fn creating_ended(&self) {
        self.counters.creating.fetch_sub(1, Ordering::Relaxed);
    }

    /// A creation its waiter gave up on was disposed of.
    pub(in crate::object_pool) fn abandoned_disposed(&self) {
        self.counters.abandoned.fetch_sub(1, Ordering::Relaxed);
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
