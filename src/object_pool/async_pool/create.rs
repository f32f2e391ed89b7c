//! Creating objects for the async face: `AsyncManager::create` awaited in a
//! slot taken first, bounded by `create_timeout` and the take's deadline.
//!
//! A creation's future is dropped before its slot moves on: when the take
//! awaiting it is dropped, or a bound passes, the future goes first, then
//! [`CreatingSlot`] frees the slot (to the oldest waiter first). So no more
//! than `max_size` objects exist or are being made at any instant.

use std::time::Instant;

use super::super::engine::PoolShared;
use super::super::engine::{Background, MemberBox};
use super::super::error::TakeError;
use super::manager::{AsyncManaged, AsyncManager};
use crate::object_pool::engine::Counted;

/// The slot of a creation in flight, freed if the creation does not
/// finish (dropped, timed out, panicked); counted in `creating` meanwhile.
struct CreatingSlot<'a, M: AsyncManager> {
    shared: &'a PoolShared<AsyncManaged<M>>,
    shard: usize,
    armed: bool,
}

impl<'a, M: AsyncManager> CreatingSlot<'a, M> {
    fn new(shared: &'a PoolShared<AsyncManaged<M>>, shard: usize) -> Self {
        shared.creating_started();
        CreatingSlot {
            shared,
            shard,
            armed: true,
        }
    }

    /// The creation finished: its result now owns the slot.
    fn finish(mut self) {
        self.armed = false;
    }
}

impl<M: AsyncManager> Drop for CreatingSlot<'_, M> {
    fn drop(&mut self) {
        let shared = self.shared;
        shared.creating_ended();
        if self.armed {
            if std::thread::panicking() {
                shared.count(Counted::CreateFailure);
            }
            shared.free_slot(self.shard);
        }
    }
}

impl<M: AsyncManager> PoolShared<AsyncManaged<M>> {
    /// Makes an object in `shard`'s slot (taken by the caller), bounded by
    /// the pool's `create_timeout` and `deadline` (the take's own):
    /// [`TakeError::CreateTimeout`] when the pool's bound passes first,
    /// [`TakeError::Timeout`] when the take's does. Either way, and when
    /// this future is dropped, the creation's future is dropped and the
    /// slot freed at once.
    pub(super) async fn create_async(
        &self,
        shard: usize,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let bound = self
            .config()
            .create_timeout
            .and_then(|timeout| Instant::now().checked_add(timeout));
        let limit = deadline.into_iter().chain(bound).min();
        let slot = CreatingSlot::new(self, shard);
        let made = {
            // Declared inside the slot's scope: dropped first.
            let create = self.manager().0.create();
            match limit {
                None => Some(create.await),
                Some(limit) => tokio::time::timeout_at(limit.into(), create).await.ok(),
            }
        };
        let Some(made) = made else {
            drop(slot);
            self.count(Counted::CreateFailure);
            self.count(Counted::CreateTimeout);
            return Err(
                if bound.is_some_and(|bound| deadline.is_none_or(|deadline| bound <= deadline)) {
                    TakeError::CreateTimeout
                } else {
                    self.count(Counted::Timeout);
                    TakeError::Timeout
                },
            );
        };
        slot.finish();
        self.born(shard, Ok(made))
    }

    /// [`create_async`](Self::create_async) for a taker, counting the take.
    pub(super) async fn create_for_async_taker(
        &self,
        shard: usize,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let made = self.create_async(shard, deadline).await;
        if made.is_ok() {
            self.count(Counted::DirectTake);
        }
        made
    }

    /// Makes one object in the background and keeps it, unless the pool
    /// is full or closed.
    pub(super) async fn create_idle_async(&self) -> Background {
        if self.is_closed() {
            return Background::NoRoom;
        }
        let Ok(shard) = self.admit_slot(self.home()) else {
            return Background::NoRoom;
        };
        match self.create_async(shard, None).await {
            Ok(idle) => {
                self.keep_made(idle);
                Background::Kept
            }
            Err(_) => Background::Failed,
        }
    }
}
