//! [`Manager`]: how an [`ObjectPool`](crate::ObjectPool) makes, checks and
//! destroys its objects.

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
