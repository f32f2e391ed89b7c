//! `ObjectPool`: reusable objects with hard and soft limits, waiters, reaping, tags and groups.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod bound;
mod build;
mod check_deadline;
mod check_on_take;
mod close;
mod create_failure;
mod create_timeout;
mod fault_injection;
mod group;
mod group_wait;
mod lifetime;
mod min_idle;
mod model;
mod no_false_overload;
mod panics;
mod process_pool;
mod queue_max;
mod reaping;
mod reconfigure;
mod refill_backoff;
mod retire;
mod reuse;
mod slots;
mod tags;
mod types;
mod waiters;
