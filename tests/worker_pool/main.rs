//! `WorkerPool`: bounded mailboxes served by worker threads, their shutdown, restarts and figures.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod bound;
mod build;
mod call_async;
mod dead_shards;
mod fault_injection;
mod fifo;
mod model;
mod panic_restart;
mod panicking_drops;
mod shutdown;
mod shutdown_anywhere;
mod stats;
mod timeout;
