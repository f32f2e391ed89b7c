//! The pool's lifecycle: its maintainer thread, run-time reconfiguration,
//! retiring every object, and what dropping the pool does.

use std::sync::Arc;

use crate::error::BuildError;
use crate::sync::{is_current, lock, spawn_named};

use super::ObjectPool;
use crate::object_pool::config::PoolConfig;
use crate::object_pool::manager::Manager;

impl<M: Manager> ObjectPool<M> {
    /// Starts the maintainer thread unless it runs already, and waits until
    /// it has made `init_size` objects.
    pub(in crate::object_pool) fn start_maintainer(
        &self,
        init_size: usize,
    ) -> Result<(), BuildError> {
        let mut maintainer = lock(&self.maintainer);
        if maintainer.is_some() {
            return Ok(());
        }
        let (started, init_done) = std::sync::mpsc::sync_channel::<()>(0);
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
        PoolConfig::clone(&self.shared.config())
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
    ///   [`TakeError::QueueFull`](crate::TakeError::QueueFull).
    /// * `min_idle`, `soft_limit`, `idle_timeout` and `max_lifetime` take
    ///   effect at the maintainer's next round, which is started now (and
    ///   its thread too, if none ran). A new `max_lifetime` applies to
    ///   objects made from now on.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting, for the combinations
    /// [`ObjectPoolBuilder::build`](crate::ObjectPoolBuilder::build) refuses, or if the maintainer thread was
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
        self.shared
            .reconfigure(change, |new| match new.needs_maintainer() {
                true => self.start_maintainer(0),
                false => Ok(()),
            })
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
        self.shared.retire_all();
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
        self.shared.stale_count()
    }
}

impl<M: Manager> Drop for ObjectPool<M> {
    fn drop(&mut self) {
        self.shared.maintenance().stop();
        let maintainer = lock(&self.maintainer).take();
        if let Some(handle) = maintainer {
            if !is_current(&handle) {
                let _ = handle.join();
            }
        }
        self.shared.close_on_drop();
    }
}
