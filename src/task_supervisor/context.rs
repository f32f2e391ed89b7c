//! [`TaskContext`]: what a task can ask about itself.

use std::future::Future;

use tokio_util::sync::CancellationToken;

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
#[derive(Debug, Clone)]
pub struct TaskContext {
    id: ChildId,
    token: CancellationToken,
}

impl TaskContext {
    pub(super) fn new(id: ChildId, token: CancellationToken) -> Self {
        TaskContext { id, token }
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
        self.token.is_cancelled()
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
        self.token.cancelled()
    }
}
