//! Building an [`AsyncObjectPool`]: the settings checked as for the
//! blocking face, the `init_size` objects made at once, and the
//! maintenance task spawned on the runtime that builds it.

use std::sync::Arc;

use crate::error::BuildError;

use super::super::builder::ObjectPoolBuilder;
use super::super::engine::PoolShared;
use super::manager::{AsyncManaged, AsyncManager};
use super::AsyncObjectPool;

impl<M: AsyncManager> ObjectPoolBuilder<AsyncManaged<M>> {
    /// Builds the pool inside the current tokio runtime, making the
    /// `init_size` objects first (at once, each bounded by
    /// `create_timeout`; a failure is counted and does not stop the
    /// others), and starts its maintenance task on that runtime.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the setting, as for
    /// [`ObjectPoolBuilder::build`]; one naming `runtime` when called
    /// outside a tokio runtime.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future part way drops the pool being built, which
    /// closes it: the objects already made are destroyed.
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
    /// let outside = futures_lite_block_on(sidejob::AsyncObjectPool::builder(Conns).max_size(2).build());
    /// assert_eq!(outside.unwrap_err().setting(), "runtime");
    /// # fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    /// #     // A minimal executor that is not tokio's.
    /// #     use std::task::{Context, Poll, Waker};
    /// #     let mut future = std::pin::pin!(future);
    /// #     let mut cx = Context::from_waker(Waker::noop());
    /// #     loop { if let Poll::Ready(out) = future.as_mut().poll(&mut cx) { return out; } }
    /// # }
    /// ```
    pub async fn build(self) -> Result<AsyncObjectPool<M>, BuildError> {
        let runtime = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => Some(runtime),
            // Loom models run no runtime: their pools have no maintenance
            // and no `init_size`.
            Err(_) if cfg!(sidejob_loom) => None,
            Err(_) => return Err(BuildError::new(
                "runtime",
                "an AsyncObjectPool is built inside a tokio runtime, which runs its maintenance",
            )),
        };
        let engine = self.validated()?.engine();
        let (shared, init_size) = (engine.shared, engine.init_size);
        let pool = AsyncObjectPool {
            shared: Arc::clone(&shared),
            rates: engine.rates,
            name: engine.name,
        };
        let Some(runtime) = runtime else {
            return Ok(pool);
        };
        let initial: Vec<_> = (0..init_size)
            .map(|_| {
                let shared = Arc::clone(&shared);
                runtime.spawn(async move { shared.create_idle_async().await })
            })
            .collect();
        for creation in initial {
            // A failed or panicking creation is counted, not fatal.
            let _ = creation.await;
        }
        runtime.spawn(PoolShared::maintain_async(Arc::downgrade(&shared)));
        Ok(pool)
    }
}
