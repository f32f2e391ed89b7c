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
    pub(in crate::object_pool) manager: M,
    /// The pool's own `Arc`, for the helper threads of bounded creations
    /// (see `create.rs`).
    pub(in crate::object_pool) this: Weak<PoolShared<M>>,
    /// One slot per object that exists or is being made.
    pub(in crate::object_pool) slots: ShardedCounter,
    /// Idle objects, a LIFO stack per shard.
    pub(in crate::object_pool) idle: IdleStacks<M::Object>,
    /// Read by every return; written only on the slow paths.
    pub(in crate::object_pool) gate: CachePadded<Gate>,
    /// Waiting takers, oldest first.
    pub(in crate::object_pool) waiters: Mutex<WaitQueue<M::Object>>,
    /// The limits and timers, read without locks.
    pub(in crate::object_pool) config: ArcSwap<PoolConfig>,
    /// Serialises `reconfigure` calls.
    pub(in crate::object_pool) reconfiguring: Mutex<()>,
    /// Wakes the maintainer thread.
    pub(in crate::object_pool) maintenance: Maintenance,
    /// Idle tagged objects, made at the first tagged take.
    pub(in crate::object_pool) tags: OnceLock<Box<dyn DynTagShelf<M::Object>>>,
    /// Objects alive per generation, for `stale_count`.
    pub(in crate::object_pool) generations: Mutex<BTreeMap<u64, usize>>,
    pub(in crate::object_pool) counters: CachePadded<Counters>,
    pub(in crate::object_pool) wait_times: Mutex<LatencyHistogram>,
}

#[derive(Debug)]
pub(in crate::object_pool) struct Gate {
    /// The pool clock; its coarse reading, which a return stamps, lives on
    /// this line, which the return reads anyway.
    pub(in crate::object_pool) clock: PoolClock,
    pub(in crate::object_pool) closed: AtomicBool,
    /// The wait queue's length; see the module's `# Protocol`.
    pub(in crate::object_pool) waiting: AtomicUsize,
    /// Raised by `retire_all`; an object of an older generation is
    /// destroyed when it comes back.
    pub(in crate::object_pool) generation: AtomicU64,
    /// `min_idle`'s value, for takes to know whether to nudge the
    /// maintainer without loading the configuration.
    pub(in crate::object_pool) min_idle: AtomicUsize,
    /// Whether a pop needs the cold path: `min_idle` is set (nudge the
    /// maintainer), some object may have a lifetime (check it), or objects
    /// are checked on take.
    pub(in crate::object_pool) after_pop: AtomicBool,
    /// `check_on_take`'s value, read by the cold take paths.
    pub(in crate::object_pool) check_on_take: AtomicBool,
    /// Set while `max_size` was lowered below the size: returned objects
    /// are destroyed until the pool fits.
    pub(in crate::object_pool) oversized: AtomicBool,
}

/// Slow-path counters; fast-path takes are counted on the idle stacks.
#[derive(Debug, Default)]
pub(in crate::object_pool) struct Counters {
    /// Takes served by a creation or a hand-off rather than a stack.
    pub(in crate::object_pool) direct_takes: AtomicU64,
    pub(in crate::object_pool) waits: AtomicU64,
    pub(in crate::object_pool) timeouts: AtomicU64,
    pub(in crate::object_pool) rejected: AtomicU64,
    pub(in crate::object_pool) creates: AtomicU64,
    pub(in crate::object_pool) create_failures: AtomicU64,
    /// Refill and replenishment rounds that a failed creation ended.
    pub(in crate::object_pool) failed_refills: AtomicU64,
    pub(in crate::object_pool) destroyed: AtomicU64,
    pub(in crate::object_pool) reaped: AtomicU64,
    pub(in crate::object_pool) expired: AtomicU64,
    /// Pops of objects not handed out, expired or failing the check on
    /// take (counted as takes on their stack or the shelf, so subtracted).
    pub(in crate::object_pool) discarded_pops: AtomicU64,
    /// Idle objects that failed `check_on_take`, destroyed.
    pub(in crate::object_pool) failed_take_checks: AtomicU64,
    pub(in crate::object_pool) evicted: AtomicU64,
    /// Creations given up on at a deadline.
    pub(in crate::object_pool) create_timeouts: AtomicU64,
    /// Async takes dropped after their first poll, before they finished.
    pub(in crate::object_pool) cancelled: AtomicU64,
    pub(in crate::object_pool) creating: AtomicUsize,
    /// Of those, creations their waiter gave up on: their objects will be
    /// destroyed, so a refill does not count on them.
    pub(in crate::object_pool) abandoned: AtomicUsize,
    /// Untagged objects that tagged takes took, to be replaced in the
    /// background.
    pub(in crate::object_pool) replenish: AtomicUsize,
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
        }
    }
}

/// A duration in nanoseconds, saturating.
pub(in crate::object_pool) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
