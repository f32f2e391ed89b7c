//! [`GrpcShed`]: [`Shed`](crate::tower::Shed)'s rules for gRPC services,
//! refusing with a gRPC status.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower_service::Service;

use super::body::GrpcPermitBody;
use super::code::GrpcCodes;
use super::future::{GrpcResponseFuture, Refusal};
use crate::tower::in_flight::InFlight;
use crate::tower::prioritize::{Prioritize, Unprioritized};
use crate::tower::readiness::{Decision, Readiness};
use crate::Resource;

/// A gRPC service (an HTTP/2 service carrying gRPC calls: a tonic server's
/// routes, or a tonic `Channel` on the client side) whose calls in flight
/// hold permits of a shared [`Resource`]; a call that finds every shard
/// full gets a trailers-only response at once (HTTP `200`,
/// `content-type: application/grpc`, `grpc-status`, `grpc-message` and
/// `grpc-retry-pushback-ms`), and never reaches the inner service. Made by
/// [`GrpcShedLayer`](super::GrpcShedLayer). Its error is the inner
/// service's; admitted responses' bodies are [`GrpcPermitBody`], which hold
/// the permit until the call's trailers or the body's drop.
///
/// A clone shares the resource and starts unreadied.
///
/// # Panics
///
/// `call` panics if `poll_ready` did not answer `Ready(Ok(()))` first.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use http::{Request, Response};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let layer = sidejob::tower::GrpcShedLayer::with_capacity(8)?;
/// let service = layer.layer(service_fn(|_: Request<()>| async {
///     Ok::<_, Infallible>(Response::new(String::from("a message")))
/// }));
/// let response = service.oneshot(Request::new(())).await?;
/// assert_eq!(layer.resource().usage(), 1); // the body still holds the permit
/// drop(response);
/// assert_eq!(layer.resource().usage(), 0);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub struct GrpcShed<S, P = Unprioritized> {
    inner: S,
    resource: Arc<Resource>,
    refusal: Refusal,
    drop_on: GrpcCodes,
    prioritize: P,
    readiness: Readiness,
}

impl<S, P> GrpcShed<S, P> {
    pub(super) fn new(
        inner: S,
        resource: Arc<Resource>,
        refusal: Refusal,
        drop_on: GrpcCodes,
        prioritize: P,
    ) -> Self {
        GrpcShed {
            inner,
            resource,
            refusal,
            drop_on,
            prioritize,
            readiness: Readiness::new(),
        }
    }

    /// The shared resource.
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = sidejob::tower::GrpcShedLayer::with_capacity(2)?;
    /// let service = tower::Layer::layer(&layer, ());
    /// assert!(std::sync::Arc::ptr_eq(service.resource(), layer.resource()));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }
}

impl<S, P, ReqB, ResB> Service<Request<ReqB>> for GrpcShed<S, P>
where
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    P: Prioritize<Request<ReqB>>,
{
    type Response = Response<GrpcPermitBody<ResB>>;
    type Error = S::Error;
    type Future = GrpcResponseFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        let inner = &mut self.inner;
        self.readiness
            .poll_ready(&self.resource, P::AT_CALL, || inner.poll_ready(cx))
    }

    #[inline]
    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        let prioritize = &self.prioritize;
        let decision = self
            .readiness
            .take_for_call("GrpcShed", &self.resource, || prioritize.priority(&request));
        match decision {
            Decision::Admitted(permit) => GrpcResponseFuture::admitted(
                self.inner.call(request),
                InFlight::start(permit),
                self.drop_on,
            ),
            Decision::Overloaded => GrpcResponseFuture::refused(self.refusal.clone()),
        }
    }
}

impl<S: Clone, P: Clone> Clone for GrpcShed<S, P> {
    /// A clone shares the resource, and starts unreadied.
    fn clone(&self) -> Self {
        GrpcShed::new(
            self.inner.clone(),
            Arc::clone(&self.resource),
            self.refusal.clone(),
            self.drop_on,
            self.prioritize.clone(),
        )
    }
}

impl<S: fmt::Debug, P> fmt::Debug for GrpcShed<S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcShed")
            .field("inner", &self.inner)
            .field("resource", &self.resource)
            .field("readiness", &self.readiness)
            .finish()
    }
}
