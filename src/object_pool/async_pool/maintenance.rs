//! The async face's maintenance: a task on the runtime that built the pool
//! reaps idle and expired objects and keeps `min_idle` objects ready, as
//! the blocking face's maintainer thread does, with the same wake signal.

use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Weak;
use std::task::Poll;
use std::time::Instant;

use super::super::engine::PoolShared;
use super::super::engine::{Refill, RefillBackoff, RefillFailed, Wake};
use super::manager::{AsyncManaged, AsyncManager};

impl<M: AsyncManager> PoolShared<AsyncManaged<M>> {
    /// The maintenance task's body: a round (reap, and refill unless held
    /// back by a failure), then sleep until nudged or the next round is
    /// due; ends when the pool is dropped. A panicking `create` or
    /// `destroy` ends its round, not the task. Every round yields to the
    /// runtime, and a failed refill sleeps out its backoff whatever nudges
    /// come, so no failure of the backend makes the task hog its thread.
    ///
    /// The task holds the pool's core only during a round (and for each
    /// poll of its sleep): a pool dropped with its objects while the task
    /// sleeps drops its manager on the dropping thread, not at the task's
    /// next poll, which may never come once its runtime stops being driven.
    pub(super) async fn maintain_async(core: Weak<Self>) {
        let mut backoff = RefillBackoff::default();
        loop {
            let Some(shared) = core.upgrade() else {
                return;
            };
            let _ = catch_unwind(AssertUnwindSafe(|| shared.reap()));
            if backoff.due(Instant::now()) {
                let refill = contain_panics(shared.refill_async())
                    .await
                    .unwrap_or(Err(RefillFailed));
                shared.after_refill(&mut backoff, refill);
            }
            let pause = shared.pause(&backoff);
            drop(shared);
            tokio::task::yield_now().await;
            let woken = poll_fn(|cx| match core.upgrade() {
                Some(shared) => shared.maintenance().poll_wake(cx, pause),
                None => Poll::Ready(Wake::Stop),
            });
            if let Ok(Wake::Stop) = tokio::time::timeout(pause.length(), woken).await {
                return;
            }
        }
    }

    /// The async face's refill: tops the idle objects up to `min_idle`,
    /// then replaces the untagged objects that tagged takes took, stopping
    /// at the first failure. Whether it made any object.
    async fn refill_async(&self) -> Refill {
        let mut made_any = false;
        while self.short_of_min_idle() && self.create_idle_async().await.go_on()? {
            made_any = true;
        }
        let wanted = self.take_replenish();
        for made in 1..=wanted {
            if !self.replenished(self.create_idle_async().await, wanted - made)? {
                break;
            }
            made_any = true;
        }
        Ok(made_any)
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
