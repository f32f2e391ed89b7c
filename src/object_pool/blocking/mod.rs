//! The blocking face of the object pool: [`ObjectPool`], its lifecycle
//! (`lifecycle.rs`), its guards (`pooled.rs`, `owned_pooled.rs`), groups
//! (`group.rs`, `group_wait.rs`, with [`DuplicatePool`]), the tagged take
//! (`tagged_take.rs`), and what only a blocking caller needs of the engine:
//! creations and checks bounded on helper threads (`pending_create.rs`,
//! `bounded_check.rs`) and the engine's steps that call a `Manager`
//! (`create.rs`, `take.rs`, `waiters.rs`, `maintain.rs`). The async face is its sibling, `async_pool/`.

mod bounded_check;
mod build;
mod create;
mod group;
mod group_wait;
mod lifecycle;
mod maintain;
mod metered;
mod owned_pooled;
mod pending_create;
mod pooled;
mod tagged_take;
mod take;
mod waiters;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rates::{RateStats, Rates};
use crate::sync::{JoinHandle, Mutex};

use super::builder::ObjectPoolBuilder;
use super::engine::PoolShared;
use super::error::TakeError;
use super::manager::Manager;
use super::status::{ObjectPoolStats, PoolStatus};
pub use group::{DuplicatePool, PoolGroup, Removal};
#[cfg(feature = "tokio")]
pub(super) use metered::pool_snapshot;
pub use owned_pooled::OwnedPooled;
pub use pooled::Pooled;

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
    /// The pool over a built engine, its maintainer started if its
    /// configuration needs one (after making `init_size` objects).
    pub(in crate::object_pool) fn start(
        engine: super::builder::Engine<M>,
    ) -> Result<Self, crate::error::BuildError> {
        let pool = ObjectPool {
            shared: engine.shared,
            rates: engine.rates,
            maintainer: Mutex::new(None),
            name: engine.name,
        };
        if engine.init_size > 0 || engine.config.needs_maintainer() {
            pool.start_maintainer(engine.init_size)?;
        }
        Ok(pool)
    }

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
        if !shared.checks_on_take() {
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
        let home = member.home();
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
        self.shared.is_closed()
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
        self.shared.max_size()
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
        self.shared.shard_count()
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
        self.shared.manager()
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
