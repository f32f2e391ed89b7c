//! A group take that waits: queued at every open member at once, and served
//! by whichever frees an object or a slot first (see `wait_queue.rs`'s
//! `# Protocol`).

use std::sync::Arc;
use std::time::Instant;

use super::owned_pooled::OwnedPooled;
use super::ObjectPool;
use crate::object_pool::engine::Counted;
use crate::object_pool::engine::PoolShared;
use crate::object_pool::engine::{Handoff, WaitCell};
use crate::object_pool::error::TakeError;
use crate::object_pool::manager::Manager;

/// Where the group's waiter is queued: each member's index and key.
type Queued = Vec<(usize, u64)>;

/// Waits until `deadline` for whichever of `pools` frees something first.
/// The caller found nothing free at any of them.
///
/// A wait is counted (with its time, and its timeout if it has one) at the
/// first member it queued at, in the order given.
pub(in crate::object_pool) fn wait_at_any<M: Manager>(
    pools: &[&Arc<ObjectPool<M>>],
    deadline: Option<Instant>,
) -> Result<OwnedPooled<M>, TakeError<M::Error>> {
    let started = Instant::now();
    let cell = WaitCell::new(deadline, pools.len());
    let (queued, refusal) = queue_everywhere(pools, &cell);
    let Some(&(first, _)) = queued.first() else {
        return Err(refusal);
    };
    // Look again now that every member would serve the cell: a member that
    // freed something before it was queued there is found here.
    for &(index, _) in &queued {
        let shared = &pools[index].shared;
        let home = shared.home();
        match shared.try_take(home, deadline) {
            Err(TakeError::Overload | TakeError::QueueFull | TakeError::Closed) => {}
            taken => {
                let taken = taken.map(|member| OwnedPooled::new(Arc::clone(shared), member, home));
                let handed = cell.leave();
                unqueue_everywhere(pools, &queued);
                if let Some((handoff, from)) = handed {
                    give_back(&pools[from].shared, handoff);
                }
                return taken;
            }
        }
    }
    let counted = &pools[first].shared;
    counted.group_wait_began();
    cell.wait();
    let handed = cell.leave();
    unqueue_everywhere(pools, &queued);
    counted.group_wait_ended(started.elapsed(), handed.is_none());
    match handed {
        Some((handoff, from)) => {
            let pool = pools[from];
            let shared = &pool.shared;
            let home = shared.home();
            shared
                .accept(handoff, deadline)
                .map(|member| OwnedPooled::new(Arc::clone(shared), member, home))
        }
        None => Err(TakeError::Timeout),
    }
}

/// Queues `cell` at every member that is open and has room in its queue.
/// With none, the refusal to answer: `Closed` if every member is closed,
/// else `QueueFull`.
fn queue_everywhere<M: Manager>(
    pools: &[&Arc<ObjectPool<M>>],
    cell: &Arc<WaitCell<M::Object>>,
) -> (Queued, TakeError<M::Error>) {
    let mut queued = Vec::with_capacity(pools.len());
    let mut all_closed = true;
    for (index, pool) in pools.iter().enumerate() {
        match pool.shared.queue_for_group(cell, index) {
            Ok(key) => {
                all_closed = false;
                queued.push((index, key));
            }
            Err(closed) => {
                all_closed &= closed;
                cell.count_out();
            }
        }
    }
    let refusal = if all_closed {
        TakeError::Closed
    } else {
        if queued.is_empty() {
            // Refused (no member had room to queue it): once, at the first.
            if let Some(pool) = pools.first() {
                pool.shared.count(Counted::Rejected);
            }
        }
        TakeError::QueueFull
    };
    (queued, refusal)
}

/// Takes the waiter out of every queue still holding it.
fn unqueue_everywhere<M: Manager>(pools: &[&Arc<ObjectPool<M>>], queued: &Queued) {
    for &(index, key) in queued {
        pools[index].shared.unqueue(key);
    }
}

/// Something handed to a waiter that no longer wants it (it found an object
/// itself): an object goes back as a return would, a slot is freed.
fn give_back<M: Manager>(shared: &Arc<PoolShared<M>>, handoff: Handoff<M::Object>) {
    match handoff {
        Handoff::Object(member) => {
            let home = member.home();
            drop(OwnedPooled::new(Arc::clone(shared), member, home));
        }
        Handoff::Slot(shard) => shared.free_slot(shard),
        Handoff::Closed | Handoff::QueueFull | Handoff::Expired => {}
    }
}
