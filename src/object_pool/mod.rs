//! [`ObjectPool`]: reusable objects (connections, external processes) under
//! a strict size limit, with FIFO waiters, after Erlang's pidq/pooler and
//! CouchDB's process manager.
//!
//! # Protocol
//!
//! *Size* counts every object that exists or is being made: idle, in use or
//! in creation. Each is counted by one slot of the admission core's sharded
//! counter, whose capacity is `max_size`. A slot is taken before `create` starts and freed
//! exactly once: when creation fails, or when the object is destroyed or
//! detached. So size never exceeds `max_size`, not even for an instant, and
//! no failure path can leak the limit (CouchDB once did).
//!
//! Idle objects wait on per-shard LIFO stacks (see `engine/idle_stacks.rs`). A take
//! pops its home shard's stack: one uncontended spin lock, no shared line. A
//! return pushes the object onto the home stack of the thread that took it
//! (the take writes it in the object's box), unless takers are waiting, so the object a thread
//! returned last is the one its next take gets, whichever shard's slot
//! counts it.
//!
//! Takers that find nothing idle and no free slot may wait, FIFO, in the
//! queue of `engine/wait_queue.rs`. Two hand-offs serve them:
//!
//! * **Objects.** A returner reads `waiting` under its stack's lock before it
//!   pushes. A waiter registers (raising `waiting`) under the queue lock and
//!   then scans every stack under that stack's lock. For any one stack, either
//!   the waiter's scan comes after the push, and finds the object, or the
//!   returner's read comes after the registration, and sees the waiter, which
//!   it then serves under the queue lock. No object idles while a taker waits.
//! * **Slots.** Freeing a slot happens under the queue lock: the slot goes to
//!   the oldest waiter, which creates its own object, or back to the counter.
//!   A waiter tries to take a slot under the same lock before it sleeps, so a
//!   slot freed by a failed creation or a destroyed object wakes the next
//!   waiter.
//!
//! `close` sets `closed`, answers every waiter, then empties each stack
//! under its lock. Returners read `closed` under their stack's lock, so an
//! object pushed after the sweep is impossible: it is destroyed instead.
//!
//! # Where each part lives
//!
//! The face ([`ObjectPool`], here and in `lifecycle.rs`) is thin; the work is
//! done by the engine in `engine/`, `PoolShared`, which both pool faces
//! share and whose methods are split by concern there (see its module
//! docs). Beside the engine stand the pool's vocabulary (`config.rs`,
//! `error.rs`, `manager.rs`, `status.rs`), the blocking face's builder
//! (`builder.rs`), guards (`pooled.rs`, `owned_pooled.rs`), groups
//! (`group.rs`, `group_wait.rs`) and metering (`metered.rs`), the tagged
//! takes (`tags/`) and the async face (`async_pool/`). Files here depend on
//! the engine; the engine depends only on the vocabulary.
//!
//! # Orderings
//!
//! `closed` and `waiting` are read on the fast path under an idle stack's
//! lock, and written before (registration, close) or under (serving) the
//! queue lock, which the reader's side then takes. The locks order every
//! access that matters, so the atomics themselves are `Relaxed`. A take
//! reads `closed` only on its cold path (a closed pool has empty stacks),
//! as an early exit. The counters are `Relaxed` figures.

#[cfg(feature = "tokio")]
mod async_pool;
mod builder;
mod config;
mod engine;
mod error;
mod group;
mod group_wait;
mod lifecycle;
mod manager;
mod metered;
mod owned_pooled;
mod pooled;
mod status;
mod tags;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rates::{RateStats, Rates};
use crate::sync::{JoinHandle, Mutex, Ordering};

#[cfg(feature = "tokio")]
pub use async_pool::{
    AsyncManaged, AsyncManager, AsyncObjectPool, AsyncObjectPoolBuilder, AsyncOwnedPooled,
    AsyncPooled, AsyncTaggedManager,
};
pub use builder::ObjectPoolBuilder;
pub use config::{PoolConfig, DEFAULT_QUEUE_MAX};
use engine::PoolShared;
pub use error::{DuplicatePool, TakeError};
pub use group::{PoolGroup, Removal};
pub use manager::{Manager, TaggedManager};
pub use owned_pooled::OwnedPooled;
pub use pooled::Pooled;
pub use status::{ObjectPoolStats, PoolStatus};
pub use tags::PoolTag;

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
    /// Fed once a second by the process's sampler (see `crate::rates`).
    /// Declared first, so dropped first: the face leaves the sampler
    /// before it lets go of its core.
    rates: Arc<Rates>,
    shared: Arc<PoolShared<M>>,
    /// The maintainer thread, started when the configuration first needs it.
    maintainer: Mutex<Option<JoinHandle<()>>>,
    name: String,
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
        ObjectPoolBuilder::new(manager)
    }

    /// Takes an idle object, the most recently returned first, or makes a new
    /// one if the pool is below `max_size`. Never waits for another holder.
    ///
    /// # Errors
    ///
    /// [`TakeError::Overload`] when nothing is idle and the pool is full,
    /// [`TakeError::Create`] when a new object was needed and the manager
    /// failed to make it, [`TakeError::CreateTimeout`] when that creation
    /// ran past the pool's
    /// [`create_timeout`](crate::ObjectPoolBuilder::create_timeout),
    /// [`TakeError::Closed`] after [`close`](Self::close).
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
        let home = shared.home();
        match shared.pop_idle(home) {
            Some(member) => Ok(Pooled::new(shared, member, home)),
            None => shared
                .try_take_cold()
                .map(|member| Pooled::new(shared, member, home)),
        }
    }

    /// Takes an object like [`try_take`](Self::try_take), or else waits up to
    /// `timeout` for one, served first come, first served.
    ///
    /// A waiter is handed a returned object, or a freed slot for which it
    /// makes its own object; it never waits for someone else's creation.
    ///
    /// The take returns by its deadline even when [`Manager::create`]
    /// hangs: a creation it makes runs on a helper thread and is given up
    /// at the deadline (its slot stays counted until the call returns, and
    /// the late object is destroyed). So a `timeout` of zero never makes an
    /// object: use [`try_take`](Self::try_take) to take or make one without
    /// waiting.
    ///
    /// # Errors
    ///
    /// [`TakeError::QueueFull`] at once when `queue_max` takers already wait,
    /// [`TakeError::Timeout`] when nothing came free in time, or this
    /// taker's creation was still running at the deadline,
    /// [`TakeError::Create`] when this taker's own creation failed,
    /// [`TakeError::CreateTimeout`] when it ran past the pool's
    /// [`create_timeout`](crate::ObjectPoolBuilder::create_timeout) before
    /// the deadline, [`TakeError::Closed`] when the pool is or becomes
    /// closed.
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
        let home = shared.home();
        // With `check_on_take`, the check runs by the deadline: the cold path.
        if !shared.gate.check_on_take.load(Ordering::Relaxed) {
            if let Some(member) = shared.pop_idle(home) {
                return Ok(Pooled::new(shared, member, home));
            }
        }
        // The deadline is read only on a miss: the fast path reads no clock,
        // and a pop takes nanoseconds.
        let deadline = Instant::now().checked_add(timeout);
        match shared.take_cold(deadline) {
            Err(TakeError::Overload) => {}
            taken => return taken.map(|member| Pooled::new(shared, member, home)),
        }
        shared
            .wait_for(deadline)
            .map(|member| Pooled::new(shared, member, home))
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
        let member = Pooled::into_member(pooled);
        let home = member.home;
        OwnedPooled::new(Arc::clone(&self.shared), member, home)
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

    /// The in, out and rejected rates of the last whole second, and the
    /// last 60 seconds' and all-time counts with their average and peak
    /// rates and usage, as Erlang sidejob reports them: "in" is an object
    /// taken, "out" one back (returned, failed or detached), "rejected" a
    /// take refused (`Overload`, `QueueFull` or `Timeout`), usage the
    /// objects in use.
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
    /// drop(pool.try_take()?);
    /// let total = pool.rates().total;
    /// assert_eq!((total.accepted, total.completed), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rates(&self) -> RateStats {
        self.rates.stats(self.shared.sample())
    }

    /// The pool's name: its maintainer thread's prefix, and its metrics'
    /// `name` label (see [`ObjectPoolBuilder::name`]).
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
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).name("db").build()?;
    /// assert_eq!(pool.name(), "db");
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
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
}

/// The resource's `capacity` is the pool's `max_size`.
impl<M: Manager> fmt::Debug for ObjectPool<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectPool")
            .field("status", &self.status())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}
