//! [`TaskError`]: why a spawned task gave no output, as tokio's `JoinError`
//! says it.

use std::any::Any;
use std::fmt;

/// Why a task spawned by [`TaskSupervisor::try_spawn`](super::TaskSupervisor::try_spawn)
/// gave no output: it panicked, or it was aborted (by
/// [`TaskHandle::abort`](super::TaskHandle::abort), a shutdown, or its
/// runtime shutting down). Follows tokio's `JoinError`.
///
/// # Examples
///
/// ```
/// # std::panic::set_hook(Box::new(|_| {}));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let supervisor = sidejob::TaskSupervisor::new(1);
/// let handle = supervisor.try_spawn(|_| async { panic!("disk full") }).unwrap();
/// let error = handle.await.unwrap_err();
/// assert!(error.is_panic());
/// assert_eq!(error.panic_message(), Some("disk full"));
/// assert_eq!(error.to_string(), "task panicked: disk full");
/// # });
/// ```
pub struct TaskError {
    repr: Repr,
}

enum Repr {
    Panic(Box<dyn Any + Send>),
    Aborted,
}

impl TaskError {
    pub(super) fn from_join(error: tokio::task::JoinError) -> Self {
        let repr = match error.try_into_panic() {
            Ok(payload) => Repr::Panic(payload),
            Err(_) => Repr::Aborted,
        };
        TaskError { repr }
    }

    /// Aborted by `shutdown`.
    pub(super) fn aborted() -> Self {
        TaskError {
            repr: Repr::Aborted,
        }
    }

    /// Whether the task panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let handle = supervisor.try_spawn(|_| std::future::pending::<()>()).unwrap();
    /// handle.abort();
    /// assert!(!handle.await.unwrap_err().is_panic());
    /// # });
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// Whether the task was aborted before it finished.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let handle = supervisor.try_spawn(|_| std::future::pending::<()>()).unwrap();
    /// handle.abort();
    /// assert!(handle.await.unwrap_err().is_aborted());
    /// # });
    /// ```
    pub fn is_aborted(&self) -> bool {
        matches!(self.repr, Repr::Aborted)
    }

    /// The panic's message, when it was a string.
    ///
    /// # Examples
    ///
    /// ```
    /// # std::panic::set_hook(Box::new(|_| {}));
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let supervisor = sidejob::TaskSupervisor::new(1);
    /// let handle = supervisor.try_spawn(|_| async { panic!("code {}", 7) }).unwrap();
    /// assert_eq!(handle.await.unwrap_err().panic_message(), Some("code 7"));
    /// # });
    /// ```
    pub fn panic_message(&self) -> Option<&str> {
        match &self.repr {
            Repr::Panic(payload) => payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str)),
            Repr::Aborted => None,
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.repr, self.panic_message()) {
            (Repr::Panic(_), Some(message)) => write!(f, "task panicked: {message}"),
            (Repr::Panic(_), None) => f.write_str("task panicked"),
            (Repr::Aborted, _) => f.write_str("task was aborted"),
        }
    }
}

impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Panic(_) => f
                .debug_tuple("Panic")
                .field(&self.panic_message().unwrap_or("<non-string payload>"))
                .finish(),
            Repr::Aborted => f.write_str("Aborted"),
        }
    }
}

impl std::error::Error for TaskError {}
