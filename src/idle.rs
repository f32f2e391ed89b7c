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

/// An object's generation (see `retire_all`), expiry and idle time.
///
/// Boxed, once per object at its creation, so that an object in use is its
/// object plus two words (`Option<Idle<O>>` needs no tag: the box is never
/// null), which the fast path moves in registers; reading it on a return is
/// one load from a line the object's last return wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    /// The pool's generation when the object was made.
    pub(crate) generation: u64,
    /// When its lifetime runs out, in pool-clock nanoseconds;
    /// [`Meta::NEVER`] for no lifetime.
    pub(crate) expires: u64,
    /// When it was last returned (coarse pool-clock nanoseconds).
    pub(crate) idle_since: u64,
}

impl Meta {
    /// No expiry.
    pub(crate) const NEVER: u64 = u64::MAX;

    /// Whether the object has a lifetime at all (most have none, and skip
    /// reading the clock).
    #[inline]
    pub(crate) fn may_expire(&self) -> bool {
        self.expires != Meta::NEVER
    }
}

/// Whether an object has a lifetime, kept beside it so that the fast path
/// need not read its [`Meta`].
///
/// Its unused byte values also give `Result<Pooled, TakeError>` room for its
/// discriminant. Without them, `Option<Idle>` folds into the box pointer and
/// the result grows a separate tag byte; the benchmark's take then paid
/// store-forwarding stalls moving it, 30 ns instead of 8.5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Lifetime {
    /// The object never expires.
    Forever,
    /// The object expires at `Meta::expires`.
    Expires,
}

/// An object that exists in the pool, with the slot that counts it.
#[derive(Debug)]
pub(crate) struct Idle<O> {
    /// The object itself.
    pub(crate) object: O,
    /// Its generation, expiry and idle time.
    pub(crate) meta: Box<Meta>,
    /// The resource shard whose slot counts this object in `size` (below
    /// `MAX_SHARDS`, so 32 bits hold it and the lifetime shares its word).
    pub(crate) slot: u32,
    /// Whether it expires.
    pub(crate) lifetime: Lifetime,
}

impl<O> Idle<O> {
    /// Whether the object has a lifetime at all (most have none, and skip
    /// reading the clock).
    #[inline]
    pub(crate) fn may_expire(&self) -> bool {
        self.lifetime == Lifetime::Expires
    }
}

/// One entry of a stack: the object and its meta (its slot is the stack's
/// shard).
#[derive(Debug)]
pub(crate) struct Entry<O> {
    pub(crate) object: O,
    pub(crate) meta: Box<Meta>,
    pub(crate) lifetime: Lifetime,
}

impl<O> Entry<O> {
    /// The entry as taken from shard `slot`'s stack.
    #[inline]
    pub(crate) fn into_idle(self, slot: usize) -> Idle<O> {
        Idle {
            object: self.object,
            slot: slot as u32,
            meta: self.meta,
            lifetime: self.lifetime,
        }
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
