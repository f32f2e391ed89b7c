//! [`Held`]: the member box a guard ([`Pooled`](super::Pooled),
//! [`OwnedPooled`](super::OwnedPooled), and the return path's unwind guard)
//! holds until it gives it back, fails it or detaches it.

use std::mem::ManuallyDrop;

use super::member::MemberBox;

/// A member box, held until taken out once.
///
/// Without drop glue (`ManuallyDrop<Option<_>>`): the guard's own `drop`
/// takes what is left, so the return path drops nothing else. One word, so
/// a guard is two and comes back from a take in registers.
pub(in crate::object_pool) struct Held<O> {
    member: ManuallyDrop<Option<MemberBox<O>>>,
}

impl<O> Held<O> {
    /// Holds `member`.
    #[inline]
    pub(in crate::object_pool) fn new(member: MemberBox<O>) -> Self {
        Held {
            member: ManuallyDrop::new(Some(member)),
        }
    }

    /// Takes the member out; `None` once it was taken.
    #[inline]
    pub(in crate::object_pool) fn take(&mut self) -> Option<MemberBox<O>> {
        self.member.take()
    }

    /// Takes the member out, for a guard that is ending.
    ///
    /// # Panics
    ///
    /// If it was taken already; a guard takes it only as it ends.
    #[inline]
    pub(in crate::object_pool) fn take_member(&mut self) -> MemberBox<O> {
        self.take().expect("a guard holds its object until it ends")
    }

    /// The member, while held.
    #[inline]
    pub(in crate::object_pool) fn member(&self) -> Option<&MemberBox<O>> {
        self.member.as_ref()
    }

    /// The member, mutably, while held.
    #[inline]
    pub(in crate::object_pool) fn member_mut(&mut self) -> Option<&mut MemberBox<O>> {
        self.member.as_mut()
    }

    /// The object.
    #[inline]
    pub(in crate::object_pool) fn object(&self) -> &O {
        &self
            .member
            .as_ref()
            .expect("a guard holds its object until it ends")
            .object
    }

    /// The object, mutably.
    #[inline]
    pub(in crate::object_pool) fn object_mut(&mut self) -> &mut O {
        &mut self
            .member
            .as_mut()
            .expect("a guard holds its object until it ends")
            .object
    }
}
