//! The error types shared by every face of the crate.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;

/// Every shard was full: the request was refused instead of queued.
///
/// This is the fail-fast answer of an overload guard. It carries no data, costs
/// nothing to create, and tells the caller to shed the work (answer "busy",
/// retry later, or degrade).
///
/// # Examples
///
/// ```
/// use sidejob::{Overload, Resource};
///
/// let gate = Resource::new(0); // a closed gate
/// assert_eq!(gate.try_acquire().unwrap_err(), Overload);
/// assert_eq!(Overload.to_string(), "overload: every shard is at its limit");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Overload;

impl fmt::Display for Overload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("overload: every shard is at its limit")
    }
}

impl std::error::Error for Overload {}

/// A builder was given a setting it cannot honour.
///
/// The error names the setting (as the builder method is called) and says why
/// the value was refused, so the message tells the user what to change.
///
/// # Examples
///
/// ```
/// use sidejob::Resource;
///
/// let err = Resource::builder().capacity(8).shards(0).build().unwrap_err();
/// assert_eq!(err.setting(), "shards");
/// assert_eq!(err.to_string(), "invalid setting `shards`: must be at least 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    setting: &'static str,
    reason: Cow<'static, str>,
}

impl BuildError {
    pub(crate) fn new(setting: &'static str, reason: impl Into<Cow<'static, str>>) -> Self {
        BuildError {
            setting,
            reason: reason.into(),
        }
    }

    /// The name of the refused setting, as the builder method that sets it.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Resource::builder().shards(4).build().unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// ```
    pub fn setting(&self) -> &'static str {
        self.setting
    }

    /// Why the setting was refused.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::Resource::builder().shards(4).build().unwrap_err();
    /// assert_eq!(err.reason(), "must be set");
    /// ```
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid setting `{}`: {}", self.setting, self.reason)
    }
}

impl std::error::Error for BuildError {}

/// Why a [`WorkerPool::call`](crate::WorkerPool::call) failed.
///
/// A request the pool never accepted comes back inside the error, so the
/// caller can retry it elsewhere or answer from it.
///
/// # Examples
///
/// ```
/// use sidejob::{CallError, Worker, WorkerPool};
///
/// struct Echo;
/// impl Worker for Echo {
///     type Request = String;
///     type Reply = String;
///     fn handle_call(&mut self, request: String) -> String {
///         request
///     }
/// }
///
/// let pool = WorkerPool::builder().capacity(1).build(|_| Echo)?;
/// pool.shutdown();
/// match pool.call("hello".to_string()) {
///     Err(CallError::Closed(request)) => assert_eq!(request, "hello"),
///     other => panic!("unexpected {other:?}"),
/// }
/// # Ok::<(), sidejob::BuildError>(())
/// ```
pub enum CallError<R> {
    /// Every mailbox was full. The request was not sent; here it is back.
    Overload(R),
    /// No reply came within the timeout. The request was sent: if its worker
    /// had not started it yet, it is skipped; if it had, it runs to the end
    /// and the reply is dropped. Its slot is released exactly once either way.
    Timeout,
    /// The handler panicked on this request. The worker was rebuilt and goes
    /// on with the rest of its mailbox.
    WorkerPanicked,
    /// The pool is shut down. The request was not sent; here it is back.
    Closed(R),
}

impl<R> CallError<R> {
    /// The request, if the pool never accepted it.
    ///
    /// # Examples
    ///
    /// ```
    /// let err: sidejob::CallError<u32> = sidejob::CallError::Overload(7);
    /// assert_eq!(err.into_request(), Some(7));
    /// ```
    pub fn into_request(self) -> Option<R> {
        match self {
            CallError::Overload(request) | CallError::Closed(request) => Some(request),
            CallError::Timeout | CallError::WorkerPanicked => None,
        }
    }

    /// Whether the call was refused because every mailbox was full.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(sidejob::CallError::Overload(()).is_overload());
    /// ```
    pub fn is_overload(&self) -> bool {
        matches!(self, CallError::Overload(_))
    }
}

impl<R> fmt::Debug for CallError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Overload(_) => f.write_str("Overload(..)"),
            CallError::Timeout => f.write_str("Timeout"),
            CallError::WorkerPanicked => f.write_str("WorkerPanicked"),
            CallError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<R> fmt::Display for CallError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallError::Overload(_) => "overload: every mailbox is full",
            CallError::Timeout => "call timed out waiting for its reply",
            CallError::WorkerPanicked => "worker panicked while handling the call",
            CallError::Closed(_) => "worker pool is shut down",
        })
    }
}

impl<R> std::error::Error for CallError<R> {}

/// Why a [`WorkerPool::cast`](crate::WorkerPool::cast) was refused. The
/// request comes back inside the error.
///
/// # Examples
///
/// ```
/// let err = sidejob::CastError::Overload("job");
/// assert_eq!(err.to_string(), "overload: every mailbox is full");
/// assert_eq!(err.into_request(), "job");
/// ```
pub enum CastError<R> {
    /// Every mailbox was full.
    Overload(R),
    /// The pool is shut down.
    Closed(R),
}

impl<R> CastError<R> {
    /// The request that was not sent.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::CastError::Closed(3).into_request(), 3);
    /// ```
    pub fn into_request(self) -> R {
        match self {
            CastError::Overload(request) | CastError::Closed(request) => request,
        }
    }

    /// Whether the cast was refused because every mailbox was full.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!sidejob::CastError::Closed(()).is_overload());
    /// ```
    pub fn is_overload(&self) -> bool {
        matches!(self, CastError::Overload(_))
    }
}

impl<R> fmt::Debug for CastError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CastError::Overload(_) => f.write_str("Overload(..)"),
            CastError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<R> fmt::Display for CastError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CastError::Overload(_) => "overload: every mailbox is full",
            CastError::Closed(_) => "worker pool is shut down",
        })
    }
}

impl<R> std::error::Error for CastError<R> {}

/// Why [`Supervisor::spawn`](crate::Supervisor::spawn) did not start a
/// child. The closure comes back inside the error, so the caller can run it
/// elsewhere or drop it. Closures have no `Debug`, so this error's `Debug`
/// needs none.
///
/// # Examples
///
/// ```
/// use sidejob::{SpawnError, Supervisor};
///
/// let supervisor = Supervisor::new(0); // no room for any child
/// match supervisor.spawn(|_| 1 + 1) {
///     Err(SpawnError::Overload(_job)) => {} // run it later, or elsewhere
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
pub enum SpawnError<F> {
    /// Every shard was at its limit: the supervisor already runs as many
    /// children as its capacity allows.
    Overload(F),
    /// The supervisor is shut down.
    Closed(F),
    /// The OS refused to start the child's thread. Its slot was given back.
    Thread(std::io::Error, F),
}

impl<F> SpawnError<F> {
    /// The closure that was not started.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(0);
    /// let job = supervisor.spawn(|_| ()).unwrap_err().into_closure();
    /// # let _ = job;
    /// ```
    pub fn into_closure(self) -> F {
        match self {
            SpawnError::Overload(f) | SpawnError::Closed(f) | SpawnError::Thread(_, f) => f,
        }
    }

    /// Whether the spawn was refused because the supervisor was full.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(sidejob::Supervisor::new(0).spawn(|_| ()).unwrap_err().is_overload());
    /// ```
    pub fn is_overload(&self) -> bool {
        matches!(self, SpawnError::Overload(_))
    }
}

impl<F> fmt::Debug for SpawnError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::Overload(_) => f.write_str("Overload(..)"),
            SpawnError::Closed(_) => f.write_str("Closed(..)"),
            SpawnError::Thread(error, _) => f.debug_tuple("Thread").field(error).finish(),
        }
    }
}

impl<F> fmt::Display for SpawnError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::Overload(_) => f.write_str("overload: the supervisor is at capacity"),
            SpawnError::Closed(_) => f.write_str("supervisor is shut down"),
            SpawnError::Thread(error, _) => {
                write!(f, "could not start the child's thread: {error}")
            }
        }
    }
}

impl<F> std::error::Error for SpawnError<F> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Thread(error, _) => Some(error),
            _ => None,
        }
    }
}

/// Why an [`ObjectPool`](crate::ObjectPool) take failed.
///
/// `E` is the manager's [`Error`](crate::Manager::Error).
///
/// # Examples
///
/// ```
/// use sidejob::TakeError;
///
/// let err: TakeError<std::io::Error> = TakeError::QueueFull;
/// assert_eq!(err.to_string(), "too many takers are already waiting");
/// assert!(TakeError::<std::io::Error>::Overload.is_overload());
/// ```
#[derive(Debug)]
pub enum TakeError<E> {
    /// No object was idle and the pool was at `max_size`
    /// ([`try_take`](crate::ObjectPool::try_take) never waits).
    Overload,
    /// No object came free before the timeout.
    Timeout,
    /// `queue_max` takers were already waiting; this one did not join them.
    QueueFull,
    /// The pool made a new object for this taker, and the manager's
    /// [`create`](crate::Manager::create) failed. The slot was given back.
    Create(E),
    /// A tagged take ([`take_tagged`](crate::ObjectPool::take_tagged)) had to
    /// teach an object the tag, and the manager's
    /// [`tag`](crate::TaggedManager::tag) failed. The object was destroyed
    /// and its slot given back.
    Tag(E),
    /// The pool is closed.
    Closed,
}

impl<E> TakeError<E> {
    /// Whether the take was refused at once because the pool was full
    /// ([`Overload`](TakeError::Overload) or
    /// [`QueueFull`](TakeError::QueueFull)).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(sidejob::TakeError::<std::fmt::Error>::QueueFull.is_overload());
    /// assert!(!sidejob::TakeError::<std::fmt::Error>::Timeout.is_overload());
    /// ```
    pub fn is_overload(&self) -> bool {
        matches!(self, TakeError::Overload | TakeError::QueueFull)
    }
}

impl<E: fmt::Display> fmt::Display for TakeError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TakeError::Overload => {
                f.write_str("overload: no idle object and the pool is at its maximum size")
            }
            TakeError::Timeout => f.write_str("timed out waiting for an object"),
            TakeError::QueueFull => f.write_str("too many takers are already waiting"),
            TakeError::Create(error) => write!(f, "could not create an object: {error}"),
            TakeError::Tag(error) => write!(f, "could not tag an object: {error}"),
            TakeError::Closed => f.write_str("object pool is closed"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for TakeError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TakeError::Create(error) | TakeError::Tag(error) => Some(error),
            _ => None,
        }
    }
}

/// The text of a caught panic's payload, for error messages.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string panic payload")
}

/// [`PoolGroup::add_pool`](crate::PoolGroup::add_pool) found a member under
/// the same key; holds the key and the pool that were not added.
///
/// # Examples
///
/// ```
/// # struct Conns;
/// # impl sidejob::Manager for Conns {
/// #     type Object = u8;
/// #     type Error = std::io::Error;
/// #     fn create(&self) -> std::io::Result<u8> { Ok(0) }
/// # }
/// let group = sidejob::PoolGroup::new();
/// let build = || sidejob::ObjectPool::builder(Conns).max_size(1).build();
/// group.add_pool("a", build()?)?;
/// let refused = group.add_pool("a", build()?).unwrap_err();
/// assert_eq!(refused.to_string(), "a pool with this key is already in the group");
/// let (key, pool) = refused.into_inner(); // the pool is handed back
/// assert_eq!((key, pool.max_size()), ("a", 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DuplicatePool<K, M: crate::Manager> {
    key: K,
    pool: crate::ObjectPool<M>,
}

impl<K, M: crate::Manager> DuplicatePool<K, M> {
    pub(crate) fn new(key: K, pool: crate::ObjectPool<M>) -> Self {
        DuplicatePool { key, pool }
    }

    /// The key already in use.
    ///
    /// # Examples
    ///
    /// See [`DuplicatePool`].
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The key and the pool that were not added.
    ///
    /// # Examples
    ///
    /// See [`DuplicatePool`].
    pub fn into_inner(self) -> (K, crate::ObjectPool<M>) {
        (self.key, self.pool)
    }
}

impl<K: fmt::Debug, M: crate::Manager> fmt::Debug for DuplicatePool<K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DuplicatePool")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<K, M: crate::Manager> fmt::Display for DuplicatePool<K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a pool with this key is already in the group")
    }
}

impl<K: fmt::Debug, M: crate::Manager> std::error::Error for DuplicatePool<K, M> {}
