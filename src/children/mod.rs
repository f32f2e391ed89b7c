//! What both supervisors share: a child's id, why a spawn failed, and what a
//! shutdown did. Neither face reaches into the other; both use these.

mod child_id;
mod shutdown_report;
mod spawn_error;

pub use child_id::ChildId;
pub use shutdown_report::ShutdownReport;
pub use spawn_error::SpawnError;
