//! Why a child ended without a result ([`ChildPanicked`]).

use std::fmt;

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
