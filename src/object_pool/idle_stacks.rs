//! Idle objects: one LIFO stack per shard.
//!
//! An object lives on the stack of the shard whose slot counts it, so a
//! return needs no lookup: it goes back on top of its own stack. A taker pops
//! its home stack first, so the object a thread reuses is the one its shard
//! saw returned last, the warmest one, as in pidq/pooler. Each stack has its
//! own spin lock (a plain store to unlock) on its own cache line, so threads
//! on different home shards never touch the same line on the fast path. The
//! bottom of a stack holds its longest-idle objects, where the reaper looks.

use crossbeam_utils::CachePadded;

use crate::sync::SpinLock;

use super::member::MemberBox;

/// One shard's stack of idle objects and its share of the take counter,
/// which costs nothing to keep under the lock the pop already holds.
#[derive(Debug)]
pub(super) struct IdleStack<O> {
    /// Idle objects, the most recently returned on top. Their slots are on
    /// this stack's shard.
    pub(super) members: Vec<MemberBox<O>>,
    /// Takes served from this stack.
    pub(super) takes: u64,
}

/// Every shard's stack, each on its own cache line.
pub(super) type IdleStacks<O> = Box<[CachePadded<SpinLock<IdleStack<O>>>]>;

/// `shards` empty stacks.
pub(super) fn idle_stacks<O>(shards: usize) -> IdleStacks<O> {
    (0..shards)
        .map(|_| {
            CachePadded::new(SpinLock::new(IdleStack {
                members: Vec::new(),
                takes: 0,
            }))
        })
        .collect()
}
