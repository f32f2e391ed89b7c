//! The blocking face's [`ObjectPoolBuilder::build`]: the pool, its
//! maintainer started if its configuration needs one (the async face's is
//! `async_pool/build.rs`).

use crate::error::BuildError;
use crate::object_pool::builder::ObjectPoolBuilder;
use crate::object_pool::manager::Manager;

use super::ObjectPool;

impl<M: Manager> ObjectPoolBuilder<M> {
    /// Builds the pool, making `init_size` objects first.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting when `max_size` is unset or 0,
    /// `init_size`, `min_idle` or `soft_limit` is above `max_size`, a timer
    /// is zero, `lifetime_jitter` is not smaller than `max_lifetime`,
    /// `shards` is 0 or above [`MAX_SHARDS`](crate::MAX_SHARDS), `name`
    /// holds a NUL byte, or the maintainer thread could not be started
    /// (named `name`).
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
    /// let err = sidejob::ObjectPool::builder(Conns).max_size(2).init_size(3).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid setting `init_size`: 3 is above `max_size` (2)");
    /// ```
    pub fn build(self) -> Result<ObjectPool<M>, BuildError> {
        ObjectPool::start(self.validated()?.engine())
    }
}
