//! A [`Supervisor`](crate::Supervisor)'s child as the child sees it: its id
//! and the context it runs with, and the state it shares with its handle.

use crate::children::ChildId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sync::{lock, wait_timeout, AtomicBool, Condvar, Mutex, Ordering};

/// What a child and its supervisor share: whether it was asked to stop.
#[derive(Debug)]
pub(super) struct ChildState {
    pub(super) cancelled: AtomicBool,
    pub(super) finished: AtomicBool,
    /// Its thread started: set by `spawn` once the OS started it, so
    /// `which_children` lists it from then on; a child whose thread the OS
    /// refused never shows.
    pub(super) started: AtomicBool,
    /// The OS refused its thread: it never ran, so a shutdown that asked
    /// it to stop does not count it as cancelled.
    pub(super) refused: AtomicBool,
    pub(super) lock: Mutex<()>,
    pub(super) wake: Condvar,
}

impl ChildState {
    pub(super) fn new() -> Self {
        ChildState {
            cancelled: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            started: AtomicBool::new(false),
            refused: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Asks the child to stop, and wakes it if it waits for that.
    pub(super) fn cancel(&self) {
        // Under the lock, so a child between its check and its wait cannot
        // miss the wake-up.
        let _guard = lock(&self.lock);
        self.cancelled.store(true, Ordering::Release);
        self.wake.notify_all();
    }

    pub(super) fn mark_finished(&self) {
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
    pub(super) fn new(id: ChildId, state: Arc<ChildState>) -> Self {
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
