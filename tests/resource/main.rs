//! `Resource`, the sharded admission counter: its bound, its refusals, its priorities, its capacity and its figures.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod build_errors;
mod capacity_lease;
mod capacity_until;
mod exact_capacity;
mod model;
mod no_false_overload;
mod owned_permits;
mod panic_release;
mod priorities;
mod probe_order;
mod public_types;
mod scarce_lease;
mod scarce_refusal;
mod scarce_stress;
mod set_capacity;
mod stats;
mod strict_bound;
