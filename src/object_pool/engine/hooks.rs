//! [`Hooks`]: what the engine asks of a manager, whether it is a
//! [`Manager`] (the blocking face) or an async one
//! ([`AsyncManager`](crate::AsyncManager), through its adapter).
//!
//! The engine's idle stacks, slots, wait queue, sweeps and counts need only
//! these; creation differs between the faces (a call or a future) and is
//! done by each face in its own module.

use super::super::manager::{Manager, TaggedManager};
use super::super::tags::PoolTag;

/// What the engine calls on a manager.
pub(in crate::object_pool) trait Hooks: Send + Sync + 'static {
    /// The pooled object.
    type Object: Send + 'static;
    /// What a failed creation returns.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Whether `object` may be reused, asked on the calling thread: of a
    /// returned object, and of an idle one taken with `check_on_take`. An
    /// async manager's check cannot run here; its adapter answers `true`
    /// and its face runs the check itself.
    fn check_now(&self, object: &mut Self::Object) -> bool;

    /// Disposes of an object leaving the pool.
    fn destroy_object(&self, object: Self::Object);
}

impl<M: Manager> Hooks for M {
    type Object = M::Object;
    type Error = M::Error;

    #[inline]
    fn check_now(&self, object: &mut M::Object) -> bool {
        self.check(object)
    }

    fn destroy_object(&self, object: M::Object) {
        self.destroy(object);
    }
}

/// What the engine's tag shelf and tagged lookups need of a tagging
/// manager: its tag type. Teaching a tag differs between the faces.
pub(in crate::object_pool) trait TagHooks: Hooks {
    /// What an object learns.
    type Tag: PoolTag;
}

impl<M: TaggedManager> TagHooks for M {
    type Tag = M::Tag;
}
