//! [`Worker`]: the request handler a [`WorkerPool`](crate::WorkerPool) runs,
//! one per shard, each on its own thread.

/// A request handler owned by one shard of a [`WorkerPool`](crate::WorkerPool).
///
/// Each worker runs on its own thread and handles its mailbox one message at
/// a time, in the order the messages arrived, so it needs no locking of its
/// own state. The pool builds it with the factory given to
/// [`WorkerPoolBuilder::build`](crate::WorkerPoolBuilder::build), and builds a
/// fresh one the same way if a handler panics.
///
/// # Examples
///
/// ```
/// use sidejob::{Worker, WorkerPool};
///
/// /// Keeps a running total per shard.
/// struct Adder {
///     total: u64,
/// }
///
/// impl Worker for Adder {
///     type Request = u64;
///     type Reply = u64;
///
///     fn handle_call(&mut self, n: u64) -> u64 {
///         self.total += n;
///         self.total
///     }
/// }
///
/// let pool = WorkerPool::builder().capacity(8).shards(1).build(|_shard| Adder { total: 0 })?;
/// pool.cast(2)?; // handled by `handle_call`, reply discarded
/// assert_eq!(pool.call(3)?, 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Worker: Send + 'static {
    /// What callers send.
    type Request: Send + 'static;
    /// What [`handle_call`](Worker::handle_call) answers.
    type Reply: Send + 'static;

    /// Handles a request sent with [`WorkerPool::call`](crate::WorkerPool::call)
    /// and returns the reply for its caller.
    ///
    /// # Panics
    ///
    /// A panic is caught by the pool: the caller gets
    /// [`CallError::WorkerPanicked`](crate::CallError::WorkerPanicked), this
    /// worker is dropped and a new one is built, and the rest of the mailbox
    /// is handled by the new worker. The panic still goes through the
    /// process's panic hook first (which prints it by default); install one
    /// with [`std::panic::set_hook`] to change that.
    fn handle_call(&mut self, request: Self::Request) -> Self::Reply;

    /// Handles a request sent with [`WorkerPool::cast`](crate::WorkerPool::cast),
    /// which expects no reply. By default, calls
    /// [`handle_call`](Worker::handle_call) and drops the reply.
    ///
    /// # Panics
    ///
    /// Caught as for [`handle_call`](Worker::handle_call).
    fn handle_cast(&mut self, request: Self::Request) {
        let _ = self.handle_call(request);
    }

    /// Called every [`tick_interval`](crate::WorkerPoolBuilder::tick_interval)
    /// while the worker is idle for that long, for periodic housekeeping
    /// (flushing, expiring caches). Never called if no interval is set.
    /// By default, does nothing.
    fn tick(&mut self) {}

    /// Called once when the pool shuts down, after the worker has handled
    /// every message in its mailbox. Not called on a worker dropped after a
    /// panic, since its state is unknown. By default, does nothing.
    fn terminate(&mut self) {}
}
