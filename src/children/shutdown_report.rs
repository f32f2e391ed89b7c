//! [`ShutdownReport`]: what a supervisor's shutdown did; shared by both
//! supervisors.

use super::ChildId;

/// What a shutdown did: [`Supervisor::shutdown`](crate::Supervisor::shutdown) or
/// `TaskSupervisor::shutdown`.
///
/// # Examples
///
/// ```
/// let report = sidejob::Supervisor::new(1).shutdown(std::time::Duration::ZERO);
/// assert_eq!((report.cancelled, report.remaining.len()), (0, 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Children that were asked to stop.
    pub cancelled: usize,
    /// Children still running when the grace period ended, in order. They
    /// stay tracked until they end.
    pub remaining: Vec<ChildId>,
}
