//! One budget across a fleet of nodes, leased from a real `redis-server` (feature `redis`).
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod budget;
mod example;
mod fair_share;
mod faults;
mod paused_node;
mod quiet;
mod resize;
mod resize_unanswered;
mod script_faults;
mod tls;
