//! The gRPC flavour of the shedding layer: overload answers a trailers-only
//! response with a gRPC status and `grpc-retry-pushback-ms`, the inner
//! service's error type is kept, and an admitted call's body holds the
//! permit until its trailers.

mod body;
mod code;
mod future;
mod layer;
mod service;

pub use body::GrpcPermitBody;
pub use code::{GrpcCode, GrpcCodes, GrpcRefusal};
pub use future::GrpcResponseFuture;
pub use layer::GrpcShedLayer;
pub use service::GrpcShed;
