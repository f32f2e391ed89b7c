//! The tower layers: `ShedLayer`, `HttpShedLayer` and `GrpcShedLayer` in front of services, real HTTP
//! and gRPC servers, and around real clients.
//!
//! One test binary for the face, a module per behaviour (the file names
//! say which); the helpers shared by every binary are in `tests/support/`.

#[path = "../support/mod.rs"]
mod support;

mod adaptive;
mod client_side;
mod grpc_judging;
mod grpc_server;
mod http_metrics;
mod http_permit_paths;
mod http_priority;
mod http_response_end;
mod http_server;
mod http_shed;
mod http_upgrade;
mod pending_inner;
mod prioritized_server;
mod shed_contract;
mod unused_permit;
