//! The async face's maintenance: a task on the runtime that built the pool
//! reaps idle and expired objects and keeps `min_idle` objects ready, as
//! the blocking face's maintainer thread does, with the same wake signal.

use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Weak;
use std::task::Poll;

use crate::sync::Ordering;

use super::super::engine::PoolShared;
use super::super::engine::Wake;
use super::manager::{AsyncManaged, AsyncManager};

impl<M: AsyncManager> PoolShared<AsyncManaged<M>> {
    /// The maintenance task's body: a round (reap, refill), then sleep
    /// until nudged or the interval passes; ends when the pool is dropped.
    /// A panicking `create` or `destroy` ends its round, not the task.
    ///
    /// The task holds the pool's core only during a round (and for each
    /// poll of its sleep): a pool dropped with its objects while the task
    /// sleeps drops its manager on the dropping thread, not at the task's
    /// next poll, which may never come once its runtime stops being driven.
    pub(super) async fn maintain_async(core: Weak<Self>) {
        loop {
            let Some(shared) = core.upgrade() else {
                return;
            };
            let _ = contain_panics(async {
                shared.reap();
                while shared.short_of_min_idle() && shared.create_idle_async().await {}
                // Replaces the untagged objects that tagged takes took.
                let wanted = shared.counters.replenish.swap(0, Ordering::Relaxed);
                for _ in 0..wanted {
                    if !shared.create_idle_async().await {
                        break;
                    }
                }
            })
            .await;
            let interval = shared.config.load().maintenance_interval();
            drop(shared);
            let woken = poll_fn(|cx| match core.upgrade() {
                Some(shared) => shared.maintenance.poll_wake(cx),
                None => Poll::Ready(Wake::Stop),
            });
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
