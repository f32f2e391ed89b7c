//! [`TaskHandle`]: a spawned task's id, its abort, and its output.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::task_error::TaskError;
use crate::children::ChildId;

/// A task spawned by [`TaskSupervisor::try_spawn`](super::TaskSupervisor::try_spawn):
/// a future of its output, or of why it gave none. Dropping the handle
/// detaches the task, which runs on and stays counted until it ends.
///
/// # Cancel safety
///
/// Dropping a handle (or the future awaiting it) never stops the task.
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let supervisor = sidejob::TaskSupervisor::new(1);
/// let handle = supervisor.try_spawn(|_| async { 6 * 7 }).unwrap();
/// assert_eq!(supervisor.which_children(), [handle.id()]);
/// assert_eq!(handle.await.unwrap(), 42);
/// # });
/// ```
#[must_use = "dropping a handle detaches its task"]
pub struct TaskHandle<T> {
    id: ChildId,
    /// `None` from the task: `shutdown` aborted it.
    join: tokio::task::JoinHandle<Option<T>>,
}

impl<T> TaskHandle<T> {
    pub(super) fn new(id: ChildId, join: tokio::task::JoinHandle<Option<T>>) -> Self {
        TaskHandle { id, join }
    }

    /// The task's id.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let handle = supervisor.try_spawn(|context| async move { context.id() }).unwrap();
    /// let id = handle.id();
    /// assert_eq!(handle.await.unwrap(), id);
    /// # });
    /// ```
    pub fn id(&self) -> ChildId {
        self.id
    }

    /// Whether the task has ended.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let handle = supervisor.try_spawn(|_| std::future::pending::<()>()).unwrap();
    /// assert!(!handle.is_finished());
    /// handle.abort();
    /// # });
    /// ```
    pub fn is_finished(&self) -> bool {
        self.join.is_finished()
    }

    /// Stops the task at its next `.await`: its future is dropped, which
    /// frees its slot (counted in `cancelled`), and the handle answers
    /// [`TaskError::is_aborted`].
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let handle = supervisor.try_spawn(|_| std::future::pending::<()>()).unwrap();
    /// handle.abort();
    /// assert!(handle.await.unwrap_err().is_aborted());
    /// assert_eq!(supervisor.count(), 0);
    /// # });
    /// ```
    pub fn abort(&self) {
        self.join.abort();
    }
}

impl<T> Future for TaskHandle<T> {
    type Output = Result<T, TaskError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.join)
            .poll(cx)
            .map(|joined| match joined {
                Ok(Some(output)) => Ok(output),
                Ok(None) => Err(TaskError::aborted()),
                Err(error) => Err(TaskError::from_join(error)),
            })
    }
}

impl<T> fmt::Debug for TaskHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}
