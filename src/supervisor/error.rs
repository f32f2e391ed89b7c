//! Why a spawn failed ([`SpawnError`]) and why a child ended without a
//! result ([`ChildPanicked`]).

use std::fmt;

/// Why [`Supervisor::spawn`](crate::Supervisor::spawn) did not start a
/// child. The closure comes back inside the error, so the caller can run it
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
            SpawnError::Overload(f) | SpawnError::Closed(f) | SpawnError::Thread(_, f) => f,
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
