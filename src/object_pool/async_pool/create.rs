//! Creating objects for the async face: `AsyncManager::create` awaited in a
//! slot taken first, bounded by `create_timeout` and the take's deadline.
//!
//! A creation's future is dropped before its slot moves on: when the take
//! awaiting it is dropped, or a bound passes, the future goes first, then
//! [`CreatingSlot`] frees the slot (to the oldest waiter first). So no more
//! than `max_size` objects exist or are being made at any instant.

use std::time::Instant;

use crate::sync::Ordering;

use super::super::engine::{bump, PoolShared};
use super::super::engine::{Background, MemberBox};
use super::super::error::TakeError;
use super::manager::{AsyncManaged, AsyncManager};

/// The slot of a creation in flight, freed if the creation does not
/// finish (dropped, timed out, panicked); counted in `creating` meanwhile.
struct CreatingSlot<'a, M: AsyncManager> {
    shared: &'a PoolShared<AsyncManaged<M>>,
    shard: usize,
    armed: bool,
}

impl<'a, M: AsyncManager> CreatingSlot<'a, M> {
    fn new(shared: &'a PoolShared<AsyncManaged<M>>, shard: usize) -> Self {
        shared.counters.creating.fetch_add(1, Ordering::Relaxed);
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
        shared.counters.creating.fetch_sub(1, Ordering::Relaxed);
        if self.armed {
            if std::thread::panicking() {
                bump(&shared.counters.create_failures);
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
            .config
            .load()
            .create_timeout
            .and_then(|timeout| Instant::now().checked_add(timeout));
        let limit = deadline.into_iter().chain(bound).min();
        let slot = CreatingSlot::new(self, shard);
        let made = {
            // Declared inside the slot's scope: dropped first.
            let create = self.manager.0.create();
            match limit {
                None => Some(create.await),
                Some(limit) => tokio::time::timeout_at(limit.into(), create).await.ok(),
            }
        };
        let Some(made) = made else {
            drop(slot);
            bump(&self.counters.create_failures);
            bump(&self.counters.create_timeouts);
            return Err(
                if bound.is_some_and(|bound| deadline.is_none_or(|deadline| bound <= deadline)) {
                    TakeError::CreateTimeout
                } else {
                    bump(&self.counters.timeouts);
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
            bump(&self.counters.direct_takes);
        }
        made
    }

    /// Makes one object in the background and keeps it, unless the pool
    /// is full or closed.
    pub(super) async fn create_idle_async(&self) -> Background {
        if self.gate.closed.load(Ordering::Relaxed) {
            return Background::NoRoom;
        }
        let Ok(shard) = self.slots.admit_from(self.home()) else {
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
