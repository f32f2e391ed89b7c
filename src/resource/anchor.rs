//! [`Anchor`]: what keeps a resource's counter alive for its owned permits,
//! one per shard.
//!
//! An owned permit must keep the counter it releases into alive after every
//! handle to the resource is gone. A clone of the resource's own `Arc` would
//! do, but its count is one word that every owned acquire and release in the
//! process writes: the one shared cache line that sharding exists to avoid
//! (52 ns per owned acquire and drop at 2 threads here, against 5.6 ns
//! borrowed; `docs/benchmarks/history.md`). So each shard has an anchor of its own,
//! an `Arc` holding one reference to the counter; an owned permit clones the
//! anchor of its thread's home shard, whose count sits on a cache line of its
//! own, written only by the threads whose home that shard is.
//!
//! The counter is freed once the resource and every anchor are gone, that
//! is, once the last owned permit is dropped: no `unsafe`, and no count that
//! all threads share.
//!
//! # The per-thread stash
//!
//! Even an uncontended reference count costs a locked increment on acquire
//! and a locked decrement on drop, which made an owned permit 1.6x a
//! borrowed one. So a dropped permit's reference is not given back: the
//! dropping thread keeps it in a thread-local slot, and its next owned
//! acquire of the same anchor takes it from there instead of cloning. A
//! thread that acquires and drops (a request handled where it arrived) then
//! touches no reference count at all. The slot holds one reference, the
//! latest: a thread keeps at most one counter alive past its resource's
//! last handle, until it drops a permit of another resource or exits.

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::adaptive::Governor;
use crate::admission::ShardedCounter;

/// A shard's anchor, shared by the owned permits of the threads whose home
/// it is. Padded, so that its reference count has a cache line to itself.
pub(super) type AnchorRef = Arc<CachePadded<Anchor>>;

/// One reference to a resource's counter.
#[derive(Debug)]
pub(super) struct Anchor {
    pub(super) counter: Arc<ShardedCounter>,
    /// The resource's adaptive limit, if it has one.
    pub(super) governor: Option<Arc<Governor>>,
}

/// One anchor per shard of `counter`.
pub(super) fn anchors(
    counter: &Arc<ShardedCounter>,
    governor: Option<&Arc<Governor>>,
) -> Box<[AnchorRef]> {
    (0..counter.shard_count())
        .map(|_| {
            Arc::new(CachePadded::new(Anchor {
                counter: Arc::clone(counter),
                governor: governor.cloned(),
            }))
        })
        .collect()
}

#[cfg(not(sidejob_loom))]
std::thread_local! {
    /// The anchor reference of the owned permit this thread dropped last,
    /// kept for its next owned acquire.
    static STASH: std::cell::Cell<Option<AnchorRef>> = const { std::cell::Cell::new(None) };
}

#[cfg(sidejob_loom)]
loom::thread_local! {
    static STASH: std::cell::Cell<Option<AnchorRef>> = std::cell::Cell::new(None);
}

/// A reference to `anchor` for a new owned permit: the one this thread
/// kept, if it is `anchor`'s, else a clone.
#[inline]
pub(super) fn reference(anchor: &AnchorRef) -> AnchorRef {
    STASH
        .try_with(|stash| match stash.take() {
            Some(kept) if Arc::ptr_eq(&kept, anchor) => kept,
            other => {
                stash.set(other);
                Arc::clone(anchor)
            }
        })
        .unwrap_or_else(|_| Arc::clone(anchor))
}

/// Keeps a dropped permit's reference for this thread's next owned
/// acquire, in place of the one kept before.
#[inline]
pub(super) fn keep(anchor: AnchorRef) {
    let _ = STASH.try_with(|stash| stash.replace(Some(anchor)));
}
