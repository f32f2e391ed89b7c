//! [`TaskContext`]: what a task can ask about itself.

use std::fmt;
use std::future::Future;

use super::shared::Anchor;
use crate::children::ChildId;

/// What a [`TaskSupervisor`](super::TaskSupervisor)'s task can ask about
/// itself while it runs: its id, and whether its supervisor asked its
/// children to stop ([`cancel_all`](super::TaskSupervisor::cancel_all),
/// [`shutdown`](super::TaskSupervisor::shutdown)).
///
/// Cancellation is cooperative: a task that never looks runs on.
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let supervisor = sidejob::TaskSupervisor::new(1);
/// let task = supervisor.try_track(|context| async move {
///     context.cancelled().await; // until the supervisor cancels
///     context.is_cancelled()
/// }).unwrap();
/// supervisor.cancel_all();
/// assert!(task.await);
/// # });
/// ```
#[derive(Clone)]
pub struct TaskContext {
    id: ChildId,
    /// The cancellation generation the task was admitted in: it is
    /// cancelled once the supervisor's generation has moved past it. A
    /// number, not a clone of the generation's token, since cloning a
    /// `CancellationToken` locks its node, which every child shares.
    generation: u64,
    /// Its shard's anchor: the way to the supervisor.
    anchor: Anchor,
}

impl TaskContext {
    pub(super) fn new(id: ChildId, generation: u64, anchor: Anchor) -> Self {
        TaskContext {
            id,
            generation,
            anchor,
        }
    }

    /// The task's id, as [`which_children`](super::TaskSupervisor::which_children)
    /// lists it.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let task = supervisor.try_track(|context| async move { context.id() }).unwrap();
    /// assert_eq!(supervisor.which_children(), [task.id()]);
    /// ```
    pub fn id(&self) -> ChildId {
        self.id
    }

    /// Whether the supervisor asked this task to stop.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let task = supervisor.try_track(|context| async move { context.is_cancelled() }).unwrap();
    /// supervisor.cancel_all();
    /// assert!(task.await);
    /// # });
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.anchor
            .live
            .cancellation()
            .is_cancelled(self.generation)
    }

    /// A future that resolves once the supervisor asks this task to stop.
    ///
    /// # Cancel safety
    ///
    /// Dropping it loses nothing; a new one resolves just the same.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let task = supervisor.try_track(|context| async move {
    ///     context.cancelled().await;
    ///     "stopped"
    /// }).unwrap();
    /// supervisor.cancel_all();
    /// assert_eq!(task.await, "stopped");
    /// # });
    /// ```
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        let token = self.anchor.live.cancellation().token_for(self.generation);
        async move {
            if let Some(token) = token {
                token.cancelled_owned().await;
            }
        }
    }
}

impl fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskContext")
            .field("id", &self.id)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
