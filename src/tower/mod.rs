//! A fail-fast concurrency limit for [tower] services: Riak's
//! `{error, overload}` in front of a Rust server's request handlers.
//!
//! [`ShedLayer`] wraps a service in [`Shed`], which takes a permit of one
//! shared [`Resource`](crate::Resource) for each request, holds it until the
//! response future completes or is dropped, and refuses at once with
//! [`Overload`](crate::Overload) when every shard is full. It is never
//! `Pending` because of overload and keeps no queue of its own: unlike
//! tower's `ConcurrencyLimit` (which queues for a permit) or `LoadShed` over
//! it (which sheds whenever anything below is pending), the refusal rests
//! on the count of requests in flight, and every service the layer makes,
//! and every clone of one, shares the one bound. A caller that waits on a
//! pending *inner* service may hold a permit while it waits (see [When a
//! permit waits](#when-a-permit-waits)).
//!
//! With the `http` feature, [`HttpShedLayer`] answers overload with `503
//! Service Unavailable` and a `Retry-After` header instead of an error, keeps
//! the inner service's error type (axum routers need `Infallible`), and
//! holds the permit in the response body until it has streamed: until
//! its end, which a [`PermitBody`] sees also when the server stops at the
//! `Content-Length` without polling it further (hyper does), and which a
//! response with no body (to a `HEAD`, a `204`, a `304`) reaches at its
//! head. An upgraded connection (a WebSocket) holds a permit only if its
//! handler takes the request's [`UpgradePermit`] into the session.
//!
//! With the `grpc` feature, [`GrpcShedLayer`] answers overload with a gRPC
//! status (`RESOURCE_EXHAUSTED`, or `UNAVAILABLE`) in a trailers-only
//! response with `grpc-retry-pushback-ms`, which a tonic client reads as
//! that `Code`, and holds the permit in the response body until the call's
//! trailers (every message of a stream). It works on `http` types, so it
//! goes in front of a tonic server and around a tonic `Channel` alike.
//!
//! # On the client side
//!
//! The layers wrap an outbound service (a hyper client, a tonic `Channel`)
//! as they wrap a server: a call past the limit fails in the client, at
//! once, and never reaches the dependency. A dependency answers overload
//! as a *response*, so over an adaptive resource
//! [`ShedLayer::drop_on_response`] (with [`is_overload_response`] for HTTP
//! and gRPC answers) tells the limit which answers are drops;
//! [`HttpShedLayer::drop_on`] and [`GrpcShedLayer::drop_on`] do it for
//! their flavours.
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
//! # When a permit waits
//!
//! A request that finds the resource full never waits: it is refused at
//! once. A request admitted *unprioritized* (the default) takes its permit
//! in `poll_ready`, before it polls the inner service, so while the inner
//! service's `poll_ready` is `Pending` the caller waits *holding* the
//! permit. Under an inner service that queues its callers (tower's
//! `Buffer`, `ConcurrencyLimit`, `RateLimit`, a `ReadyCache` or balancer
//! with nothing ready), those callers count as in flight: the layer bounds
//! that queue and its requests being served together by the capacity, and a
//! caller that finds the capacity taken by waiters is refused while fewer
//! than the capacity run downstream. To bound only the requests being served, wrap
//! the layer in the queueing service rather than the other way round, or
//! use a [prioritized](ShedLayer::priority) layer: it polls the inner
//! service with no permit and takes the permit in `call`, so a caller waits
//! on a pending inner service holding nothing (and the layer does not bound
//! how many wait).
//!
//! # Over an adaptive resource
//!
//! Over a resource with an [adaptive limit](crate::adaptive), each request
//! is a latency sample from `call` until its response future completes
//! (for [`HttpShedLayer`], until its body ends). A request cancelled on
//! the way (its future or body dropped early: a client gone, a `Timeout`
//! around the layer) and one whose inner service failed, unless
//! [`drop_if`](ShedLayer::drop_if) calls the error a drop, are released
//! as [`OwnedPermit::cancelled`](crate::OwnedPermit::cancelled): the hold
//! is a censored sample (the latency was at least that), or a drop when it
//! lasted past [`Adaptive::drop_after`](crate::adaptive::Adaptive::drop_after)
//! × the baseline, so requests that never answer still bring the limit
//! down;
//! [`HttpShedLayer`] counts responses `503`, `429` and `504` as drops
//! ([`drop_on`](HttpShedLayer::drop_on) changes that). Its `Retry-After`
//! stays the one configured: a client told to wait the measured latency
//! would come back before the overload has passed.
//!
//! [tower]: https://docs.rs/tower

mod drop_on_response;
#[cfg(feature = "grpc")]
mod grpc;
#[cfg(feature = "http")]
mod http;
mod in_flight;
mod layer;
mod prioritize;
mod readiness;
mod response_future;
mod shed;

#[cfg(feature = "http")]
pub use drop_on_response::is_overload_response;
pub use drop_on_response::{DropOnResponse, NoResponseDrops};
#[cfg(feature = "grpc")]
pub use grpc::{
    GrpcCode, GrpcCodes, GrpcPermitBody, GrpcRefusal, GrpcResponseFuture, GrpcShed, GrpcShedLayer,
};
#[cfg(feature = "http")]
pub use http::{HttpResponseFuture, HttpShed, HttpShedLayer, PermitBody, UpgradePermit};
pub use layer::ShedLayer;
pub use prioritize::{Prioritize, Unprioritized};
pub use response_future::ResponseFuture;
pub use shed::Shed;

/// The error type of a [`Shed`] service: tower's `BoxError`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
