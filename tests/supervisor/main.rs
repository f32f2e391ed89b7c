//! `Supervisor`: a bounded, tracked set of child threads.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod bound;
mod live_set;
mod model;
mod panics;
mod shutdown;
mod snapshots;
mod spawn_failure;
mod stats_snapshot;
