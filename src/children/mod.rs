//! What both supervisors share: the live set (the mechanism both faces are
//! thin types over) with its cancellation and its drain, a child's id, why
//! a spawn failed, and what a shutdown did. Neither face reaches into the
//! other; both use these.

mod cancellation;
mod child_id;
mod drain;
mod live_set;
mod shutdown_report;
mod spawn_error;

pub(crate) use cancellation::Cancellation;
pub use child_id::ChildId;
pub(crate) use drain::Drain;
pub(crate) use live_set::{Ended, LiveSet, Place, Refused};
pub use shutdown_report::ShutdownReport;
pub use spawn_error::SpawnError;
