//! [`ChildId`]: a supervised child's name, shared by both supervisors.

use std::fmt;

/// Identifies a child of a [`Supervisor`](crate::Supervisor) or a
/// [`TaskSupervisor`](crate::TaskSupervisor), unique for its supervisor's
/// lifetime.
///
/// Ids are handed out per shard with no shared counter, so they are unique
/// but not consecutive, and their order says nothing about spawn order
/// across shards.
///
/// # Examples
///
/// ```
/// let supervisor = sidejob::Supervisor::new(4);
/// let a = supervisor.spawn(|_| ())?;
/// let b = supervisor.spawn(|_| ())?;
/// assert_ne!(a.id(), b.id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ChildId(u64);

impl ChildId {
    /// The id numbered `number`.
    pub(crate) fn new(number: u64) -> Self {
        ChildId(number)
    }

    /// Its number.
    pub(crate) fn number(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ChildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "child-{}", self.0)
    }
}
