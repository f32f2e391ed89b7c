//! Spawning tracked tasks on a tokio runtime, and shutting down (feature
//! `tokio`).

use std::future::Future;
use std::time::Duration;

use super::abortable::Abortable;
use super::handle::TaskHandle;
use super::{TaskContext, TaskSupervisor};
use crate::children::{ShutdownReport, SpawnError};

impl TaskSupervisor {
    /// [`try_track`](Self::try_track), then spawns the task on the current
    /// tokio runtime.
    ///
    /// # Errors
    ///
    /// [`SpawnError::NoRuntime`] outside a tokio runtime (checked first:
    /// nothing is admitted, the closure is not called), then those of
    /// `try_track`. Never panics for want of a runtime.
    ///
    /// # Panics
    ///
    /// If `task` panics, after its slot is freed.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let handle = supervisor.try_spawn(|_| async { "ran" }).unwrap();
    /// assert!(supervisor.try_spawn(|_| async { "refused" }).unwrap_err().is_overload());
    /// assert_eq!(handle.await.unwrap(), "ran");
    /// # });
    /// let outside = sidejob::TaskSupervisor::new(1).try_spawn(|_| async {});
    /// assert!(matches!(outside, Err(sidejob::SpawnError::NoRuntime(_))));
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn try_spawn<F, Fut>(&self, task: F) -> Result<TaskHandle<Fut::Output>, SpawnError<F>>
    where
        F: FnOnce(TaskContext) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => self.try_spawn_on(&runtime, task),
            Err(_) => Err(SpawnError::NoRuntime(task)),
        }
    }

    /// [`try_spawn`](Self::try_spawn) on the runtime `runtime`.
    ///
    /// # Errors
    ///
    /// Those of [`try_track`](Self::try_track).
    ///
    /// # Panics
    ///
    /// If `task` panics, after its slot is freed.
    ///
    /// # Examples
    ///
    /// ```
    /// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let handle = supervisor.try_spawn_on(runtime.handle(), |_| async { 1 }).unwrap();
    /// assert_eq!(runtime.block_on(handle).unwrap(), 1);
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn try_spawn_on<F, Fut>(
        &self,
        runtime: &tokio::runtime::Handle,
        task: F,
    ) -> Result<TaskHandle<Fut::Output>, SpawnError<F>>
    where
        F: FnOnce(TaskContext) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let tracked = self.try_track(task)?;
        let id = tracked.id();
        Ok(TaskHandle::new(id, runtime.spawn(Abortable::new(tracked))))
    }

    /// Closes the supervisor, cancels every child, and waits up to `grace`
    /// for them to end; the spawned ones still running then are aborted.
    /// Returns as soon as every child has ended.
    ///
    /// The report counts the children asked to stop (`cancelled`) and lists
    /// those still alive when the grace ran out (`remaining`); tracked
    /// (not spawned) ones among them stay alive until their future ends or
    /// is dropped.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future part way leaves the supervisor closed and its
    /// children cancelled; nothing is aborted.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(2);
    /// let polite = supervisor.try_spawn(|context| async move { context.cancelled().await }).unwrap();
    /// let stubborn = supervisor.try_spawn(|_| std::future::pending::<()>()).unwrap();
    /// let report = supervisor.shutdown(Duration::from_millis(50)).await;
    /// assert_eq!(report.cancelled, 2);
    /// assert_eq!(report.remaining, [stubborn.id()]);
    /// assert!(polite.await.is_ok());
    /// assert!(stubborn.await.unwrap_err().is_aborted());
    /// # });
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub async fn shutdown(&self, grace: Duration) -> ShutdownReport {
        self.close();
        let cancelled = self.shared.live.live_count();
        self.cancel_all();
        let remaining = match tokio::time::timeout(grace, self.wait()).await {
            Ok(()) => Vec::new(),
            Err(_) => {
                let remaining = self.which_children();
                self.shared.live.abort_all();
                remaining
            }
        };
        ShutdownReport {
            cancelled,
            remaining,
        }
    }
}
