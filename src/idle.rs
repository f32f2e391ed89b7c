//! Idle objects: one LIFO stack per shard.
//!
//! An object lives on the stack of the shard whose slot counts it, so a
//! return needs no lookup: it goes back on top of its own stack. A taker pops
//! its home stack first, so the object a thread reuses is the one its shard
//! saw returned last, the warmest one, as in pidq/pooler. Each stack has its
//! own spin lock (a plain store to unlock) on its own cache line, so threads
//! on different home shards never touch the same line on the fast path. The
//! bottom of a stack holds its longest-idle objects, where the reaper looks.
//!
//! Each object lives in a [`Member`] box, made once with the object and kept
//! until it is destroyed, together with what the pool knows about it. A take
//! and a return move only the box's pointer, so the pool's bookkeeping costs
//! the fast path nothing however much of it there is.

use crossbeam_utils::CachePadded;

use crate::sync::SpinLock;
use crate::tag_index::AnyTag;

/// An object of the pool and what the pool knows about it.
pub(crate) struct Member<O> {
    /// The object itself.
    pub(crate) object: O,
    /// The resource shard whose slot counts this object in `size`.
    pub(crate) slot: usize,
    /// The pool's generation when the object was made (see `retire_all`).
    pub(crate) generation: u64,
    /// When its lifetime runs out, in pool-clock nanoseconds;
    /// [`Member::NEVER`] for no lifetime.
    pub(crate) expires: u64,
    /// When it was last returned, in coarse pool-clock nanoseconds.
    pub(crate) idle_since: u64,
    /// Its tag, once a tagged take taught it one; tagged objects idle on
    /// the tag shelf (`tag_index.rs`) instead of a stack.
    pub(crate) tag: Option<AnyTag>,
    /// Whether it has a lifetime or a tag, so that its return needs more
    /// than the gate's check: one flag for the fast path to test.
    pub(crate) special: bool,
}

impl<O> Member<O> {
    /// No expiry.
    pub(crate) const NEVER: u64 = u64::MAX;

    /// A new object's member, counted by `slot`.
    pub(crate) fn boxed(object: O, slot: usize, generation: u64, expires: u64) -> Idle<O> {
        Box::new(CachePadded::new(Member {
            object,
            slot,
            generation,
            expires,
            idle_since: 0,
            tag: None,
            special: expires != Self::NEVER,
        }))
    }

    /// Whether the object has a lifetime at all (most have none, and skip
    /// reading the clock).
    #[inline]
    pub(crate) fn may_expire(&self) -> bool {
        self.expires != Self::NEVER
    }

    /// Gives the object its tag.
    pub(crate) fn set_tag(&mut self, tag: AnyTag) {
        self.tag = Some(tag);
        self.special = true;
    }
}

impl<O> std::fmt::Debug for Member<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("slot", &self.slot)
            .field("generation", &self.generation)
            .field("tagged", &self.tag.is_some())
            .finish_non_exhaustive()
    }
}

/// An object that exists in the pool, boxed with its bookkeeping. The box
/// has cache lines of its own: a return writes it, and two threads' boxes
/// side by side would otherwise share a line.
pub(crate) type Idle<O> = Box<CachePadded<Member<O>>>;

/// One shard's stack of idle objects and its share of the take counter,
/// which costs nothing to keep under the lock the pop already holds.
#[derive(Debug)]
pub(crate) struct IdleStack<O> {
    /// Idle objects, the most recently returned on top. Their slots are on
    /// this stack's shard.
    pub(crate) members: Vec<Idle<O>>,
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
                members: Vec::new(),
                takes: 0,
            }))
        })
        .collect()
}
