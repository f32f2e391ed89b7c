//! [`AsyncManager`]: how an [`AsyncObjectPool`](crate::AsyncObjectPool)
//! makes, checks and destroys its objects, and [`AsyncManaged`], the
//! adapter through which the shared engine sees one.

use std::future::Future;

use super::super::engine::{Hooks, TagHooks};
use super::super::tags::PoolTag;

/// Makes, checks and destroys the objects of an
/// [`AsyncObjectPool`](crate::AsyncObjectPool): the async counterpart of
/// [`Manager`](crate::Manager).
///
/// `create` and `check` are futures (a TCP connect, a ping); `destroy` is a
/// plain call, made wherever an object leaves the pool (a guard's drop
/// among them), so it must not block.
///
/// # Examples
///
/// ```
/// struct Counter;
///
/// impl sidejob::AsyncManager for Counter {
///     type Object = u64;
///     type Error = std::io::Error;
///
///     async fn create(&self) -> std::io::Result<u64> {
///         Ok(0)
///     }
///
///     async fn check(&self, object: &mut u64) -> bool {
///         *object < 100
///     }
/// }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub trait AsyncManager: Send + Sync + 'static {
    /// The pooled object.
    type Object: Send + 'static;
    /// What a failed creation returns.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Makes a new object. A take waits for it (bounded by the pool's
    /// `create_timeout` and the take's own deadline); if the take is
    /// dropped, or a bound passes, the future is dropped and its slot
    /// freed at once.
    fn create(&self) -> impl Future<Output = Result<Self::Object, Self::Error>> + Send;

    /// Whether an idle object still works; asked, with `check_on_take`, of
    /// an object taken from idle (never of one handed straight from a
    /// returner to a waiter). A broken one is destroyed and the take goes
    /// on. Default: `true`.
    fn check(&self, object: &mut Self::Object) -> impl Future<Output = bool> + Send {
        let _ = object;
        std::future::ready(true)
    }

    /// Disposes of an object leaving the pool. Default: drops it.
    fn destroy(&self, object: Self::Object) {
        drop(object);
    }
}

/// An [`AsyncManager`] as the pool's engine sees it; it appears only in
/// the builder's type ([`AsyncObjectPoolBuilder`](crate::AsyncObjectPoolBuilder)).
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::AsyncManager for Conns {
/// #     type Object = u8;
/// #     type Error = std::io::Error;
/// #     async fn create(&self) -> std::io::Result<u8> { Ok(0) }
/// # }
/// let builder: sidejob::AsyncObjectPoolBuilder<Conns> =
///     sidejob::AsyncObjectPool::builder(Conns).max_size(2);
/// # drop(builder);
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[derive(Debug)]
pub struct AsyncManaged<M>(pub(super) M);

impl<M: AsyncManager> Hooks for AsyncManaged<M> {
    type Object = M::Object;
    type Error = M::Error;

    /// The async check cannot run on a return path; the face runs it on
    /// take.
    #[inline]
    fn check_now(&self, _object: &mut M::Object) -> bool {
        true
    }

    fn destroy_object(&self, object: M::Object) {
        self.0.destroy(object);
    }
}

/// Teaches the objects of an [`AsyncObjectPool`](crate::AsyncObjectPool)
/// their tags, for
/// [`take_tagged`](crate::AsyncObjectPool::take_tagged): the async
/// counterpart of [`TaggedManager`](crate::TaggedManager).
///
/// # Examples
///
/// ```
/// struct Workers;
///
/// impl sidejob::AsyncManager for Workers {
///     type Object = Vec<String>; // what each worker has loaded
///     type Error = std::io::Error;
///     async fn create(&self) -> std::io::Result<Vec<String>> {
///         Ok(Vec::new())
///     }
/// }
///
/// impl sidejob::AsyncTaggedManager for Workers {
///     type Tag = (String, String); // (database, design document)
///     async fn tag(&self, loaded: &mut Vec<String>, tag: &Self::Tag) -> std::io::Result<()> {
///         loaded.push(format!("{}/{}", tag.0, tag.1));
///         Ok(())
///     }
/// }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub trait AsyncTaggedManager: AsyncManager {
    /// What an object learns, as [`TaggedManager::Tag`](crate::TaggedManager::Tag).
    type Tag: PoolTag;

    /// Teaches `object` the tag (loads a design document into a query
    /// server, selects a database on a connection). An error destroys the
    /// object and fails the take. Default: does nothing.
    fn tag(
        &self,
        object: &mut Self::Object,
        tag: &Self::Tag,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let _ = (object, tag);
        std::future::ready(Ok(()))
    }
}

impl<M: AsyncTaggedManager> TagHooks for AsyncManaged<M> {
    type Tag = M::Tag;
}
