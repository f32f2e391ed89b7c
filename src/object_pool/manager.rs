//! [`Manager`]: how an [`ObjectPool`](crate::ObjectPool) makes, checks and
//! destroys its objects, and [`TaggedManager`]: how it tags them.

use super::tags::PoolTag;

/// Makes, checks and destroys the objects of an
/// [`ObjectPool`](crate::ObjectPool).
///
/// The pool calls these hooks on the taking or returning thread, or on its
/// maintainer thread for background creation (`init_size`, `min_idle`); never
/// under one of its locks, so a slow `create` holds up only its own caller.
/// A hook that panics never corrupts the pool's counts: the object's slot is
/// freed and the panic goes on to the caller.
///
/// # Examples
///
/// ```
/// use sidejob::{Manager, ObjectPool};
///
/// /// "Connections" that count how often they were used.
/// struct Connections;
///
/// impl Manager for Connections {
///     type Object = u32;
///     type Error = std::io::Error;
///
///     fn create(&self) -> Result<u32, std::io::Error> {
///         Ok(0)
///     }
///
///     fn check(&self, uses: &mut u32) -> bool {
///         *uses < 100 // retire a connection after 100 uses
///     }
/// }
///
/// let pool = ObjectPool::builder(Connections).max_size(4).build()?;
/// *pool.try_take()? += 1;
/// assert_eq!(*pool.try_take()?, 1); // the same object, reused
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Manager: Send + Sync + 'static {
    /// The pooled object: a connection, a process handle, a buffer.
    type Object: Send + 'static;

    /// Why [`create`](Manager::create) failed. Takers get it inside
    /// [`TakeError::Create`](crate::TakeError::Create).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Makes a new object. Called with a slot already taken, so the pool
    /// never holds more than `max_size` objects, counting those being made.
    ///
    /// # Errors
    ///
    /// Any error: the slot is given back (to the oldest waiter, if one
    /// waits, so that it can try in turn) and the taker gets the error.
    fn create(&self) -> Result<Self::Object, Self::Error>;

    /// Tells whether a returned object may be reused. `false` destroys it,
    /// frees its slot and serves the next waiter. Default: always reusable.
    fn check(&self, object: &mut Self::Object) -> bool {
        let _ = object;
        true
    }

    /// Disposes of an object the pool no longer keeps (it failed its check,
    /// its holder called [`Pooled::fail`](crate::Pooled::fail) or panicked,
    /// or the pool closed). Default: drops it.
    fn destroy(&self, object: Self::Object) {
        drop(object);
    }
}

/// A [`Manager`] whose objects can be tagged, for
/// [`ObjectPool::take_tagged`](crate::ObjectPool::take_tagged).
///
/// A tagged take that finds no idle object with the exact tag takes another
/// one (same group, else untagged, else new) and has it taught the tag with
/// [`tag`](Self::tag). The object keeps its tag while idle, so the next take
/// of that tag finds it again.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use sidejob::{Manager, ObjectPool, TaggedManager};
///
/// /// A "query server" that has loaded one design document.
/// #[derive(Default)]
/// struct QueryServer {
///     loaded: Option<String>,
/// }
///
/// struct QueryServers;
/// impl Manager for QueryServers {
///     type Object = QueryServer;
///     type Error = std::io::Error;
///     fn create(&self) -> std::io::Result<QueryServer> {
///         Ok(QueryServer::default())
///     }
/// }
/// impl TaggedManager for QueryServers {
///     type Tag = (String, String); // (database, design document)
///     fn tag(&self, server: &mut QueryServer, tag: &Self::Tag) -> std::io::Result<()> {
///         server.loaded = Some(tag.1.clone());
///         Ok(())
///     }
/// }
///
/// let pool = ObjectPool::builder(QueryServers).max_size(4).build()?;
/// let tag = ("db".to_owned(), "_design/a".to_owned());
/// let server = pool.take_tagged(&tag, Duration::from_secs(1))?;
/// assert_eq!(server.loaded.as_deref(), Some("_design/a"));
/// assert_eq!(server.tag(), Some(&tag));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait TaggedManager: Manager {
    /// What an object can be tagged with.
    type Tag: PoolTag;

    /// Teaches `object` the tag, for example by loading the design document
    /// it names. The default does nothing.
    ///
    /// # Errors
    ///
    /// An error destroys the object, and the take that asked for the tag
    /// fails with [`TakeError::Tag`](crate::TakeError::Tag).
    fn tag(&self, object: &mut Self::Object, tag: &Self::Tag) -> Result<(), Self::Error> {
        let _ = (object, tag);
        Ok(())
    }
}
