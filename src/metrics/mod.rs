//! Feature `metrics`: [`Reporter`] publishes the figures of the faces
//! registered with it through the [`metrics`](https://docs.rs/metrics)
//! facade (0.24), on an interval, to whatever recorder the application
//! installed (a Prometheus exporter, StatsD, ...).

mod reporter;

pub use reporter::Reporter;
