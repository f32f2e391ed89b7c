//! [`AsyncObjectPool`]: the object pool for async code (feature `tokio`).
//!
//! A second face over the same engine as [`ObjectPool`](crate::ObjectPool):
//! the idle stacks, the slots of the admission core, the FIFO wait queue,
//! the sweeps, reconfiguration and counts are `PoolShared`'s, seen through
//! the [`AsyncManaged`] adapter. Only the waiting and the creation differ:
//! a waiter's cell wakes its task's waker (`take.rs`), a creation is a
//! future bounded by tokio's timer (`create.rs`), and maintenance is a
//! task (`maintenance.rs`). See `take.rs` for cancel safety.

mod build;
mod create;
mod maintenance;
mod manager;
mod pooled;
mod tagged;
mod take;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::BuildError;
use crate::rates::{RateStats, Rates};

use super::builder::ObjectPoolBuilder;
use super::config::PoolConfig;
use super::engine::PoolShared;
use super::error::TakeError;
use super::status::{ObjectPoolStats, PoolStatus};
use crate::object_pool::engine::Counted;
pub use manager::{AsyncManaged, AsyncManager, AsyncTaggedManager};
pub use pooled::{AsyncOwnedPooled, AsyncPooled};
use take::{Take, TakeWatch};

/// Configures an [`AsyncObjectPool`]: the same settings as
/// [`ObjectPool`](crate::ObjectPool)'s builder; `build` is async.
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub type AsyncObjectPoolBuilder<M> = ObjectPoolBuilder<AsyncManaged<M>>;

/// A pool of reusable objects for async code, with a strict size limit.
///
/// The async counterpart of [`ObjectPool`](crate::ObjectPool), with the
/// same limits, FIFO waiters, reaping and counts: objects are made by an
/// [`AsyncManager`], and takers wait without blocking a thread. Made by
/// [`AsyncObjectPool::builder`] inside a tokio runtime, on which its
/// maintenance runs. Dropping the pool closes it.
///
/// # Cancel safety
///
/// Every take is cancel safe: a take future dropped at any `.await` loses
/// no object and no slot. An object handed to it goes to the next waiter or
/// back idle (unchecked: it was never used), a slot goes to the next waiter
/// or is freed, and a creation in flight is dropped before its slot is
/// freed, so no more than `max_size` objects exist or are being made at
/// any instant. Wrapping a take in `tokio::time::timeout` is as safe as its
/// own timeout. Such takes are counted in
/// [`ObjectPoolStats::cancelled`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// struct Conns;
///
/// impl sidejob::AsyncManager for Conns {
///     type Object = String;
///     type Error = std::io::Error;
///
///     async fn create(&self) -> std::io::Result<String> {
///         Ok("connection".to_owned())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
/// let conn = pool.try_take().await?;
/// assert_eq!(*conn, "connection");
/// assert!(pool.try_take().await.unwrap_err().is_overload()); // full: refused at once
/// drop(conn);
/// let again = pool.take(Duration::from_millis(10)).await?;
/// assert_eq!(pool.stats().creates, 1); // reused
/// # drop(again);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub struct AsyncObjectPool<M: AsyncManager> {
    /// Fed once a second by the process's sampler (see `crate::rates`).
    /// Declared first, so dropped first: the face leaves the sampler
    /// before it lets go of its core.
    rates: Arc<Rates>,
    shared: Arc<PoolShared<AsyncManaged<M>>>,
    name: String,
}

impl<M: AsyncManager> AsyncObjectPool<M> {
    /// A builder for a pool of `manager`'s objects; `max_size` must be set.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(4).init_size(2).build().await?;
    /// assert_eq!(pool.status().idle, 2);
    /// # Ok::<(), sidejob::BuildError>(())
    /// # }).unwrap();
    /// ```
    pub fn builder(manager: M) -> AsyncObjectPoolBuilder<M> {
        ObjectPoolBuilder::new(AsyncManaged(manager))
    }

    /// Takes an idle object, or makes one if a slot is free; never waits in
    /// the queue.
    ///
    /// With `check_on_take`, an idle object is checked first
    /// ([`AsyncManager::check`]); a broken one is destroyed and the take
    /// goes on. A creation is bounded by `create_timeout`, if set.
    ///
    /// # Errors
    ///
    /// [`TakeError::Overload`] at once when every slot holds an object in
    /// use or being made, [`TakeError::Create`] when this take's creation
    /// failed, [`TakeError::CreateTimeout`] when it ran past
    /// `create_timeout`, [`TakeError::Closed`] when the pool is closed.
    ///
    /// # Panics
    ///
    /// If [`AsyncManager::create`] or [`AsyncManager::check`] panics, the
    /// panic goes on to the caller once the slot or object is dealt with.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// let held = pool.try_take().await?;
    /// assert!(pool.try_take().await.unwrap_err().is_overload());
    /// drop(held);
    /// assert!(pool.try_take().await.is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn try_take(
        &self,
    ) -> impl Future<Output = Result<AsyncPooled<'_, M>, TakeError<M::Error>>> + Send + '_ {
        let shared = &*self.shared;
        Take::new(shared, move |home, popped| async move {
            let watch = TakeWatch::new(shared.cancelled_takes());
            let taken = shared.take_now(home, popped, None).await;
            if let Err(TakeError::Overload) = taken {
                shared.count(Counted::Rejected);
            }
            watch.finish(taken.map(|member| (member, home)))
        })
    }

    /// Takes an object like [`try_take`](Self::try_take), or else waits up
    /// to `timeout` for one, first come, first served.
    ///
    /// A waiter is handed a returned object (not checked: it comes straight
    /// from its returner), or a freed slot for which it makes its own
    /// object; a creation it makes ends by the take's deadline too.
    ///
    /// # Errors
    ///
    /// [`TakeError::QueueFull`] at once when `queue_max` takers already
    /// wait, [`TakeError::Timeout`] when nothing came free in time (or this
    /// take's creation was still running at the deadline),
    /// [`TakeError::Create`], [`TakeError::CreateTimeout`] and
    /// [`TakeError::Closed`] as for [`try_take`](Self::try_take); waiters
    /// are answered `Closed` when the pool closes.
    ///
    /// # Panics
    ///
    /// As [`try_take`](Self::try_take).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = std::sync::Arc::new(sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?);
    /// let held = pool.try_take_owned().await?;
    /// let waiter = tokio::spawn({
    ///     let pool = pool.clone();
    ///     async move { pool.take(Duration::from_secs(5)).await.is_ok() }
    /// });
    /// tokio::task::yield_now().await; // the waiter queues
    /// drop(held); // handed straight to the waiter
    /// assert!(waiter.await?);
    /// let timed_out = pool.take(Duration::from_millis(1));
    /// # drop(timed_out);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn take(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<AsyncPooled<'_, M>, TakeError<M::Error>>> + Send + '_ {
        let shared = &*self.shared;
        Take::new(shared, move |home, popped| async move {
            let watch = TakeWatch::new(shared.cancelled_takes());
            // The deadline is read here, on a miss only.
            let deadline = Instant::now().checked_add(timeout);
            let taken = shared.take_waiting(home, popped, deadline).await;
            watch.finish(taken.map(|member| (member, home)))
        })
    }

    /// [`try_take`](Self::try_take), for an [`AsyncOwnedPooled`] that holds
    /// the pool by `Arc`: `'static`, to move into a spawned task.
    ///
    /// # Errors
    ///
    /// As [`try_take`](Self::try_take).
    ///
    /// # Panics
    ///
    /// As [`try_take`](Self::try_take).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// let owned: sidejob::AsyncOwnedPooled<Conns> = pool.try_take_owned().await?;
    /// assert!(pool.try_take_owned().await.unwrap_err().is_overload());
    /// # drop(owned);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn try_take_owned(&self) -> Result<AsyncOwnedPooled<M>, TakeError<M::Error>> {
        let pooled = self.try_take().await?;
        Ok(AsyncPooled::into_owned(pooled, Arc::clone(&self.shared)))
    }

    /// [`take`](Self::take), for an [`AsyncOwnedPooled`].
    ///
    /// # Errors
    ///
    /// As [`take`](Self::take).
    ///
    /// # Panics
    ///
    /// As [`take`](Self::take).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: see the type's docs.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(3) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// let owned = pool.take_owned(std::time::Duration::from_millis(10)).await?;
    /// assert_eq!(*owned, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn take_owned(
        &self,
        timeout: Duration,
    ) -> Result<AsyncOwnedPooled<M>, TakeError<M::Error>> {
        let pooled = self.take(timeout).await?;
        Ok(AsyncPooled::into_owned(pooled, Arc::clone(&self.shared)))
    }

    /// A snapshot of the pool's size and what makes it up, as
    /// [`ObjectPool::status`](crate::ObjectPool::status).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(3).init_size(2).build().await?;
    /// let held = pool.try_take().await?;
    /// let status = pool.status();
    /// assert_eq!((status.size, status.idle, status.in_use), (2, 1, 1));
    /// # drop(held);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn status(&self) -> PoolStatus {
        self.shared.status()
    }

    /// Counts since the pool was built, as
    /// [`ObjectPool::stats`](crate::ObjectPool::stats), with the cancelled
    /// takes.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// drop(pool.try_take().await?); // creates
    /// drop(pool.try_take().await?); // reuses
    /// let stats = pool.stats();
    /// assert_eq!((stats.takes, stats.creates, stats.cancelled), (2, 1, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn stats(&self) -> ObjectPoolStats {
        self.shared.stats()
    }

    /// The rates and windows, as
    /// [`ObjectPool::rates`](crate::ObjectPool::rates).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// let held = pool.try_take().await?;
    /// assert!(pool.try_take().await.is_err());
    /// let total = pool.rates().total;
    /// assert_eq!((total.accepted, total.rejected, total.peak_usage), (1, 1, 1));
    /// # drop(held);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn rates(&self) -> RateStats {
        self.rates.stats(self.shared.sample())
    }

    /// The pool's name, its metrics' `name` label (see
    /// [`ObjectPoolBuilder::name`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).name("redis").build().await?;
    /// assert_eq!(pool.name(), "redis");
    /// # Ok::<(), sidejob::BuildError>(())
    /// # }).unwrap();
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pool's limits and timers now.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(3).queue_max(7).build().await?;
    /// assert_eq!(pool.config().queue_max, 7);
    /// # Ok::<(), sidejob::BuildError>(())
    /// # }).unwrap();
    /// ```
    pub fn config(&self) -> PoolConfig {
        PoolConfig::clone(&self.shared.config())
    }

    /// Changes the limits and timers while the pool runs, as
    /// [`ObjectPool::reconfigure`](crate::ObjectPool::reconfigure).
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting when the new configuration is
    /// invalid; nothing changes then.
    ///
    /// # Panics
    ///
    /// If [`AsyncManager::destroy`] panics while a shrink destroys idle
    /// objects, after they are all dealt with.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(1).build().await?;
    /// pool.reconfigure(|config| config.max_size = 2)?;
    /// assert_eq!(pool.max_size(), 2);
    /// let err = pool.reconfigure(|config| config.min_idle = 5).unwrap_err();
    /// assert_eq!(err.setting(), "min_idle");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn reconfigure(&self, change: impl FnOnce(&mut PoolConfig)) -> Result<(), BuildError> {
        // The maintenance task runs from `build` on.
        self.shared.reconfigure(change, |_| Ok(()))
    }

    /// Retires every object that exists now, as
    /// [`ObjectPool::retire_all`](crate::ObjectPool::retire_all).
    ///
    /// # Panics
    ///
    /// If [`AsyncManager::destroy`] panics, after every idle object is
    /// dealt with.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(4).init_size(2).build().await?;
    /// let held = pool.try_take().await?;
    /// pool.retire_all();
    /// assert_eq!((pool.status().idle, pool.stale_count()), (0, 1));
    /// drop(held); // destroyed, not kept
    /// assert_eq!((pool.stale_count(), pool.status().size), (0, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn retire_all(&self) {
        self.shared.retire_all();
    }

    /// How many objects made before the last
    /// [`retire_all`](Self::retire_all) still exist.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(4).build().await?;
    /// assert_eq!(pool.stale_count(), 0);
    /// # Ok::<(), sidejob::BuildError>(())
    /// # }).unwrap();
    /// ```
    pub fn stale_count(&self) -> usize {
        self.shared.stale_count()
    }

    /// Closes the pool: takes fail with [`TakeError::Closed`], waiters are
    /// answered `Closed`, idle objects are destroyed now and objects in use
    /// when they come back. Idempotent; dropping the pool closes it too.
    ///
    /// # Panics
    ///
    /// If [`AsyncManager::destroy`] panics, after every idle object has
    /// been dealt with.
    ///
    /// # Examples
    ///
    /// ```
    /// # struct Conns;
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(2).init_size(1).build().await?;
    /// pool.close();
    /// assert!(matches!(pool.try_take().await, Err(sidejob::TakeError::Closed)));
    /// assert!(pool.is_closed());
    /// assert_eq!(pool.status().size, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
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
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(2).build().await?;
    /// assert!(!pool.is_closed());
    /// # Ok::<(), sidejob::BuildError>(())
    /// # }).unwrap();
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
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(3).build().await?;
    /// assert_eq!(pool.max_size(), 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// # }).unwrap();
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
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns).max_size(3).shards(2).build().await?;
    /// assert_eq!(pool.shard_count(), 2);
    /// # Ok::<(), sidejob::BuildError>(())
    /// # }).unwrap();
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
    /// # impl sidejob::AsyncManager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = sidejob::AsyncObjectPool::builder(Conns("redis:6379")).max_size(3).build().await?;
    /// assert_eq!(pool.manager(), &Conns("redis:6379"));
    /// # Ok::<(), sidejob::BuildError>(())
    /// # }).unwrap();
    /// ```
    pub fn manager(&self) -> &M {
        &self.shared.manager().0
    }
}

impl<M: AsyncManager> Drop for AsyncObjectPool<M> {
    fn drop(&mut self) {
        self.shared.maintenance().stop();
        self.shared.close_on_drop();
    }
}

impl<M: AsyncManager> fmt::Debug for AsyncObjectPool<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncObjectPool")
            .field("status", &self.status())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl<M: AsyncManager> crate::metered::Metered for AsyncObjectPool<M> {
    fn snapshot(&self) -> crate::metered::Snapshot {
        super::blocking::pool_snapshot(self.name(), &self.status(), &self.stats(), &self.rates())
    }
}
