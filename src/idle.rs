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

/// An object's generation (see `retire_all`) and expiry, kept only for
/// objects that need it: one made after a `retire_all`, or with a lifetime.
/// Every other object is of generation 0 and never expires, and carries
/// `None`, so an object in use stays its object plus two words, all of
/// which the fast path moves in whole words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    /// The pool's generation when the object was made.
    pub(crate) generation: u64,
    /// When its lifetime runs out, in pool-clock nanoseconds;
    /// [`Meta::NEVER`] for no lifetime.
    pub(crate) expires: u64,
}

impl Meta {
    /// No expiry.
    pub(crate) const NEVER: u64 = u64::MAX;

    /// The meta an object needs, if any.
    pub(crate) fn boxed(generation: u64, expires: u64) -> Option<Box<Meta>> {
        (generation != 0 || expires != Meta::NEVER).then(|| {
            Box::new(Meta {
                generation,
                expires,
            })
        })
    }
}

/// An object that exists in the pool, with the slot that counts it.
#[derive(Debug)]
pub(crate) struct Idle<O> {
    /// The object itself.
    pub(crate) object: O,
    /// The resource shard whose slot counts this object in `size`.
    pub(crate) slot: usize,
    /// Its generation and expiry, if not 0 and never.
    pub(crate) meta: Option<Box<Meta>>,
}

impl<O> Idle<O> {
    /// The pool's generation when the object was made.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.meta.as_ref().map_or(0, |meta| meta.generation)
    }

    /// When its lifetime runs out.
    #[inline]
    pub(crate) fn expires(&self) -> u64 {
        self.meta.as_ref().map_or(Meta::NEVER, |meta| meta.expires)
    }

    /// Whether the object has a lifetime at all (most have none, and skip
    /// reading the clock).
    #[inline]
    pub(crate) fn may_expire(&self) -> bool {
        self.expires() != Meta::NEVER
    }
}

/// One entry of a stack: the object, its meta, and when it was returned
/// (coarse pool-clock nanoseconds). Its slot is the stack's shard.
#[derive(Debug)]
pub(crate) struct Entry<O> {
    pub(crate) object: O,
    pub(crate) meta: Option<Box<Meta>>,
    pub(crate) idle_since: u64,
}

impl<O> Entry<O> {
    /// The entry as taken from shard `slot`'s stack.
    #[inline]
    pub(crate) fn into_idle(self, slot: usize) -> Idle<O> {
        Idle {
            object: self.object,
            slot,
            meta: self.meta,
        }
    }

    /// When its lifetime runs out.
    pub(crate) fn expires(&self) -> u64 {
        self.meta.as_ref().map_or(Meta::NEVER, |meta| meta.expires)
    }
}

/// One shard's stack of idle objects and its share of the take counter,
/// which costs nothing to keep under the lock the pop already holds.
#[derive(Debug)]
pub(crate) struct IdleStack<O> {
    /// Idle objects, the most recently returned on top. Their slots are on
    /// this stack's shard.
    pub(crate) entries: Vec<Entry<O>>,
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
                entries: Vec::new(),
                takes: 0,
            }))
        })
        .collect()
}
