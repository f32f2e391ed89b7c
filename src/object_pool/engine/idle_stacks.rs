//! Idle objects: one LIFO stack per shard.
//!
//! A return pushes the object onto the home stack of the thread that took it
//! (the take writes the index it already has into the object's box, so
//! the return looks nothing up), and a take pops its home stack first, so the object a thread reuses is the one
//! it returned last, the warmest one, as pooler's free list does: LIFO as
//! each thread sees it, whichever shard's slot counts the object. Across
//! threads, each stack is LIFO over the returns of the threads that share
//! its home shard; a thread whose stack is empty takes the top of the next
//! stack in probe order. The maintainer puts the objects it makes on the
//! stack of their slot's shard, so they spread as their slots do.
//!
//! Each stack has its own spin lock (a plain store to unlock) on its own
//! cache line, so threads on different home shards never touch the same
//! line on the fast path, and a thread's objects stay on its own stack.
//! The bottom of a stack holds its longest-idle objects, where the reaper
//! looks.

use crossbeam_utils::CachePadded;

use crate::sync::SpinLock;

use super::member::MemberBox;

/// One shard's stack of idle objects and its share of the take counter,
/// which costs nothing to keep under the lock the pop already holds.
#[derive(Debug)]
pub(in crate::object_pool) struct IdleStack<O> {
    /// Idle objects, the most recently returned on top. Their slots are on
    /// this stack's shard.
    members: Vec<MemberBox<O>>,
    /// Takes served from this stack.
    takes: u64,
}

impl<O> IdleStack<O> {
    /// Puts `member` on top.
    #[inline]
    pub(super) fn push(&mut self, member: MemberBox<O>) {
        self.members.push(member);
    }

    /// The top, counted as a take from this stack.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<MemberBox<O>> {
        let member = self.members.pop()?;
        self.takes += 1;
        Some(member)
    }

    /// The bottom: the longest idle (not counted as a take).
    pub(super) fn take_bottom(&mut self) -> Option<MemberBox<O>> {
        (!self.members.is_empty()).then(|| self.members.remove(0))
    }

    /// Every idle object, bottom first, leaving the stack empty.
    pub(super) fn take_all(&mut self) -> Vec<MemberBox<O>> {
        std::mem::take(&mut self.members)
    }

    /// How many objects are idle here.
    pub(super) fn len(&self) -> usize {
        self.members.len()
    }

    /// Takes served from this stack.
    pub(super) fn takes(&self) -> u64 {
        self.takes
    }
}

/// Every shard's stack, each on its own cache line.
pub(in crate::object_pool) type IdleStacks<O> = Box<[CachePadded<SpinLock<IdleStack<O>>>]>;

/// `shards` empty stacks.
pub(in crate::object_pool) fn idle_stacks<O>(shards: usize) -> IdleStacks<O> {
    (0..shards)
        .map(|_| {
            CachePadded::new(SpinLock::new(IdleStack {
                members: Vec::new(),
                takes: 0,
            }))
        })
        .collect()
}
