//! `TaskSupervisor`: a bounded, tracked set of async tasks.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod bound;
mod endings;
mod generations;
mod lifecycle;
mod model;
mod shutdown_abort;
mod stats_snapshot;
mod wait_after_last_slot;
