//! A fail-fast concurrency limit for [tower] services: Riak's
//! `{error, overload}` in front of a Rust server's request handlers.
//!
//! [`ShedLayer`] wraps a service in [`Shed`], which takes a permit of one
//! shared [`Resource`](crate::Resource) for each request, holds it until the
//! response future completes or is dropped, and refuses at once with
//! [`Overload`](crate::Overload) when every shard is full. It never queues
//! and is never `Pending` because of overload: unlike tower's
//! `ConcurrencyLimit` (which queues) or `LoadShed` over it (which sheds
//! whenever anything below is pending), the refusal rests on the count of
//! requests in flight, and every service the layer makes, and every clone
//! of one, shares the one bound.
//!
//! With the `http` feature, [`HttpShedLayer`] answers overload with `503
//! Service Unavailable` and a `Retry-After` header instead of an error, keeps
//! the inner service's error type (axum routers need `Infallible`), and
//! holds the permit in the response body until it has streamed.
//!
//! # The permit's life
//!
//! 1. `poll_ready` takes a permit first. With every shard full it answers
//!    `Ready(Ok(()))` at once, and the next `call` refuses without calling
//!    the inner service.
//! 2. With a permit it polls the inner service: `Pending` keeps the permit
//!    (the request counts as in flight while it waits), an error releases
//!    it.
//! 3. `call` moves the permit into the response future, which releases it
//!    when it completes or is dropped. A permit reserved in `poll_ready`
//!    that no `call` uses (the inner service failed to get ready, or the
//!    readied service was dropped, or replaced by a clone, before a `call`)
//!    is released with no latency sample.
//!
//! # Over an adaptive resource
//!
//! Over a resource with an [adaptive limit](crate::adaptive), each request
//! is a latency sample from `call` until its response future completes
//! (for [`HttpShedLayer`], until its body ends). A request cancelled on
//! the way (its future or body dropped early) is no sample. [`Shed`]
//! releases a request whose inner service failed without a sample, unless
//! [`drop_if`](ShedLayer::drop_if) calls the error a drop;
//! [`HttpShedLayer`] counts responses `503`, `429` and `504` as drops
//! ([`drop_on`](HttpShedLayer::drop_on) changes that). Its `Retry-After`
//! stays the one configured: a client told to wait the measured latency
//! would come back before the overload has passed.
//!
//! [tower]: https://docs.rs/tower

#[cfg(feature = "http")]
mod http;
mod in_flight;
mod layer;
mod prioritize;
mod readiness;
mod response_future;
mod shed;

#[cfg(feature = "http")]
pub use http::{HttpResponseFuture, HttpShed, HttpShedLayer, PermitBody};
pub use layer::ShedLayer;
pub use prioritize::{Prioritize, Unprioritized};
pub use response_future::ResponseFuture;
pub use shed::Shed;

/// The error type of a [`Shed`] service: tower's `BoxError`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
