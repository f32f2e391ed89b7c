//! Why a call or cast failed: [`CallError`] and [`CastError`], each handing
//! back the request the pool never accepted.

use std::fmt;

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
#[non_exhaustive]
pub enum CallError<R> {
    /// Every mailbox was full. The request was not sent; here it is back.
    Overload(R),
    /// No reply came within the timeout. The request was sent: if its worker
    /// had not started it yet, it is skipped; if it had, it runs to the end
    /// and the reply is dropped. Its slot is released exactly once either way.
    Timeout,
    /// The handler panicked on this request. The worker was rebuilt (unless
    /// its shard went down: see [`ShardDown`](CallError::ShardDown)) and
    /// goes on with the rest of its mailbox.
    WorkerPanicked,
    /// The pool is shut down. The request was not sent, or was queued when
    /// no worker could be built to run it; here it is back.
    Closed(R),
    /// The shard the request was queued on went down for good (its worker
    /// panicked more often than [`max_restarts`] allows) before the request
    /// ran. It never ran; here it is back, for another try (the other
    /// shards still admit).
    ///
    /// [`max_restarts`]: crate::WorkerPoolBuilder::max_restarts
    ShardDown(R),
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
            CallError::Overload(request)
            | CallError::Closed(request)
            | CallError::ShardDown(request) => Some(request),
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
            CallError::ShardDown(_) => f.write_str("ShardDown(..)"),
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
            CallError::ShardDown(_) => "the shard went down before the call ran",
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
#[non_exhaustive]
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
