//! [`ObjectPoolBuilder`]: configures and builds an [`ObjectPool`].

use std::fmt;
use std::time::Duration;

use std::sync::Arc;

use crate::admission::Sizing;
use crate::error::BuildError;
use crate::rates::Rates;
use crate::sync::check_thread_name;

use super::config::{max_size_error, PoolConfig};
// For the docs' links: the builder is the vocabulary both faces share, and
// the blocking face builds with it (`blocking/build.rs`).
use super::engine::Hooks;
use super::engine::PoolShared;
#[cfg(doc)]
use super::{Manager, ObjectPool};
#[cfg(doc)]
use super::{ObjectPoolStats, DEFAULT_QUEUE_MAX};

/// Configures an [`ObjectPool`]; made by [`ObjectPool::builder`].
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
/// let err = sidejob::ObjectPool::builder(Conns).max_size(2).min_idle(3).build().unwrap_err();
/// assert_eq!(err.setting(), "min_idle");
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct ObjectPoolBuilder<M> {
    manager: M,
    /// Required, so apart from the configuration until it is set.
    max_size: Option<usize>,
    /// The other limits and timers, with their defaults
    /// ([`PoolConfig::new`]); `max_size` is filled in at `build`.
    config: PoolConfig,
    init_size: usize,
    shards: Option<usize>,
    name: String,
}

impl<M> fmt::Debug for ObjectPoolBuilder<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectPoolBuilder")
            .field("max_size", &self.max_size)
            .field("config", &self.config)
            .field("init_size", &self.init_size)
            .field("shards", &self.shards)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The settings, shared by both faces' builders.
impl<M> ObjectPoolBuilder<M> {
    /// A builder with every default, for [`ObjectPool::builder`].
    pub(super) fn new(manager: M) -> Self {
        ObjectPoolBuilder {
            manager,
            max_size: None,
            config: PoolConfig::new(0),
            init_size: 0,
            shards: None,
            name: "sidejob-pool".to_owned(),
        }
    }

    /// The most objects that exist at once: idle, in use and being made.
    /// Required, and at least 1.
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
    /// let err = sidejob::ObjectPool::builder(Conns).max_size(0).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid setting `max_size`: must be at least 1");
    /// ```
    pub fn max_size(mut self, max_size: usize) -> Self {
        self.max_size = Some(max_size);
        self
    }

    /// Objects made before [`build`](Self::build) returns (by the
    /// maintainer thread, which `build` waits for). Default 0; at most
    /// `max_size`. A failed creation is counted in
    /// [`ObjectPoolStats::create_failures`] and does not fail the build:
    /// the pool starts smaller and makes objects on demand.
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
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).init_size(3).build()?;
    /// assert_eq!(pool.status().idle, 3);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn init_size(mut self, init_size: usize) -> Self {
        self.init_size = init_size;
        self
    }

    /// Idle objects kept ready: whenever fewer are idle (or being made), the
    /// maintainer thread makes more, while the pool is below `max_size`.
    /// Default 0 (no background creation); at most `max_size`.
    ///
    /// A failed background creation (the backend is down) holds the next
    /// refill back: 10 ms after the first failure, doubling with jitter up
    /// to the maintenance interval (at least 1 s), reset by the first
    /// success. A backend that is down thus sees a few attempts a second
    /// from the pool, never a loop; takes still call `create` themselves.
    /// [`ObjectPoolStats::failed_refills`](crate::ObjectPoolStats::failed_refills)
    /// counts the failures.
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
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).min_idle(1).build()?;
    /// let taken = pool.try_take()?; // the background thread makes another
    /// # drop(taken);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn min_idle(mut self, min_idle: usize) -> Self {
        self.config.min_idle = min_idle;
        self
    }

    /// How many takers may wait at once; the next one gets
    /// [`TakeError::QueueFull`](crate::TakeError::QueueFull) at once.
    /// Default [`DEFAULT_QUEUE_MAX`]; 0 makes [`ObjectPool::take`] never
    /// wait.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(1).queue_max(0).build()?;
    /// let _held = pool.try_take()?;
    /// let refused = pool.take(Duration::from_secs(30)).unwrap_err();
    /// assert!(matches!(refused, sidejob::TakeError::QueueFull));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn queue_max(mut self, queue_max: usize) -> Self {
        self.config.queue_max = queue_max;
        self
    }

    /// The number of shards: idle stacks and slot shards. From 1 to
    /// [`MAX_SHARDS`](crate::MAX_SHARDS); default: the number of CPUs.
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
    /// let err = sidejob::ObjectPool::builder(Conns).max_size(4).shards(0).build().unwrap_err();
    /// assert_eq!(err.setting(), "shards");
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The maintainer thread's name. Default `sidejob-pool`; the thread is
    /// called `<name>-maintainer`.
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
    /// let pool = sidejob::ObjectPool::builder(Conns).max_size(4).min_idle(1).name("db").build()?;
    /// # drop(pool);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// Idle objects are reaped after [`idle_timeout`](Self::idle_timeout)
    /// only while the pool holds more than this many. Default: `max_size`
    /// (untagged objects are never reaped); at most `max_size`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns)
    ///     .max_size(16)
    ///     .soft_limit(4) // shrink back to 4 when load drops
    ///     .idle_timeout(Duration::from_secs(60))
    ///     .build()?;
    /// assert_eq!(pool.config().soft_limit, Some(4));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn soft_limit(mut self, soft_limit: usize) -> Self {
        self.config.soft_limit = Some(soft_limit);
        self
    }

    /// How long an object may idle before the maintainer reaps it (while
    /// the pool is above its soft limit, and never below `min_idle`).
    /// Default: never.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let err = sidejob::ObjectPool::builder(Conns)
    ///     .max_size(4)
    ///     .idle_timeout(Duration::ZERO)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "idle_timeout");
    /// ```
    pub fn idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.config.idle_timeout = Some(idle_timeout);
        self
    }

    /// How long an object lives from its creation. An expired object is
    /// never handed out: it is destroyed when found idle or when returned,
    /// and replaced if `min_idle` asks. Default: forever.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let pool = sidejob::ObjectPool::builder(Conns)
    ///     .max_size(4)
    ///     .max_lifetime(Duration::from_secs(30 * 60))
    ///     .lifetime_jitter(Duration::from_secs(60))
    ///     .build()?;
    /// # drop(pool);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn max_lifetime(mut self, max_lifetime: Duration) -> Self {
        self.config.max_lifetime = Some(max_lifetime);
        self
    }

    /// Shortens each object's lifetime by a random part of this, so that
    /// objects made together do not expire together. Must be smaller than
    /// [`max_lifetime`](Self::max_lifetime). Default: zero.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # struct Conns;
    /// # impl sidejob::Manager for Conns {
    /// #     type Object = u8;
    /// #     type Error = std::io::Error;
    /// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
    /// # }
    /// let err = sidejob::ObjectPool::builder(Conns)
    ///     .max_size(4)
    ///     .max_lifetime(Duration::from_secs(10))
    ///     .lifetime_jitter(Duration::from_secs(10))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.setting(), "lifetime_jitter");
    /// ```
    pub fn lifetime_jitter(mut self, lifetime_jitter: Duration) -> Self {
        self.config.lifetime_jitter = lifetime_jitter;
        self
    }

    /// Checks each object found idle with [`Manager::check`] before a take
    /// hands it out, as r2d2's `test_on_check_out` does: one that fails is
    /// destroyed, and the take goes on with the next idle object or a new
    /// one, so an object that died while idle is never handed out. New
    /// objects, and objects handed from a return straight to a waiter
    /// (checked on return), are not checked again. Default: off (a `check`
    /// per take is the price). See [`PoolConfig::check_on_take`].
    ///
    /// A take with a deadline ([`take`](crate::ObjectPool::take)) returns
    /// by it even when `check` hangs: the check then runs on a helper
    /// thread (a thread start per checked take, some microseconds), and
    /// one that has not answered by the deadline ends the take with
    /// [`TakeError::Timeout`](crate::TakeError::Timeout); its object is
    /// destroyed once the check returns, never handed out (its slot stays
    /// counted until then: the object still exists). `try_take` checks on
    /// the caller's thread. The async pool drops a late check's future and
    /// destroys the object at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    ///
    /// /// A connection that the server may close while it idles.
    /// struct Conn(Arc<AtomicBool>);
    /// struct Conns(Arc<AtomicBool>);
    /// impl sidejob::Manager for Conns {
    ///     type Object = Conn;
    ///     type Error = std::io::Error;
    ///     fn create(&self) -> std::io::Result<Conn> {
    ///         Ok(Conn(Arc::new(AtomicBool::new(true))))
    ///     }
    ///     fn check(&self, conn: &mut Conn) -> bool {
    ///         conn.0.load(Ordering::SeqCst) // still open?
    ///     }
    /// }
    ///
    /// let pool = sidejob::ObjectPool::builder(Conns(Arc::default()))
    ///     .max_size(1)
    ///     .check_on_take(true)
    ///     .build()?;
    /// let conn = pool.try_take()?;
    /// let open = Arc::clone(&conn.0);
    /// drop(conn); // idle now
    /// open.store(false, Ordering::SeqCst); // the server closes it
    /// let fresh = pool.try_take()?; // the dead one is destroyed, a new one made
    /// assert!(fresh.0.load(Ordering::SeqCst));
    /// assert_eq!(pool.stats().failed_take_checks, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_on_take(mut self, check: bool) -> Self {
        self.config.check_on_take = check;
        self
    }

    /// Bounds every creation (pooler's `member_start_timeout`): a take that
    /// makes an object, the `init_size` objects, `min_idle` refills and
    /// replenishment. A [`Manager::create`] still running after `timeout`
    /// fails its take with [`TakeError::CreateTimeout`](crate::TakeError::CreateTimeout); its slot stays
    /// counted until the call returns, and the object it finally makes is
    /// destroyed, which frees the slot. [`build`](Self::build) then never
    /// waits longer than `timeout` on a hung `create`.
    ///
    /// A bounded creation runs on a helper thread started for it (the
    /// caller waits on it with a deadline), which costs tens of
    /// microseconds per creation. Default: no creation timeout, and
    /// creations run on the calling thread, except those of
    /// [`ObjectPool::take`](crate::ObjectPool::take), whose own deadline
    /// holds either way. See [`PoolConfig::create_timeout`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// /// A server that never answers the connect.
    /// struct Silent;
    /// impl sidejob::Manager for Silent {
    ///     type Object = u8;
    ///     type Error = std::io::Error;
    ///     fn create(&self) -> std::io::Result<u8> {
    ///         std::thread::sleep(Duration::from_secs(3600));
    ///         Ok(0)
    ///     }
    /// }
    ///
    /// let pool = sidejob::ObjectPool::builder(Silent)
    ///     .max_size(2)
    ///     .create_timeout(Duration::from_millis(50))
    ///     .build()?;
    /// let err = pool.try_take().unwrap_err();
    /// assert!(matches!(err, sidejob::TakeError::CreateTimeout));
    /// assert_eq!(pool.status().size, 1); // the hung call still holds its slot
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_timeout(mut self, timeout: Duration) -> Self {
        self.config.create_timeout = Some(timeout);
        self
    }

    /// Every setting checked: the manager, the configuration, the shard
    /// count, `init_size` and the name, for either face's `build`.
    pub(super) fn validated(self) -> Result<Validated<M>, BuildError> {
        let mut config = self.config;
        config.max_size = self
            .max_size
            .ok_or_else(|| BuildError::new("max_size", "must be set"))?;
        config.validate()?;
        check_thread_name(&self.name)?;
        if self.init_size > config.max_size {
            return Err(BuildError::new(
                "init_size",
                format!(
                    "{} is above `max_size` ({})",
                    self.init_size, config.max_size
                ),
            ));
        }
        let sizing = Sizing {
            capacity: Some(config.max_size),
            shards: self.shards,
        };
        let (_, shards) = sizing.checked().map_err(max_size_error)?;
        Ok(Validated {
            manager: self.manager,
            config,
            shards,
            init_size: self.init_size,
            name: self.name,
        })
    }
}

/// A builder's settings, checked.
pub(super) struct Validated<M> {
    manager: M,
    config: PoolConfig,
    shards: usize,
    init_size: usize,
    name: String,
}

/// A new pool's engine and what its face keeps, for either face's `build`.
pub(super) struct Engine<M: Hooks> {
    /// Its rates, fed by the process's sampler; dropped before `shared`
    /// (see `crate::rates`).
    pub(super) rates: Arc<Rates>,
    pub(super) shared: Arc<PoolShared<M>>,
    pub(super) config: PoolConfig,
    pub(super) init_size: usize,
    pub(super) name: String,
}

impl<M: Hooks> Validated<M> {
    /// Makes the engine, sampled for its rates; no object yet.
    pub(super) fn engine(self) -> Engine<M> {
        let Validated {
            manager,
            config,
            shards,
            init_size,
            name,
        } = self;
        let shared = Arc::new_cyclic(|this| {
            PoolShared::new(manager, &config, shards, this.clone(), name.clone())
        });
        Engine {
            rates: Rates::start(&shared, PoolShared::sample),
            shared,
            config,
            init_size,
            name,
        }
    }
}
