//! Helpers shared by the integration tests, one module per concern. Every
//! test binary compiles all of them and uses a few, so unused ones are no
//! warning here.
#![allow(dead_code)]

pub mod adaptive_window;
pub mod admission_model;
pub mod async_objects;
pub mod backend;
pub mod block_on;
pub mod clock_shim;
pub mod draw;
pub mod examples;
pub mod fleet_load;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod homes;
#[cfg(feature = "http")]
pub mod http;
pub mod line_chart;
pub mod model_config;
pub mod objects;
pub mod panics;
#[cfg(feature = "redis")]
pub mod redis_server;
pub mod serial;
pub mod snapshots;
pub mod stress;
pub mod tcp_proxy;
#[cfg(feature = "tracing")]
pub mod tracing_capture;
pub mod workers;
