//! Idle objects: one LIFO stack per shard.
//!
//! An object lives on the stack of the shard whose slot counts it, so a
//! stack entry is the object alone and a return needs no lookup: it goes back
//! on top of its own stack. A taker pops its home stack first, so the object
//! a thread reuses is the one its shard saw returned last, the warmest one,
//! as in pidq/pooler. Each stack has its own spin lock (a plain store to unlock) on its own
//! cache line, so threads
//! on different home shards never touch the same line on the fast path.

use crossbeam_utils::CachePadded;

use crate::sync::SpinLock;

/// An object that exists in the pool, with the slot that counts it.
#[derive(Debug)]
pub(crate) struct Idle<O> {
    /// The object itself.
    pub(crate) object: O,
    /// The resource shard whose slot counts this object in `size`.
    pub(crate) slot: usize,
}

/// One shard's stack of idle objects and its share of the take counter,
/// which costs nothing to keep under the lock the pop already holds.
#[derive(Debug)]
pub(crate) struct IdleStack<O> {
    /// Idle objects, the most recently returned on top. Their slots are on
    /// this stack's shard.
    pub(crate) objects: Vec<O>,
    /// Takes served from this stack.
    pub(crate) takes: u64,
}

/// Every shard's stack, each on its own cache line.
pub(crate) type IdleStacks<O> = Box<[CachePadded<SpinLock<IdleStack<O>>>]>;

/// `shards` empty stacks.
pub(crate) fn idle_stacks<O>(shards: usize) -> IdleStacks<O> {
    (0..shards)
        .map(|_| {
            CachePadded::new(SpinLock::new(IdleStack {
                objects: Vec::new(),
                takes: 0,
            }))
        })
        .collect()
}
