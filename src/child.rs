//! The children of a [`Supervisor`](crate::Supervisor): their ids, the
//! handle the spawner keeps, and the context each child runs with.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sync::{lock, wait_timeout, AtomicBool, Condvar, JoinHandle, Mutex, Ordering};

/// Identifies a child of a [`Supervisor`](crate::Supervisor), unique for
/// the supervisor's lifetime.
///
/// Ids are handed out per shard with no shared counter, so they are unique
/// but not consecutive, and their order says nothing about spawn order
/// across shards.
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::new(4);
/// let a = supervisor.spawn(|_| ())?;
/// let b = supervisor.spawn(|_| ())?;
/// assert_ne!(a.id(), b.id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChildId(pub(crate) u64);

impl fmt::Display for ChildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "child-{}", self.0)
    }
}

/// What a child and its supervisor share: whether it was asked to stop.
#[derive(Debug)]
pub(crate) struct ChildState {
    cancelled: AtomicBool,
    finished: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

impl ChildState {
    pub(crate) fn new() -> Self {
        ChildState {
            cancelled: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Asks the child to stop, and wakes it if it waits for that.
    pub(crate) fn cancel(&self) {
        // Under the lock, so a child between its check and its wait cannot
        // miss the wake-up.
        let _guard = lock(&self.lock);
        self.cancelled.store(true, Ordering::Release);
        self.wake.notify_all();
    }

    pub(crate) fn mark_finished(&self) {
        self.finished.store(true, Ordering::Release);
    }
}

/// What a child can ask about itself while it runs: its id, and whether its
/// supervisor asked it to stop.
///
/// Cancellation is cooperative: a child that never looks keeps running, and
/// [`Supervisor::shutdown`](crate::Supervisor::shutdown) reports it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let supervisor = sidejob::Supervisor::new(1);
/// let child = supervisor.spawn(|context| {
///     let mut ticks = 0;
///     // Work in steps until asked to stop.
///     while !context.wait_cancelled(Duration::from_millis(1)) {
///         ticks += 1;
///     }
///     ticks
/// })?;
/// let report = supervisor.shutdown(Duration::from_secs(5));
/// assert!(report.remaining.is_empty()); // it stopped when asked
/// let _ticks_done = child.join()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ChildContext {
    id: ChildId,
    state: Arc<ChildState>,
}

impl ChildContext {
    pub(crate) fn new(id: ChildId, state: Arc<ChildState>) -> Self {
        ChildContext { id, state }
    }

    /// This child's id.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(1);
    /// let child = supervisor.spawn(|context| context.id())?;
    /// let id = child.id();
    /// assert_eq!(child.join()?, id);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> ChildId {
        self.id
    }

    /// Whether the supervisor asked this child to stop.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(1);
    /// let child = supervisor.spawn(|context| context.is_cancelled())?;
    /// assert!(!child.join()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::Acquire)
    }

    /// Sleeps until the supervisor asks this child to stop, or `timeout`
    /// passes; returns whether it was asked. A child with nothing to do can
    /// wait here instead of polling.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let supervisor = sidejob::Supervisor::new(1);
    /// let child = supervisor.spawn(|context| context.wait_cancelled(Duration::from_millis(1)))?;
    /// assert!(!child.join()?); // nobody asked: timed out
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_cancelled(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut guard = lock(&self.state.lock);
        loop {
            if self.is_cancelled() {
                return true;
            }
            let left = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return false,
                },
                None => Duration::from_secs(3600),
            };
            guard = wait_timeout(&self.state.wake, guard, left);
        }
    }
}

/// The child panicked; its panic was caught and counted, and the supervisor
/// carried on.
///
/// # Examples
///
/// ```
/// # std::panic::set_hook(Box::new(|_| {}));
/// let supervisor = sidejob::Supervisor::new(1);
/// let child = supervisor.spawn(|_| -> u32 { panic!("disk full") })?;
/// let err = child.join().unwrap_err();
/// assert_eq!(err.message(), "disk full");
/// assert_eq!(err.to_string(), "child panicked: disk full");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildPanicked {
    message: String,
}

impl ChildPanicked {
    pub(crate) fn new(message: String) -> Self {
        ChildPanicked { message }
    }

    /// The panic's message, or a note that its payload was not a string.
    ///
    /// # Examples
    ///
    /// ```
    /// # std::panic::set_hook(Box::new(|_| {}));
    /// let supervisor = sidejob::Supervisor::new(1);
    /// let child = supervisor.spawn(|_| std::panic::panic_any(42))?;
    /// assert_eq!(child.join().unwrap_err().message(), "a non-string panic payload");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ChildPanicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "child panicked: {}", self.message)
    }
}

impl std::error::Error for ChildPanicked {}

/// The spawner's handle on a child, from
/// [`Supervisor::spawn`](crate::Supervisor::spawn).
///
/// Dropping it detaches the child: it runs on, and the supervisor tracks it
/// until it ends.
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::new(2);
/// let child = supervisor.spawn(|_| 6 * 7)?;
/// assert_eq!(child.join()?, 42);
/// assert_eq!(supervisor.count(), 0); // gone from the live set before join returned
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ChildHandle<T> {
    id: ChildId,
    state: Arc<ChildState>,
    thread: JoinHandle<Result<T, ChildPanicked>>,
}

impl<T> ChildHandle<T> {
    pub(crate) fn new(
        id: ChildId,
        state: Arc<ChildState>,
        thread: JoinHandle<Result<T, ChildPanicked>>,
    ) -> Self {
        ChildHandle { id, state, thread }
    }

    /// The child's id.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(1);
    /// let child = supervisor.spawn(|_| ())?;
    /// assert_eq!(supervisor.which_children().len() <= 1, true);
    /// let _ = child.id();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> ChildId {
        self.id
    }

    /// Whether the child has ended: it has left the live set and freed its
    /// slot, and [`join`](Self::join) will not wait.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(1);
    /// let child = supervisor.spawn(|_| ())?;
    /// while !child.is_finished() {
    ///     std::thread::yield_now();
    /// }
    /// assert_eq!(supervisor.count(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_finished(&self) -> bool {
        self.state.finished.load(Ordering::Acquire)
    }

    /// Waits for the child to end and returns what it returned.
    ///
    /// # Errors
    ///
    /// [`ChildPanicked`], with the panic message, if the child panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(1);
    /// let child = supervisor.spawn(|_| "done")?;
    /// assert_eq!(child.join()?, "done");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(self) -> Result<T, ChildPanicked> {
        match self.thread.join() {
            Ok(outcome) => outcome,
            // The child's body runs under `catch_unwind`; only the thread's
            // own teardown could panic past it.
            Err(_) => Err(ChildPanicked::new("the child's thread panicked".to_owned())),
        }
    }
}

impl<T> fmt::Debug for ChildHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}
