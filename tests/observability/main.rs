//! What operators see of every face: rates and windows, serde, the `metrics` and Prometheus exporters.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod metrics_reporter;
mod prometheus_collector;
mod rates_faces;
mod rates_from_birth;
mod reentrant_subscribers;
mod serde_stats;
mod tracing_events;
