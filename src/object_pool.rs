//! [`ObjectPool`]: reusable objects (connections, external processes) under
//! a strict size limit, with FIFO waiters, after Erlang's pidq/pooler and
//! CouchDB's process manager.
//!
//! # Protocol
//!
//! *Size* counts every object that exists or is being made: idle, in use or
//! in creation. Each is counted by one slot of a core [`Resource`] whose
//! capacity is `max_size`. A slot is taken before `create` starts and freed
//! exactly once: when creation fails, or when the object is destroyed or
//! detached. So size never exceeds `max_size`, not even for an instant, and
//! no failure path can leak the limit (CouchDB once did).
//!
//! Idle objects wait on per-shard LIFO stacks (see `idle.rs`), each object
//! on the stack of the shard whose slot counts it. A take pops its home
//! shard's stack: one uncontended spin lock, no shared line. A return pushes
//! the object back onto its own stack, unless takers are waiting.
//!
//! Takers that find nothing idle and no free slot may wait, FIFO, in the
//! queue of `wait_queue.rs`. Two hand-offs serve them:
//!
//! * **Objects.** A returner reads `waiting` under its stack's lock before it
//!   pushes. A waiter registers (raising `waiting`) under the queue lock and
//!   then scans every stack under that stack's lock. For any one stack, either
//!   the waiter's scan comes after the push, and finds the object, or the
//!   returner's read comes after the registration, and sees the waiter, which
//!   it then serves under the queue lock. No object idles while a taker waits.
//! * **Slots.** Freeing a slot happens under the queue lock: the slot goes to
//!   the oldest waiter, which creates its own object, or back to the resource.
//!   A waiter tries to take a slot under the same lock before it sleeps, so a
//!   slot freed by a failed creation or a destroyed object wakes the next
//!   waiter.
//!
//! `close` sets `closed`, answers every waiter, then empties each stack
//! under its lock. Returners read `closed` under their stack's lock, so an
//! object pushed after the sweep is impossible: it is destroyed instead.
//!
//! # Orderings
//!
//! `closed` and `waiting` are read on the fast path under an idle stack's
//! lock, and written before (registration, close) or under (serving) the
//! queue lock, which the reader's side then takes. The locks order every
//! access that matters, so the atomics themselves are `Relaxed`. A take
//! reads `closed` only on its cold path (a closed pool has empty stacks),
//! as an early exit. The counters are `Relaxed` figures.

use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use std::collections::BTreeMap;
use std::hash::BuildHasher;

use arc_swap::ArcSwap;

use crate::error::{BuildError, TakeError};
use crate::home::home_shard;
use crate::idle::{idle_stacks, Idle, IdleStacks, Member};
use crate::latency::LatencyHistogram;
use crate::maintainer::{Maintenance, Wake};
use crate::manager::{Manager, TaggedManager};
use crate::owned_pooled::OwnedPooled;
use crate::pool_builder::ObjectPoolBuilder;
use crate::pool_clock::PoolClock;
use crate::pool_config::{PoolConfig, DEFAULT_QUEUE_MAX};
use crate::pool_status::{ObjectPoolStats, PoolStatus};
use crate::pool_tag::PoolTag;
use crate::pooled::Pooled;
use crate::resource::{check_capacity, Resource, ResourceBuilder};
use crate::sync::{
    is_current, lock, spawn_named, spin_lock, AtomicBool, AtomicU64, AtomicUsize, JoinHandle,
    Mutex, Ordering,
};
use crate::tag_index::{tag_of, TagIndex, TagShelf};
use crate::wait_queue::{Handoff, WaitQueue};

/// A pool of reusable objects with a strict size limit.
///
/// Made by [`ObjectPool::builder`]. Share it between threads by reference or
/// in an `Arc`; a taken object ([`Pooled`]) borrows the pool and goes back to
/// it when dropped. Dropping the pool closes it (see [`close`](Self::close)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use sidejob::{Manager, ObjectPool, TakeError};
///
/// struct Buffers;
/// impl Manager for Buffers {
///     type Object = Vec<u8>;
///     type Error = std::convert::Infallible;
///     fn create(&self) -> Result<Vec<u8>, Self::Error> {
///         Ok(Vec::with_capacity(4096))
///     }
/// }
///
/// let pool = ObjectPool::builder(Buffers).max_size(2).build()?;
/// let mut first = pool.try_take()?;
/// first.extend_from_slice(b"hello");
/// let _second = pool.take(Duration::from_millis(10))?;
///
/// // Both objects are out: a third taker is refused, or times out waiting.
/// assert!(matches!(pool.try_take(), Err(TakeError::Overload)));
/// assert!(matches!(pool.take(Duration::from_millis(10)), Err(TakeError::Timeout)));
///
/// drop(first); // back to the pool, for the next taker
/// assert_eq!(&*pool.try_take()?, b"hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ObjectPool<M: Manager> {
    shared: Arc<PoolShared<M>>,
    /// The maintainer thread, started when the configuration first needs it.
    maintainer: Mutex<Option<JoinHandle<()>>>,
    name: String,
}

/// What the pool, its objects and its maintainer share.
pub(crate) struct PoolShared<M: Manager> {
    manager: M,
    /// One slot per object that exists or is being made.
    slots: Resource,
    /// Idle objects, a LIFO stack per shard.
    idle: IdleStacks<M::Object>,
    /// Read by every return; written only on the slow paths.
    gate: CachePadded<Gate>,
    /// Waiting takers, oldest first.
    waiters: Mutex<WaitQueue<M::Object>>,
    /// The limits and timers, read without locks.
    config: ArcSwap<PoolConfig>,
    /// Serialises `reconfigure` calls.
    reconfiguring: Mutex<()>,
    /// Wakes the maintainer thread.
    maintenance: Maintenance,
    /// Idle tagged objects, made at the first tagged take.
    tags: std::sync::OnceLock<Box<dyn TagShelf<M::Object>>>,
    /// Objects alive per generation, for `stale_count`.
    generations: Mutex<BTreeMap<u64, usize>>,
    counters: CachePadded<Counters>,
    wait_times: Mutex<LatencyHistogram>,
}

#[derive(Debug)]
struct Gate {
    /// The pool clock; its coarse reading, which a return stamps, lives on
    /// this line, which the return reads anyway.
    clock: PoolClock,
    closed: AtomicBool,
    /// The wait queue's length; see the module's `# Protocol`.
    waiting: AtomicUsize,
    /// Raised by `retire_all`; an object of an older generation is
    /// destroyed when it comes back.
    generation: AtomicU64,
    /// `min_idle`'s value, for takes to know whether to nudge the
    /// maintainer without loading the configuration.
    min_idle: AtomicUsize,
    /// Whether a pop needs the cold path: `min_idle` is set (nudge the
    /// maintainer) or some object may have a lifetime (check it).
    after_pop: AtomicBool,
    /// Set while `max_size` was lowered below the size: returned objects
    /// are destroyed until the pool fits.
    oversized: AtomicBool,
}

/// Slow-path counters; fast-path takes are counted on the idle stacks.
#[derive(Debug, Default)]
struct Counters {
    /// Takes served by a creation or a hand-off rather than a stack.
    direct_takes: AtomicU64,
    waits: AtomicU64,
    timeouts: AtomicU64,
    rejected: AtomicU64,
    creates: AtomicU64,
    create_failures: AtomicU64,
    destroyed: AtomicU64,
    reaped: AtomicU64,
    expired: AtomicU64,
    /// Stack pops that found an expired object (counted as takes on the
    /// stack, so subtracted).
    expired_pops: AtomicU64,
    evicted: AtomicU64,
    creating: AtomicUsize,
    /// Untagged objects that tagged takes took, to be replaced in the
    /// background.
    replenish: AtomicUsize,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl<M: Manager> ObjectPool<M> {
    /// Starts configuring a pool of the objects `manager` makes.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = ();
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<()> { Ok(()) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns)
    ///     .max_size(8) // required
    ///     .init_size(2) // made before build returns
    ///     .min_idle(1) // kept ready in the background
    ///     .queue_max(100) // waiting takers; default 50
    ///     .shards(2) // default: the number of CPUs
    ///     .build()?;
    /// assert_eq!(pool.status().idle, 2);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn builder(manager: M) -> ObjectPoolBuilder<M> {
        ObjectPoolBuilder {
            manager,
            max_size: None,
            soft_limit: None,
            init_size: 0,
            min_idle: 0,
            queue_max: DEFAULT_QUEUE_MAX,
            idle_timeout: None,
            max_lifetime: None,
            lifetime_jitter: Duration::ZERO,
            shards: None,
            name: "sidejob-pool".to_owned(),
        }
    }

    /// Builds the pool; see [`ObjectPoolBuilder::build`].
    pub(crate) fn from_builder(
        manager: M,
        config: PoolConfig,
        shards: Option<usize>,
        init_size: usize,
        name: String,
    ) -> Result<ObjectPool<M>, BuildError> {
        let mut slots = ResourceBuilder::default().capacity(config.max_size);
        if let Some(shards) = shards {
            slots = slots.shards(shards);
        }
        let slots = slots.build().map_err(rename_capacity)?;
        let shards = slots.shard_count();
        let shared = Arc::new(PoolShared {
            manager,
            slots,
            idle: idle_stacks(shards),
            gate: CachePadded::new(Gate {
                clock: PoolClock::new(),
                closed: AtomicBool::new(false),
                waiting: AtomicUsize::new(0),
                generation: AtomicU64::new(0),
                min_idle: AtomicUsize::new(config.min_idle),
                after_pop: AtomicBool::new(config.min_idle > 0 || config.max_lifetime.is_some()),
                oversized: AtomicBool::new(false),
            }),
            waiters: Mutex::new(WaitQueue::new()),
            config: ArcSwap::from_pointee(config.clone()),
            reconfiguring: Mutex::new(()),
            maintenance: Maintenance::new(),
            tags: std::sync::OnceLock::new(),
            generations: Mutex::new(BTreeMap::new()),
            counters: CachePadded::new(Counters::default()),
            wait_times: Mutex::new(LatencyHistogram::new()),
        });
        let pool = ObjectPool {
            shared,
            maintainer: Mutex::new(None),
            name,
        };
        if init_size > 0 || config.needs_maintainer() {
            pool.start_maintainer(init_size)?;
        }
        Ok(pool)
    }

    /// Starts the maintainer thread unless it runs already, and waits until
    /// it has made `init_size` objects.
    fn start_maintainer(&self, init_size: usize) -> Result<(), BuildError> {
        let mut maintainer = lock(&self.maintainer);
        if maintainer.is_some() {
            return Ok(());
        }
        let (started, init_done) = crossbeam_channel::bounded::<()>(0);
        let body = {
            let shared = Arc::clone(&self.shared);
            move || shared.maintain(init_size, started)
        };
        let handle =
            spawn_named(format!("{}-maintainer", self.name), None, body).map_err(|error| {
                BuildError::new(
                    "name",
                    format!("could not start the maintainer thread: {error}"),
                )
            })?;
        // Disconnects once the `init_size` objects exist.
        let _ = init_done.recv();
        *maintainer = Some(handle);
        Ok(())
    }

    /// Takes an idle object, the most recently returned first, or makes a new
    /// one if the pool is below `max_size`. Never waits for another holder.
    ///
    /// # Errors
    ///
    /// [`TakeError::Overload`] when nothing is idle and the pool is full,
    /// [`TakeError::Create`] when a new object was needed and the manager
    /// failed to make it, [`TakeError::Closed`] after [`close`](Self::close).
    ///
    /// # Panics
    ///
    /// If [`Manager::create`] panics, the panic goes on to the caller (its
    /// slot is freed first).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// let held = pool.try_take()?;
    /// assert!(pool.try_take().unwrap_err().is_overload());
    /// drop(held);
    /// assert!(pool.try_take().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_take(&self) -> Result<Pooled<'_, M>, TakeError<M::Error>> {
        let shared = &*self.shared;
        match shared.pop_idle(shared.home()) {
            Some(idle) => Ok(Pooled::new(shared, idle)),
            None => shared.try_take_cold().map(|idle| Pooled::new(shared, idle)),
        }
    }

    /// Takes an object like [`try_take`](Self::try_take), or else waits up to
    /// `timeout` for one, served first come, first served.
    ///
    /// A waiter is handed a returned object, or a freed slot for which it
    /// makes its own object; it never waits for someone else's creation.
    ///
    /// # Errors
    ///
    /// [`TakeError::QueueFull`] at once when `queue_max` takers already wait,
    /// [`TakeError::Timeout`] when nothing came free in time,
    /// [`TakeError::Create`] when this taker's own creation failed,
    /// [`TakeError::Closed`] when the pool is or becomes closed.
    ///
    /// # Panics
    ///
    /// If [`Manager::create`] panics, the panic goes on to the caller (its
    /// slot is freed first).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// std::thread::scope(|s| {
    ///     let held = pool.try_take().unwrap();
    ///     let waiter = s.spawn(|| pool.take(Duration::from_secs(30)).map(|_| ()));
    ///     drop(held); // handed straight to the waiter
    ///     waiter.join().unwrap()
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take(&self, timeout: Duration) -> Result<Pooled<'_, M>, TakeError<M::Error>> {
        let shared = &*self.shared;
        match shared.try_take() {
            Err(TakeError::Overload) => {}
            taken => return taken.map(|idle| Pooled::new(shared, idle)),
        }
        shared
            .wait_for(timeout)
            .map(|idle| Pooled::new(shared, idle))
    }

    /// [`try_take`](Self::try_take), for an [`OwnedPooled`] that holds the
    /// pool by `Arc` instead of borrowing it.
    ///
    /// # Errors
    ///
    /// As [`try_take`](Self::try_take).
    ///
    /// # Panics
    ///
    /// As [`try_take`](Self::try_take).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// let owned: sidejob::OwnedPooled<Conns> = pool.try_take_owned()?;
    /// assert!(pool.try_take_owned().unwrap_err().is_overload());
    /// # drop(owned);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_take_owned(&self) -> Result<OwnedPooled<M>, TakeError<M::Error>> {
        self.try_take().map(|pooled| self.own(pooled))
    }

    /// [`take`](Self::take), for an [`OwnedPooled`] that holds the pool by
    /// `Arc` instead of borrowing it.
    ///
    /// # Errors
    ///
    /// As [`take`](Self::take).
    ///
    /// # Panics
    ///
    /// As [`take`](Self::take).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// let owned = pool.take_owned(std::time::Duration::from_millis(10))?;
    /// assert_eq!(*owned, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_owned(&self, timeout: Duration) -> Result<OwnedPooled<M>, TakeError<M::Error>> {
        self.take(timeout).map(|pooled| self.own(pooled))
    }

    fn own(&self, pooled: Pooled<'_, M>) -> OwnedPooled<M> {
        OwnedPooled::new(Arc::clone(&self.shared), Pooled::into_idle(pooled))
    }

    /// A snapshot of the pool's size and what makes it up.
    ///
    /// Each figure is read at a slightly different moment, so under
    /// concurrent change they need not add up exactly; at rest they do.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).init_size(2).build()?;
    /// let held = pool.try_take()?;
    /// let status = pool.status();
    /// assert_eq!((status.size, status.idle, status.in_use), (2, 1, 1));
    /// assert_eq!((status.max_size, status.creating, status.waiting), (4, 0, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> PoolStatus {
        self.shared.status()
    }

    /// The pool's counters since it was built.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// drop(pool.try_take()?); // creates
    /// drop(pool.try_take()?); // reuses
    /// let stats = pool.stats();
    /// assert_eq!((stats.takes, stats.creates, stats.waits), (2, 1, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> ObjectPoolStats {
        self.shared.stats()
    }

    /// Closes the pool: takes fail with [`TakeError::Closed`], waiters are
    /// answered `Closed`, idle objects are destroyed now and objects in use
    /// when they come back. Idempotent; dropping the pool closes it too.
    ///
    /// # Panics
    ///
    /// If [`Manager::destroy`] panics, the panic goes on to the caller after
    /// every idle object has been dealt with.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(2).init_size(1).build()?;
    /// let held = pool.try_take()?;
    /// pool.close();
    /// assert!(matches!(pool.try_take(), Err(sidejob::TakeError::Closed)));
    /// drop(held); // destroyed, not kept
    /// assert_eq!(pool.status().size, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.shared.close();
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(2).build()?;
    /// assert!(!pool.is_closed());
    /// pool.close();
    /// assert!(pool.is_closed());
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.gate.closed.load(Ordering::Relaxed)
    }

    /// The most objects the pool holds at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(3).build()?;
    /// assert_eq!(pool.max_size(), 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn max_size(&self) -> usize {
        self.shared.slots.capacity()
    }

    /// The number of shards (idle stacks and slot shards).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(3).shards(2).build()?;
    /// assert_eq!(pool.shard_count(), 2);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn shard_count(&self) -> usize {
        self.shared.idle.len()
    }

    /// The manager the pool was built with.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Debug, PartialEq)]
    /// # struct Conns(&'static str);
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns("db:5432")).max_size(3).build()?;
    /// assert_eq!(pool.manager(), &Conns("db:5432"));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn manager(&self) -> &M {
        &self.shared.manager
    }

    /// The pool's limits and timers now.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(3).queue_max(7).build()?;
    /// assert_eq!(pool.config().queue_max, 7);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn config(&self) -> PoolConfig {
        PoolConfig::clone(&self.shared.config.load())
    }

    /// Changes the limits and timers while the pool runs: `change` edits a
    /// copy of the configuration, which replaces the old one if it is valid.
    ///
    /// * Raising `max_size` serves waiting takers at once (each makes its
    ///   object in a new slot).
    /// * Lowering `max_size` destroys idle objects down to it; objects in use
    ///   drain as they come back, and no object is made until the pool is
    ///   below the new size. The bound then holds at the new value.
    /// * Lowering `queue_max` answers the newest waiters beyond it with
    ///   [`TakeError::QueueFull`].
    /// * `min_idle`, `soft_limit`, `idle_timeout` and `max_lifetime` take
    ///   effect at the maintainer's next round, which is started now (and
    ///   its thread too, if none ran). A new `max_lifetime` applies to
    ///   objects made from now on.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting, for the combinations
    /// [`ObjectPoolBuilder::build`] refuses, or if the maintainer thread was
    /// needed and could not be started. The configuration is then unchanged.
    ///
    /// # Panics
    ///
    /// If [`Manager::destroy`] panics while lowering `max_size`, after every
    /// idle object above the new size is dealt with.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).build()?;
    /// let held = pool.try_take()?;
    /// assert!(pool.try_take().is_err());
    /// pool.reconfigure(|config| config.max_size = 2)?;
    /// let second = pool.try_take()?;
    /// let err = pool.reconfigure(|config| config.min_idle = 5).unwrap_err();
    /// assert_eq!(err.setting(), "min_idle");
    /// # drop((held, second));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reconfigure(&self, change: impl FnOnce(&mut PoolConfig)) -> Result<(), BuildError> {
        let shared = &*self.shared;
        let _reconfiguring = lock(&shared.reconfiguring);
        let old = shared.config.load_full();
        let mut new = PoolConfig::clone(&old);
        change(&mut new);
        new.validate()?;
        check_capacity(new.max_size, shared.idle.len()).map_err(rename_capacity)?;
        if new.needs_maintainer() {
            self.start_maintainer(0)?;
        }
        shared.config.store(Arc::new(new.clone()));
        shared.gate.min_idle.store(new.min_idle, Ordering::Relaxed);
        // Once lifetimes were on, objects with one may remain: keep checking.
        let lifetimes = new.max_lifetime.is_some() || old.max_lifetime.is_some();
        if new.min_idle > 0 || lifetimes {
            shared.gate.after_pop.store(true, Ordering::Relaxed);
        }
        if new.queue_max < old.queue_max {
            let mut queue = lock(&shared.waiters);
            queue.refuse_beyond(new.queue_max);
            shared.gate.waiting.store(queue.len(), Ordering::Relaxed);
        }
        let mut panic = None;
        if new.max_size > old.max_size {
            shared.slots.set_capacity(new.max_size);
            shared.serve_waiters_with_new_slots();
        } else if new.max_size < old.max_size {
            // The flag first, so that no slot freed meanwhile goes to a
            // waiter (see `free_slot`).
            shared.gate.oversized.store(true, Ordering::Relaxed);
            shared.slots.set_capacity(new.max_size);
            panic = shared.shrink_idle_to(new.max_size);
        }
        shared.maintenance.wake_now();
        if let Some(panic) = panic {
            resume_unwind(panic);
        }
        Ok(())
    }

    /// Retires every object that exists now, as a reload does: idle ones are
    /// destroyed at once, and ones in use when they come back.
    /// [`stale_count`](Self::stale_count) tells how many are still out.
    /// Objects made from now on are new.
    ///
    /// # Panics
    ///
    /// If [`Manager::destroy`] panics, after every idle object is dealt with.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).init_size(2).build()?;
    /// let held = pool.try_take()?;
    /// pool.retire_all();
    /// assert_eq!(pool.status().idle, 0); // the idle one is gone
    /// assert_eq!(pool.stale_count(), 1); // the one in use is stale
    /// drop(held); // destroyed, not kept
    /// assert_eq!((pool.stale_count(), pool.status().size), (0, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn retire_all(&self) {
        let shared = &*self.shared;
        shared.gate.generation.fetch_add(1, Ordering::Relaxed);
        if let Some(panic) = shared.sweep_idle() {
            resume_unwind(panic);
        }
        shared.maintenance.wake_now();
    }

    /// How many objects made before the last
    /// [`retire_all`](Self::retire_all) still exist (in use, to be destroyed
    /// when they come back).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).build()?;
    /// assert_eq!(pool.stale_count(), 0);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn stale_count(&self) -> usize {
        let current = self.shared.gate.generation.load(Ordering::Relaxed);
        lock(&self.shared.generations)
            .range(..current)
            .map(|(_, alive)| alive)
            .sum()
    }
}

/// The resource's `capacity` is the pool's `max_size`.
impl<M: TaggedManager> ObjectPool<M> {
    /// Takes an object tagged `tag`, waiting up to `timeout`; CouchDB's
    /// design-document affinity. Looks, in order, for:
    ///
    /// 1. an idle object with the exact tag (the most recently returned);
    /// 2. an idle object of the same group;
    /// 3. an idle untagged object (an untagged replacement is then made in
    ///    the background, room permitting, so untagged takers keep finding
    ///    one);
    /// 4. a new object, below `max_size`;
    /// 5. at `max_size`, room made by destroying the least recently used
    ///    idle tagged objects (a tenth of `max_size`, at least one), then a
    ///    new object;
    ///
    /// and otherwise waits in the same FIFO queue as [`take`](Self::take),
    /// for any object. An object that does not already carry `tag` is
    /// taught it with [`TaggedManager::tag`] and keeps it: returned, it
    /// idles on the tag shelf, where tagged takes find it by tag or group
    /// without a scan. Idle tagged objects are reaped after `idle_timeout`
    /// whatever the soft limit. An untagged take
    /// ([`try_take`](Self::try_take), [`take`](Self::take)) prefers untagged
    /// objects and a new one, and takes a tagged one only when nothing else
    /// is left; the object keeps its tag.
    ///
    /// # Errors
    ///
    /// Those of [`take`](Self::take), and [`TakeError::Tag`] when teaching
    /// the tag failed (the object was destroyed).
    ///
    /// # Panics
    ///
    /// If [`Manager::create`] or [`TaggedManager::tag`] panics, the panic
    /// goes on to the caller (the slot is freed first).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use sidejob::{Manager, ObjectPool, TaggedManager};
    ///
    /// struct Workers;
    /// impl Manager for Workers {
    ///     type Object = Vec<String>; // what each worker has loaded
    ///     type Error = std::io::Error;
    ///     fn create(&self) -> std::io::Result<Vec<String>> {
    ///         Ok(Vec::new())
    ///     }
    /// }
    /// impl TaggedManager for Workers {
    ///     type Tag = (&'static str, &'static str);
    ///     fn tag(&self, loaded: &mut Vec<String>, tag: &Self::Tag) -> std::io::Result<()> {
    ///         loaded.push(format!("{}/{}", tag.0, tag.1));
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let pool = ObjectPool::builder(Workers).max_size(2).build()?;
    /// let wait = Duration::from_secs(1);
    /// drop(pool.take_tagged(&("db", "a"), wait)?); // made and taught "db/a"
    /// // Same group: the same worker, taught "db/b" as well.
    /// let worker = pool.take_tagged(&("db", "b"), wait)?;
    /// assert_eq!(*worker, ["db/a", "db/b"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_tagged(
        &self,
        tag: &M::Tag,
        timeout: Duration,
    ) -> Result<Pooled<'_, M>, TakeError<M::Error>> {
        let shared = &*self.shared;
        // (Not under loom, whose models leave replenishment out.)
        if shared.tags.get().is_none() && !cfg!(sidejob_loom) {
            // The maintainer replaces the untagged objects that tagged takes
            // teach. Should its thread fail to start, tagged takes still
            // work; untagged objects are then made on demand instead.
            let _ = self.start_maintainer(0);
        }
        let idle = match shared.find_tagged(tag)? {
            Some(handoff) => shared.accept(handoff)?,
            None => shared.wait_for(timeout)?,
        };
        shared
            .teach(idle, tag)
            .map(|idle| Pooled::new(shared, idle))
    }
}

impl<M: TaggedManager> PoolShared<M> {
    /// The typed tag shelf, made at the first tagged take.
    fn tag_index(&self) -> &TagIndex<M::Object, M::Tag> {
        self.tags
            .get_or_init(|| Box::new(TagIndex::<M::Object, M::Tag>::new()))
            .as_any()
            .downcast_ref()
            .expect("a manager has one tag type")
    }

    /// Steps 1 to 5 of `take_tagged`: what it found, or `None` to wait.
    fn find_tagged(&self, tag: &M::Tag) -> Result<Option<Handoff<M::Object>>, TakeError<M::Error>> {
        if self.gate.closed.load(Ordering::Relaxed) {
            return Err(TakeError::Closed);
        }
        let mut doomed = Vec::new();
        let found = self.find_tagged_into(tag, &mut doomed);
        self.expire_all(doomed);
        Ok(found)
    }

    /// [`find_tagged`](Self::find_tagged)'s search, setting expired objects
    /// aside in `doomed`.
    fn find_tagged_into(
        &self,
        tag: &M::Tag,
        doomed: &mut Vec<Idle<M::Object>>,
    ) -> Option<Handoff<M::Object>> {
        let index = self.tag_index();
        let tagged = std::iter::from_fn(|| index.take_exact(tag))
            .chain(std::iter::from_fn(|| index.take_group(tag.group())))
            .find_map(|idle| self.unexpired(idle, doomed));
        if let Some(idle) = tagged {
            bump(&self.counters.direct_takes);
            return Some(Handoff::Object(idle));
        }
        let home = self.home();
        let untagged = match self.pop_idle_into(home, Some(doomed)) {
            Some(idle) => Some(idle),
            None => self.steal(home, doomed),
        };
        if let Some(idle) = untagged {
            self.counters.replenish.fetch_add(1, Ordering::Relaxed);
            self.maintenance.wake_now();
            return Some(Handoff::Object(idle));
        }
        if let Ok(slot) = self.slots.admit_from(home) {
            return Some(Handoff::Slot(slot));
        }
        let mut evicted = false;
        for _ in 0..(self.slots.capacity() / 10).max(1) {
            let Some(idle) = self.tags.get().and_then(|shelf| shelf.take_oldest()) else {
                break;
            };
            bump(&self.counters.evicted);
            // A panicking `destroy` is not this taker's business.
            let _ = self.destroy(idle);
            evicted = true;
        }
        if evicted {
            if let Ok(slot) = self.slots.admit_from(home) {
                return Some(Handoff::Slot(slot));
            }
        }
        None
    }

    /// Teaches `idle` the tag, unless it carries it already.
    fn teach(
        &self,
        mut idle: Idle<M::Object>,
        tag: &M::Tag,
    ) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        if tag_of::<M::Object, M::Tag>(&idle) == Some(tag) {
            return Ok(idle);
        }
        let object = &mut idle.object;
        match catch_unwind(AssertUnwindSafe(|| self.manager.tag(object, tag))) {
            Ok(Ok(())) => {
                idle.set_tag(Box::new(tag.clone()));
                Ok(idle)
            }
            Ok(Err(error)) => {
                self.destroy_or_resume(idle);
                Err(TakeError::Tag(error))
            }
            Err(panic) => {
                let _ = self.destroy(idle);
                resume_unwind(panic)
            }
        }
    }
}

fn rename_capacity(error: BuildError) -> BuildError {
    match error.setting() {
        "capacity" => BuildError::new("max_size", error.reason().to_owned()),
        _ => error,
    }
}

impl<M: Manager> Drop for ObjectPool<M> {
    fn drop(&mut self) {
        self.shared.maintenance.stop();
        let maintainer = lock(&self.maintainer).take();
        if let Some(handle) = maintainer {
            if !is_current(&handle) {
                let _ = handle.join();
            }
        }
        if std::thread::panicking() {
            // A second panic from `destroy` would abort; contain it.
            let _ = catch_unwind(AssertUnwindSafe(|| self.shared.close()));
        } else {
            self.shared.close();
        }
    }
}

impl<M: Manager> fmt::Debug for ObjectPool<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectPool")
            .field("status", &self.status())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl<M: Manager> PoolShared<M> {
    /// The calling thread's home shard.
    #[inline]
    fn home(&self) -> usize {
        home_shard(self.idle.len())
    }

    /// Pops the top of `shard`'s idle stack, skipping (and destroying)
    /// objects whose lifetime ran out. Not for a caller that holds the
    /// queue lock: a destroy frees a slot, which takes that lock.
    #[inline]
    fn pop_idle(&self, shard: usize) -> Option<Idle<M::Object>> {
        self.pop_idle_into(shard, None)
    }

    /// [`pop_idle`](Self::pop_idle), putting the expired objects it skips
    /// into `doomed` (when given) for the caller to destroy once it has let
    /// go of the queue lock.
    #[inline]
    fn pop_idle_into(
        &self,
        shard: usize,
        doomed: Option<&mut Vec<Idle<M::Object>>>,
    ) -> Option<Idle<M::Object>> {
        let mut stack = spin_lock(&self.idle[shard]);
        let idle = stack.members.pop()?;
        stack.takes += 1;
        drop(stack);
        if self.gate.after_pop.load(Ordering::Relaxed) {
            return self.after_pop(idle, doomed);
        }
        Some(idle)
    }

    /// The pool keeps `min_idle` objects or has lifetimes: nudges the
    /// maintainer, and hands the object out only if it has not expired.
    #[cold]
    #[inline(never)]
    fn after_pop(
        &self,
        idle: Idle<M::Object>,
        doomed: Option<&mut Vec<Idle<M::Object>>>,
    ) -> Option<Idle<M::Object>> {
        if self.gate.min_idle.load(Ordering::Relaxed) > 0 {
            self.maintenance.nudge();
        }
        if idle.may_expire() {
            return self.unless_expired(idle, doomed);
        }
        Some(idle)
    }

    /// An object with a lifetime was popped: hands it out only if the
    /// lifetime has not run out, checked against the precise clock.
    #[cold]
    #[inline(never)]
    fn unless_expired(
        &self,
        idle: Idle<M::Object>,
        doomed: Option<&mut Vec<Idle<M::Object>>>,
    ) -> Option<Idle<M::Object>> {
        if self.gate.clock.precise() < idle.expires {
            return Some(idle);
        }
        let slot = idle.slot;
        bump(&self.counters.expired_pops);
        match doomed {
            Some(doomed) => {
                doomed.push(idle);
                self.pop_idle_into(slot, Some(doomed))
            }
            None => {
                self.expire(idle);
                self.pop_idle(slot)
            }
        }
    }

    /// Destroys an object whose lifetime ran out.
    fn expire(&self, idle: Idle<M::Object>) {
        bump(&self.counters.expired);
        // A panicking `destroy` is not this taker's business.
        let _ = self.destroy(idle);
    }

    /// Destroys the expired objects a search under the queue lock set
    /// aside. Never called with that lock held.
    fn expire_all(&self, doomed: Vec<Idle<M::Object>>) {
        for idle in doomed {
            self.expire(idle);
        }
    }

    /// [`take_cold`](Self::take_cold) for `try_take`, which counts a refusal.
    #[cold]
    #[inline(never)]
    fn try_take_cold(&self) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        let taken = self.take_cold();
        if let Err(TakeError::Overload) = taken {
            bump(&self.counters.rejected);
        }
        taken
    }

    /// The home stack's top, or else the cold path.
    #[inline]
    pub(crate) fn try_take(&self) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        // No `closed` check here: `close` empties the stacks and nothing is
        // pushed after, so a closed pool always takes the cold path.
        match self.pop_idle(self.home()) {
            Some(idle) => Ok(idle),
            None => self.take_cold(),
        }
    }

    /// Nothing idle at home: another shard's idle object, else a new object,
    /// else `Overload`. Looks twice, so an object returned or a slot freed
    /// while the first look went by is still found.
    #[cold]
    #[inline(never)]
    fn take_cold(&self) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        if self.gate.closed.load(Ordering::Relaxed) {
            return Err(TakeError::Closed);
        }
        let home = self.home();
        let mut doomed = Vec::new();
        let found = (0..2).find_map(|_| self.find_free(home, &mut doomed));
        self.expire_all(doomed);
        match found {
            Some(found) => self.accept(found),
            None => Err(TakeError::Overload),
        }
    }

    /// An idle object from any stack but `home`'s, in probe order; expired
    /// ones found on the way go to `doomed`.
    fn steal(&self, home: usize, doomed: &mut Vec<Idle<M::Object>>) -> Option<Idle<M::Object>> {
        let count = self.idle.len();
        (1..count).find_map(|offset| self.pop_idle_into((home + offset) % count, Some(doomed)))
    }

    /// An idle untagged object from any stack, or else a free slot, or else
    /// the least recently used idle tagged object. Never creates or
    /// destroys (expired objects go to `doomed`): the caller may hold the
    /// queue lock.
    fn find_free(
        &self,
        home: usize,
        doomed: &mut Vec<Idle<M::Object>>,
    ) -> Option<Handoff<M::Object>> {
        let untagged = match self.pop_idle_into(home, Some(doomed)) {
            Some(idle) => Some(idle),
            None => self.steal(home, doomed),
        };
        if let Some(idle) = untagged {
            return Some(Handoff::Object(idle));
        }
        if let Ok(slot) = self.slots.admit_from(home) {
            return Some(Handoff::Slot(slot));
        }
        let idle = self.take_oldest_tagged(doomed)?;
        bump(&self.counters.direct_takes);
        Some(Handoff::Object(idle))
    }

    /// The least recently used idle tagged object whose lifetime has not
    /// run out (expired ones found on the way go to `doomed`).
    fn take_oldest_tagged(&self, doomed: &mut Vec<Idle<M::Object>>) -> Option<Idle<M::Object>> {
        let shelf = self.tags.get()?;
        loop {
            let idle = shelf.take_oldest()?;
            if let Some(idle) = self.unexpired(idle, doomed) {
                return Some(idle);
            }
        }
    }

    /// `idle`, unless its lifetime ran out: then it goes to `doomed`.
    fn unexpired(
        &self,
        idle: Idle<M::Object>,
        doomed: &mut Vec<Idle<M::Object>>,
    ) -> Option<Idle<M::Object>> {
        if idle.may_expire() && self.gate.clock.precise() >= idle.expires {
            doomed.push(idle);
            return None;
        }
        Some(idle)
    }

    /// Makes an object for a taker in `slot`, counting the take.
    fn create_for_taker(&self, slot: usize) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        let made = self.create_in(slot);
        if made.is_ok() {
            bump(&self.counters.direct_takes);
        }
        made
    }

    /// Makes an object counted by `slot`, freeing the slot if that fails.
    fn create_in(&self, slot: usize) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        let counters = &self.counters;
        counters.creating.fetch_add(1, Ordering::Relaxed);
        let made = catch_unwind(AssertUnwindSafe(|| self.manager.create()));
        counters.creating.fetch_sub(1, Ordering::Relaxed);
        match made {
            Ok(Ok(object)) => {
                bump(&counters.creates);
                let (generation, expires) = self.birth();
                Ok(Member::boxed(object, slot, generation, expires))
            }
            Ok(Err(error)) => {
                bump(&counters.create_failures);
                self.free_slot(slot);
                Err(TakeError::Create(error))
            }
            Err(panic) => {
                bump(&counters.create_failures);
                self.free_slot(slot);
                resume_unwind(panic)
            }
        }
    }

    /// A new object's generation and expiry, and its count in its
    /// generation.
    fn birth(&self) -> (u64, u64) {
        let generation = self.gate.generation.load(Ordering::Relaxed);
        *lock(&self.generations).entry(generation).or_insert(0) += 1;
        let config = self.config.load();
        let expires = match config.max_lifetime {
            None => Member::<M::Object>::NEVER,
            Some(lifetime) => {
                let jitter = nanos(config.lifetime_jitter);
                let shortened = if jitter == 0 {
                    0
                } else {
                    std::collections::hash_map::RandomState::new().hash_one(generation) % jitter
                };
                let now = self.gate.clock.precise();
                now.saturating_add(nanos(lifetime) - shortened)
            }
        };
        (generation, expires)
    }

    /// An object leaves the pool for good: it no longer counts in its
    /// generation.
    fn bury(&self, generation: u64) {
        let mut generations = lock(&self.generations);
        if let Some(alive) = generations.get_mut(&generation) {
            *alive -= 1;
            if *alive == 0 {
                generations.remove(&generation);
            }
        }
    }

    /// Joins the wait queue, unless something is free after all, and waits.
    #[cold]
    #[inline(never)]
    fn wait_for(&self, timeout: Duration) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        let started = Instant::now();
        let home = self.home();
        let mut queue = lock(&self.waiters);
        if self.gate.closed.load(Ordering::Relaxed) {
            return Err(TakeError::Closed);
        }
        // Register first, then look: see the module's `# Protocol`.
        let waiter = queue.push(started.checked_add(timeout));
        self.gate.waiting.store(queue.len(), Ordering::Relaxed);
        // Expired objects the scan meets are destroyed only once the lock
        // is let go: a destroy frees a slot, which takes it.
        let mut doomed = Vec::new();
        let found = self.find_free(home, &mut doomed);
        if found.is_some() || queue.len() > self.config.load().queue_max {
            queue.remove(waiter.key());
            self.gate.waiting.store(queue.len(), Ordering::Relaxed);
            drop(queue);
            self.expire_all(doomed);
            return match found {
                Some(handoff) => self.accept(handoff),
                None => {
                    bump(&self.counters.rejected);
                    Err(TakeError::QueueFull)
                }
            };
        }
        drop(queue);
        self.expire_all(doomed);
        bump(&self.counters.waits);

        let handoff = match waiter.wait() {
            Some(handoff) => handoff,
            None => {
                let mut queue = lock(&self.waiters);
                if queue.remove(waiter.key()) {
                    self.gate.waiting.store(queue.len(), Ordering::Relaxed);
                    drop(queue);
                    Handoff::Expired
                } else {
                    drop(queue);
                    waiter.take_filled()
                }
            }
        };
        lock(&self.wait_times).record(started.elapsed());
        self.accept(handoff)
    }

    /// What a taker does with what it found or was handed.
    fn accept(&self, handoff: Handoff<M::Object>) -> Result<Idle<M::Object>, TakeError<M::Error>> {
        match handoff {
            Handoff::Object(idle) => Ok(idle),
            Handoff::Slot(slot) => self.create_for_taker(slot),
            Handoff::Closed => Err(TakeError::Closed),
            Handoff::QueueFull => {
                bump(&self.counters.rejected);
                Err(TakeError::QueueFull)
            }
            Handoff::Expired => {
                bump(&self.counters.timeouts);
                Err(TakeError::Timeout)
            }
        }
    }

    /// Takes back a returned object: reused if its holder did not panic and
    /// it passes [`Manager::check`], destroyed otherwise.
    #[inline]
    pub(crate) fn give_back(&self, idle: Idle<M::Object>) {
        if std::thread::panicking() {
            return self.give_back_from_panic(idle);
        }
        // If `check` panics, the guard destroys the object (its slot freed)
        // as the panic passes through. The object stays in its box, so
        // moving it in and out of the guard moves a pointer.
        let mut guard = DestroyOnUnwind {
            pool: self,
            idle: std::mem::ManuallyDrop::new(Some(idle)),
        };
        let Some(idle) = guard.idle.as_mut() else {
            return;
        };
        let reusable = self.manager.check(&mut idle.object);
        let Some(idle) = guard.idle.take() else {
            return;
        };
        if reusable {
            self.put_idle(idle);
        } else {
            self.destroy_or_resume(idle);
        }
    }

    /// The holder panicked: the object's state is unknown, so it is
    /// destroyed. A panicking `destroy` now would abort, so it is contained.
    #[cold]
    #[inline(never)]
    fn give_back_from_panic(&self, idle: Idle<M::Object>) {
        let _ = self.destroy(idle);
    }

    /// Keeps a reusable object: onto its slot's stack, or to a waiter.
    /// Objects that expired or were retired are destroyed instead.
    #[inline]
    pub(crate) fn put_idle(&self, idle: Idle<M::Object>) {
        if idle.special {
            return self.put_special(idle);
        }
        self.put_on_stack(idle);
    }

    /// Pushes an untagged object onto its slot's stack, or hands it to the
    /// cold path when takers wait or the gate says otherwise.
    #[inline]
    fn put_on_stack(&self, mut idle: Idle<M::Object>) {
        let gate = &self.gate;
        idle.idle_since = gate.clock.coarse();
        let mut stack = spin_lock(&self.idle[idle.slot]);
        if gate.waiting.load(Ordering::Relaxed) == 0
            && !gate.closed.load(Ordering::Relaxed)
            && !gate.oversized.load(Ordering::Relaxed)
            && gate.generation.load(Ordering::Relaxed) == idle.generation
        {
            stack.members.push(idle);
            return;
        }
        drop(stack);
        self.put_idle_cold(idle);
    }

    /// `put_idle` for an object with a lifetime or a tag: destroys it if
    /// its lifetime ran out, else keeps it on the shelf (tagged) or its
    /// stack.
    #[cold]
    #[inline(never)]
    fn put_special(&self, mut idle: Idle<M::Object>) {
        if idle.may_expire() && self.gate.clock.precise() >= idle.expires {
            return self.expire(idle);
        }
        if idle.tag.is_none() {
            return self.put_on_stack(idle);
        }
        idle.idle_since = self.gate.clock.coarse();
        self.put_tagged(idle);
    }

    /// Shelves a returned tagged object, as `put_idle` pushes an untagged
    /// one: the shelf's lock stands in for the stack's.
    fn put_tagged(&self, idle: Idle<M::Object>) {
        let shelf = self.tags.get().expect("a tagged object implies the shelf");
        let generation = idle.generation;
        let gate = &self.gate;
        let shelved = shelf.put(idle, &|| {
            gate.waiting.load(Ordering::Relaxed) == 0
                && !gate.closed.load(Ordering::Relaxed)
                && !gate.oversized.load(Ordering::Relaxed)
                && gate.generation.load(Ordering::Relaxed) == generation
        });
        if let Err(idle) = shelved {
            self.put_idle_cold(idle);
        }
    }

    /// Takers wait, or the pool is closed or above its size, or the object
    /// is stale.
    #[cold]
    #[inline(never)]
    fn put_idle_cold(&self, idle: Idle<M::Object>) {
        if self.oversized() {
            self.destroy_or_resume(idle);
            return;
        }
        let mut queue = lock(&self.waiters);
        let stale = self.gate.generation.load(Ordering::Relaxed) != idle.generation;
        if self.gate.closed.load(Ordering::Relaxed) || stale {
            drop(queue);
            self.destroy_or_resume(idle);
            return;
        }
        let served = queue.serve(Handoff::Object(idle));
        self.gate.waiting.store(queue.len(), Ordering::Relaxed);
        let mut idle = match served {
            Ok(()) => return bump(&self.counters.direct_takes),
            Err(Handoff::Object(idle)) => idle,
            Err(_) => unreachable!("serve hands back what it was given"),
        };
        // Nobody waits any more. Holding the queue lock, no taker can
        // register before the push. `close` and `retire_all` change their
        // flag before they sweep this stack, so it is read again under its
        // lock.
        let gate = &self.gate;
        let generation = idle.generation;
        let admit = || {
            !gate.closed.load(Ordering::Relaxed)
                && gate.generation.load(Ordering::Relaxed) == generation
        };
        idle.idle_since = self.gate.clock.coarse();
        if idle.tag.is_some() {
            let shelf = self.tags.get().expect("a tagged object implies the shelf");
            if let Err(idle) = shelf.put(idle, &admit) {
                drop(queue);
                self.destroy_or_resume(idle);
            }
            return;
        }
        let mut stack = spin_lock(&self.idle[idle.slot]);
        if !admit() {
            drop(stack);
            drop(queue);
            self.destroy_or_resume(idle);
            return;
        }
        stack.members.push(idle);
    }

    /// Destroys `idle` and frees its slot; hands back a panic from
    /// [`Manager::destroy`] after the slot is freed.
    #[expect(
        clippy::boxed_local,
        reason = "an object lives in its box from creation to here"
    )]
    pub(crate) fn destroy(
        &self,
        idle: Idle<M::Object>,
    ) -> Result<(), Box<dyn std::any::Any + Send>> {
        let Member {
            object,
            slot,
            generation,
            ..
        } = CachePadded::into_inner(*idle);
        let outcome = catch_unwind(AssertUnwindSafe(|| self.manager.destroy(object)));
        bump(&self.counters.destroyed);
        self.bury(generation);
        self.free_slot(slot);
        outcome
    }

    /// [`destroy`](Self::destroy), letting a panic from
    /// [`Manager::destroy`] go on.
    pub(crate) fn destroy_or_resume(&self, idle: Idle<M::Object>) {
        if let Err(panic) = self.destroy(idle) {
            resume_unwind(panic);
        }
    }

    /// Takes the object out of the pool for good: frees its slot without
    /// destroying it.
    #[expect(
        clippy::boxed_local,
        reason = "an object lives in its box from creation to here"
    )]
    pub(crate) fn detach(&self, idle: Idle<M::Object>) -> M::Object {
        let Member {
            object,
            slot,
            generation,
            ..
        } = CachePadded::into_inner(*idle);
        self.bury(generation);
        self.free_slot(slot);
        object
    }

    /// Frees `slot`: to the oldest waiter, which makes its own object, or
    /// back to the resource. Under the queue lock, so a waiter that found no
    /// slot before it slept is always served (see `# Protocol`).
    ///
    /// Above a lowered `max_size`, the slot goes back to the resource, which
    /// admits nobody until the pool fits again: a waiter handed it would
    /// make an object and keep the pool above its size for as long as
    /// takers wait. The size is read under the queue lock, so two frees
    /// cannot both see the pool too big and both give their slot back.
    pub(crate) fn free_slot(&self, slot: usize) {
        let mut queue = lock(&self.waiters);
        let oversized = self.gate.oversized.load(Ordering::Relaxed)
            && self.slots.usage() > self.slots.capacity();
        if !oversized && !self.gate.closed.load(Ordering::Relaxed) {
            let served = queue.serve(Handoff::Slot(slot));
            self.gate.waiting.store(queue.len(), Ordering::Relaxed);
            if served.is_ok() {
                return;
            }
        }
        self.slots.release_slot(slot);
        drop(queue);
        if self.gate.min_idle.load(Ordering::Relaxed) > 0 {
            self.maintenance.nudge();
        }
    }

    /// Whether the pool holds more objects than `max_size` allows (after it
    /// was lowered); clears the flag once it fits again. Under the
    /// reconfiguration lock, so a clear cannot undo a newer shrink's flag.
    /// Never called with the queue lock held (`reconfigure` takes the two in
    /// the other order).
    fn oversized(&self) -> bool {
        if !self.gate.oversized.load(Ordering::Relaxed) {
            return false;
        }
        let _reconfiguring = lock(&self.reconfiguring);
        let over = self.slots.usage() > self.slots.capacity();
        if !over {
            self.gate.oversized.store(false, Ordering::Relaxed);
        }
        over
    }

    /// `max_size` grew: hands each waiter a new slot while there is room.
    fn serve_waiters_with_new_slots(&self) {
        let mut queue = lock(&self.waiters);
        while queue.len() > 0 {
            let Ok(slot) = self.slots.admit_from(0) else {
                break;
            };
            if let Err(Handoff::Slot(slot)) = queue.serve(Handoff::Slot(slot)) {
                self.slots.release_slot(slot);
            }
        }
        self.gate.waiting.store(queue.len(), Ordering::Relaxed);
    }

    /// `max_size` shrank: destroys idle objects until the pool fits it or
    /// none is idle. Returns the first panic from `destroy`.
    fn shrink_idle_to(&self, max_size: usize) -> Option<Box<dyn std::any::Any + Send>> {
        let mut first_panic = None;
        while self.slots.usage() > max_size {
            let Some(idle) = self.steal_any() else { break };
            if let Err(panic) = self.destroy(idle) {
                first_panic.get_or_insert(panic);
            }
        }
        first_panic
    }

    /// Any idle object: the bottom (longest idle) of any stack, else the
    /// least recently used tagged one.
    fn steal_any(&self) -> Option<Idle<M::Object>> {
        self.idle
            .iter()
            .find_map(|stack| {
                let mut stack = spin_lock(stack);
                if stack.members.is_empty() {
                    return None;
                }
                Some(stack.members.remove(0))
            })
            .or_else(|| self.tags.get()?.take_oldest())
    }

    /// Destroys every idle object; returns the first panic from `destroy`.
    /// The caller changed `closed` or the generation first, so nothing is
    /// pushed onto a stack after its sweep (see `put_idle`).
    fn sweep_idle(&self) -> Option<Box<dyn std::any::Any + Send>> {
        let mut first_panic = None;
        for stack in self.idle.iter() {
            let members = std::mem::take(&mut spin_lock(stack).members);
            for idle in members {
                if let Err(panic) = self.destroy(idle) {
                    first_panic.get_or_insert(panic);
                }
            }
        }
        let tagged = self.tags.get().map(|shelf| shelf.drain());
        for idle in tagged.into_iter().flatten() {
            if let Err(panic) = self.destroy(idle) {
                first_panic.get_or_insert(panic);
            }
        }
        first_panic
    }

    /// Closes the pool; see [`ObjectPool::close`].
    fn close(&self) {
        self.gate.closed.store(true, Ordering::Relaxed);
        let mut queue = lock(&self.waiters);
        queue.close();
        self.gate.waiting.store(0, Ordering::Relaxed);
        drop(queue);
        if let Some(panic) = self.sweep_idle() {
            resume_unwind(panic);
        }
    }

    /// Idle untagged objects, ready for any taker.
    fn untagged_idle_count(&self) -> usize {
        self.idle
            .iter()
            .map(|stack| spin_lock(stack).members.len())
            .sum()
    }

    /// Idle tagged objects.
    fn tagged_idle_count(&self) -> usize {
        self.tags.get().map_or(0, |shelf| shelf.len())
    }

    fn status(&self) -> PoolStatus {
        let tagged = self.tagged_idle_count();
        let idle = self.untagged_idle_count() + tagged;
        let creating = self.counters.creating.load(Ordering::Relaxed);
        let size = self.slots.usage();
        PoolStatus {
            max_size: self.slots.capacity(),
            size,
            idle,
            tagged,
            in_use: size.saturating_sub(idle + creating),
            creating,
            waiting: self.gate.waiting.load(Ordering::Relaxed),
        }
    }

    fn stats(&self) -> ObjectPoolStats {
        let counters = &self.counters;
        let stack_takes: u64 = self.idle.iter().map(|stack| spin_lock(stack).takes).sum();
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ObjectPoolStats {
            takes: stack_takes + read(&counters.direct_takes) - read(&counters.expired_pops),
            waits: read(&counters.waits),
            timeouts: read(&counters.timeouts),
            rejected: read(&counters.rejected),
            creates: read(&counters.creates),
            create_failures: read(&counters.create_failures),
            destroyed: read(&counters.destroyed),
            reaped: read(&counters.reaped),
            expired: read(&counters.expired),
            evicted: read(&counters.evicted),
            wait: lock(&self.wait_times).summary(),
        }
    }

    /// Makes one object in the background and keeps it; `false` if the pool
    /// is full or closed, or creation failed.
    fn create_idle(&self) -> bool {
        if self.gate.closed.load(Ordering::Relaxed) {
            return false;
        }
        let Ok(slot) = self.slots.admit_from(self.home()) else {
            return false;
        };
        match self.create_in(slot) {
            Ok(idle) => {
                self.put_idle(idle);
                true
            }
            Err(_) => false,
        }
    }

    /// Tops the idle objects up to `min_idle`, stopping at the first failure
    /// (the next round retries).
    fn refill(&self) {
        loop {
            let min_idle = self.config.load().min_idle;
            let ready = self.untagged_idle_count() + self.counters.creating.load(Ordering::Relaxed);
            if ready >= min_idle || !self.create_idle() {
                return;
            }
        }
    }

    /// Replaces, as room allows, the untagged objects that tagged takes
    /// took, so that untagged takers keep finding one.
    fn replenish(&self) {
        let wanted = self.counters.replenish.swap(0, Ordering::Relaxed);
        for _ in 0..wanted {
            if !self.create_idle() {
                return;
            }
        }
    }

    /// Destroys idle objects whose lifetime ran out, and objects idle longer
    /// than `idle_timeout` while the pool is above `soft_limit` and
    /// `min_idle`, longest idle first. Never touches an object in use.
    fn reap(&self) {
        let config = self.config.load();
        if config.idle_timeout.is_none() && config.max_lifetime.is_none() {
            return;
        }
        let now = self.gate.clock.tick();
        // A stamp can be one interval early (see `pool_clock.rs`).
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

    /// The maintainer thread's body.
    fn maintain(&self, init_size: usize, started: crossbeam_channel::Sender<()>) {
        for _ in 0..init_size {
            // A failed creation is counted and does not stop the others.
            let _ = catch_unwind(AssertUnwindSafe(|| self.create_idle()));
        }
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

/// A duration in nanoseconds, saturating.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Destroys the object it still holds when dropped, which happens only when
/// [`Manager::check`] panics.
struct DestroyOnUnwind<'a, M: Manager> {
    pool: &'a PoolShared<M>,
    /// Without drop glue, as in `Pooled`: `drop` takes what is left.
    idle: std::mem::ManuallyDrop<Option<Idle<M::Object>>>,
}

impl<M: Manager> Drop for DestroyOnUnwind<'_, M> {
    fn drop(&mut self) {
        if let Some(idle) = self.idle.take() {
            // Already unwinding: a second panic from `destroy` is contained.
            let _ = self.pool.destroy(idle);
        }
    }
}
