//! [`ChildHandle`]: the spawner's handle on a child.

use std::fmt;
use std::sync::Arc;

use crate::sync::{JoinHandle, Ordering};

use super::child::ChildState;
use super::error::ChildPanicked;
use crate::children::ChildId;

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
    pub(super) fn new(
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
