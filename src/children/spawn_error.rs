//! [`SpawnError`]: why a supervisor did not start a child, the child handed
//! back; shared by both supervisors.

use std::fmt;

/// Why [`Supervisor::spawn`](crate::Supervisor::spawn) or
/// [`TaskSupervisor::try_track`](crate::TaskSupervisor::try_track) did not
/// start a child. The closure comes back inside the error, so the caller can run it
/// elsewhere or drop it. Closures have no `Debug`, so this error's `Debug`
/// needs none.
///
/// # Examples
///
/// ```
/// use sidejob::{SpawnError, Supervisor};
///
/// let supervisor = Supervisor::new(0); // no room for any child
/// match supervisor.spawn(|_| 1 + 1) {
///     Err(SpawnError::Overload(_job)) => {} // run it later, or elsewhere
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[non_exhaustive]
pub enum SpawnError<F> {
    /// Every shard was at its limit: the supervisor already runs as many
    /// children as its capacity allows.
    Overload(F),
    /// The supervisor is shut down.
    Closed(F),
    /// The OS refused to start the child's thread. Its slot was given back.
    Thread(std::io::Error, F),
    /// `TaskSupervisor::try_spawn` was called outside a tokio runtime (with
    /// the `tokio` feature); nothing was admitted.
    NoRuntime(F),
}

impl<F> SpawnError<F> {
    /// The closure that was not started.
    ///
    /// # Examples
    ///
    /// ```
    /// let supervisor = sidejob::Supervisor::new(0);
    /// let job = supervisor.spawn(|_| ()).unwrap_err().into_closure();
    /// # let _ = job;
    /// ```
    pub fn into_closure(self) -> F {
        match self {
            SpawnError::Overload(f)
            | SpawnError::Closed(f)
            | SpawnError::Thread(_, f)
            | SpawnError::NoRuntime(f) => f,
        }
    }

    /// Whether the spawn was refused because the supervisor was full.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(sidejob::Supervisor::new(0).spawn(|_| ()).unwrap_err().is_overload());
    /// ```
    pub fn is_overload(&self) -> bool {
        matches!(self, SpawnError::Overload(_))
    }
}

impl<F> fmt::Debug for SpawnError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::Overload(_) => f.write_str("Overload(..)"),
            SpawnError::Closed(_) => f.write_str("Closed(..)"),
            SpawnError::Thread(error, _) => f.debug_tuple("Thread").field(error).finish(),
            SpawnError::NoRuntime(_) => f.write_str("NoRuntime(..)"),
        }
    }
}

impl<F> fmt::Display for SpawnError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::Overload(_) => f.write_str("overload: the supervisor is at capacity"),
            SpawnError::Closed(_) => f.write_str("supervisor is shut down"),
            SpawnError::Thread(error, _) => {
                write!(f, "could not start the child's thread: {error}")
            }
            SpawnError::NoRuntime(_) => f.write_str("no tokio runtime to spawn the task on"),
        }
    }
}

impl<F> std::error::Error for SpawnError<F> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Thread(error, _) => Some(error),
            _ => None,
        }
    }
}
