//! The HTTP flavour of the shedding layer: overload answers `503 Service
//! Unavailable` with `Retry-After`, the inner service's error type is kept,
//! and an admitted response's body holds the permit until it has streamed.

mod body;
mod future;
mod layer;
mod service;
mod upgrade;

pub use body::PermitBody;
pub use future::HttpResponseFuture;
pub use layer::HttpShedLayer;
pub use service::HttpShed;
pub use upgrade::UpgradePermit;
