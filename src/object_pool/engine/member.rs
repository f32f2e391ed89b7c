//! Members: each object of a pool, boxed with what the pool knows about it.
//!
//! Each object lives in a [`Member`] box, made once with the object and kept
//! until it is destroyed, together with what the pool knows about it. A take
//! and a return move only the box's pointer, so the pool's bookkeeping costs
//! the fast path nothing however much of it there is.

use crossbeam_utils::CachePadded;

use std::any::Any;

/// An object's tag, as the pool stores it: the pool's type names only its
/// manager, not the tag type (see `tags/shelf.rs`).
pub(in crate::object_pool) type AnyTag = Box<dyn Any + Send + Sync>;

/// An object of the pool and what the pool knows about it.
pub(in crate::object_pool) struct Member<O> {
    /// The object itself.
    pub(super) object: O,
    /// The shard whose slot counts this object in `size`.
    pub(super) shard: usize,
    /// The home stack of the thread that took it last, set by the take:
    /// where its return puts it, so that the thread's next take finds it
    /// first. The box is the taker's own line, so the take writes it for
    /// free, and the return looks nothing up.
    pub(super) home: usize,
    /// The pool's generation when the object was made (see `retire_all`).
    pub(super) generation: u64,
    /// When its lifetime runs out, in pool-clock nanoseconds;
    /// [`Member::NEVER`] for no lifetime.
    pub(super) expires: u64,
    /// When it was last returned, in coarse pool-clock nanoseconds.
    pub(super) idle_since: u64,
    /// Its tag, once a tagged take taught it one; tagged objects idle on
    /// the tag shelf (`tags/shelf.rs`) instead of a stack.
    pub(super) tag: Option<AnyTag>,
    /// Whether it has a lifetime or a tag, so that its return needs more
    /// than the gate's check: one flag for the fast path to test.
    pub(super) special: bool,
}

impl<O> Member<O> {
    /// No expiry.
    pub(in crate::object_pool) const NEVER: u64 = u64::MAX;

    /// A new object's member, counted by a slot on `shard`.
    pub(in crate::object_pool) fn boxed(
        object: O,
        shard: usize,
        generation: u64,
        expires: u64,
    ) -> MemberBox<O> {
        Box::new(CachePadded::new(Member {
            object,
            shard,
            home: shard,
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
    pub(in crate::object_pool) fn may_expire(&self) -> bool {
        self.expires != Self::NEVER
    }

    /// The object itself.
    #[inline]
    pub(in crate::object_pool) fn object_mut(&mut self) -> &mut O {
        &mut self.object
    }

    /// The home stack its return goes to.
    #[inline]
    pub(in crate::object_pool) fn home(&self) -> usize {
        self.home
    }

    /// Sets its home stack: the taker's, written by the take on the
    /// taker's own line.
    #[inline]
    pub(in crate::object_pool) fn set_home(&mut self, home: usize) {
        self.home = home;
    }

    /// Gives the object its tag.
    pub(in crate::object_pool) fn set_tag(&mut self, tag: AnyTag) {
        self.tag = Some(tag);
        self.special = true;
    }
}

impl<O> std::fmt::Debug for Member<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("shard", &self.shard)
            .field("generation", &self.generation)
            .field("tagged", &self.tag.is_some())
            .finish_non_exhaustive()
    }
}

/// A member's box: an object that exists in the pool, idle or in use,
/// with its bookkeeping. The box has cache lines of its own: a return writes
/// it, and two threads' boxes side by side would otherwise share a line.
pub(in crate::object_pool) type MemberBox<O> = Box<CachePadded<Member<O>>>;
