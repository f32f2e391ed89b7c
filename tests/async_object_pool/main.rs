//! `AsyncObjectPool`: the async face of the object pool, its cancel safety, and real Redis connections.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod cancel;
mod check_deadline;
mod create;
mod drop;
mod redis;
mod refill_backoff;
mod tags;
mod types;
mod waiters;
