//! Idle objects: one LIFO stack per shard.
//!
//! A returned object goes on top of the returning thread's home stack and a
//! taker pops its home stack first, so the object a thread reuses is the one
//! it (or its shard's neighbours) returned last, the warmest one, as in
//! pidq/pooler. Each stack has its own lock on its own cache line, so threads
//! on different home shards never touch the same line on the fast path.

use crossbeam_utils::CachePadded;

use crate::sync::Mutex;

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
    /// Idle objects, the most recently returned on top.
    pub(crate) objects: Vec<Idle<O>>,
    /// Takes served from this stack.
    pub(crate) takes: u64,
}

/// Every shard's stack, each on its own cache line.
pub(crate) type IdleStacks<O> = Box<[CachePadded<Mutex<IdleStack<O>>>]>;

/// `shards` empty stacks.
pub(crate) fn idle_stacks<O>(shards: usize) -> IdleStacks<O> {
    (0..shards)
        .map(|_| {
            CachePadded::new(Mutex::new(IdleStack {
                objects: Vec::new(),
                takes: 0,
            }))
        })
        .collect()
}
