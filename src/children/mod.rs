//! What both supervisors share: the live set (the mechanism both faces are
//! thin types over), a child's id, why a spawn failed, and what a shutdown
//! did. Neither face reaches into the other; both use these.

mod child_id;
mod live_set;
mod shutdown_report;
mod spawn_error;

pub use child_id::ChildId;
pub(crate) use live_set::{Ended, LiveSet, Place, Refused};
pub use shutdown_report::ShutdownReport;
pub use spawn_error::SpawnError;
