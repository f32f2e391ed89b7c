//! A [`Supervisor`](crate::Supervisor)'s child as the child sees it: its id
//! and the context it runs with, and the state it shares with its handle.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::children::ChildId;
use crate::sync::{AtomicBool, Ordering};

use super::shared::Shared;

/// What a child, its handle and its supervisor share: how far it got.
/// Whether it was asked to stop is its generation's, in the live set's
/// cancellation.
#[derive(Debug)]
pub(super) struct ChildState {
    pub(super) finished: AtomicBool,
    /// Its thread started: set by `spawn` once the OS started it, so
    /// `which_children` lists it from then on; a child whose thread the OS
    /// refused never shows.
    pub(super) started: AtomicBool,
    /// The OS refused its thread: it never ran, so a shutdown that asked
    /// it to stop does not count it as cancelled.
    pub(super) refused: AtomicBool,
}

impl ChildState {
    pub(super) fn new() -> Self {
        ChildState {
            finished: AtomicBool::new(false),
            started: AtomicBool::new(false),
            refused: AtomicBool::new(false),
        }
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
pub struct ChildContext {
    id: ChildId,
    /// The cancellation generation the child was admitted in.
    generation: u64,
    shared: Arc<Shared>,
}

impl ChildContext {
    pub(super) fn new(id: ChildId, generation: u64, shared: Arc<Shared>) -> Self {
        ChildContext {
            id,
            generation,
            shared,
        }
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
        self.shared
            .live
            .cancellation()
            .is_cancelled(self.generation)
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
        self.shared
            .live
            .cancellation()
            .wait_cancelled(self.generation, timeout)
    }
}

impl fmt::Debug for ChildContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildContext")
            .field("id", &self.id)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
