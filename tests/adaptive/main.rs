//! The adaptive limit: its settings, its convergence, the signals it reads, and real traffic through it.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod build_errors;
mod converges;
mod signals;
mod traffic;
