//! [`Anchor`]: what keeps a resource's counter alive for its owned permits,
//! one per shard.
//!
//! An owned permit must keep the counter it releases into alive after every
//! handle to the resource is gone. A clone of the resource's own `Arc` would
//! do, but its count is one word that every owned acquire and release in the
//! process writes: the one shared cache line that sharding exists to avoid
//! (52 ns per owned acquire and drop at 2 threads here, against 5.6 ns
//! borrowed; `docs/benchmarks.md`). So each shard has an anchor of its own,
//! an `Arc` holding one reference to the counter; an owned permit clones the
//! anchor of its thread's home shard, whose count sits on a cache line of its
//! own, written only by the threads whose home that shard is.
//!
//! The counter is freed once the resource and every anchor are gone, that
//! is, once the last owned permit is dropped: no `unsafe`, and no count that
//! all threads share.

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::admission::ShardedCounter;

/// A shard's anchor, shared by the owned permits of the threads whose home
/// it is. Padded, so that its reference count has a cache line to itself.
pub(super) type AnchorRef = Arc<CachePadded<Anchor>>;

/// One reference to a resource's counter.
#[derive(Debug)]
pub(super) struct Anchor {
    pub(super) counter: Arc<ShardedCounter>,
}

/// One anchor per shard of `counter`.
pub(super) fn anchors(counter: &Arc<ShardedCounter>) -> Box<[AnchorRef]> {
    (0..counter.shard_count())
        .map(|_| {
            Arc::new(CachePadded::new(Anchor {
                counter: Arc::clone(counter),
            }))
        })
        .collect()
}
