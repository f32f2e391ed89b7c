//! The async face's maintenance: a task on the runtime that built the pool
//! reaps idle and expired objects and keeps `min_idle` objects ready, as
//! the blocking face's maintainer thread does, with the same wake signal.

use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use crate::sync::Ordering;

use super::super::maintainer::Wake;
use super::super::shared::PoolShared;
use super::manager::{AsyncManaged, AsyncManager};

impl<M: AsyncManager> PoolShared<AsyncManaged<M>> {
    /// The maintenance task's body: a round (reap, refill), then sleep
    /// until nudged or the interval passes; ends when the pool is dropped.
    /// A panicking `create` or `destroy` ends its round, not the task.
    pub(super) async fn maintain_async(self: Arc<Self>) {
        loop {
            let _ = contain_panics(async {
                self.reap();
                while self.short_of_min_idle() && self.create_idle_async().await {}
                // Replaces the untagged objects that tagged takes took.
                let wanted = self.counters.replenish.swap(0, Ordering::Relaxed);
                for _ in 0..wanted {
                    if !self.create_idle_async().await {
                        break;
                    }
                }
            })
            .await;
            let interval = self.config.load().maintenance_interval();
            let woken = poll_fn(|cx| self.maintenance.poll_wake(cx));
            if let Ok(Wake::Stop) = tokio::time::timeout(interval, woken).await {
                return;
            }
        }
    }
}

/// Runs `future`, ending it early, with `Err`, if a poll panics.
async fn contain_panics<F: Future>(future: F) -> Result<F::Output, ()> {
    let mut future = pin!(future);
    poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(())),
        },
    )
    .await
}
