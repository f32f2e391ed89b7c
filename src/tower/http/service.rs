//! [`HttpShed`]: [`Shed`](crate::tower::Shed)'s rules for HTTP services,
//! answering overload with a 503.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{response::Parts, HeaderValue, Request, Response};
use tower_service::Service;

use super::body::PermitBody;
use super::future::HttpResponseFuture;
use super::upgrade::{Asked, Held};
use crate::tower::in_flight::InFlight;
use crate::tower::prioritize::{Prioritize, Unprioritized};
use crate::tower::readiness::{Decision, Readiness};
use crate::Resource;

/// An HTTP service whose requests in flight hold permits of a shared
/// [`Resource`]; a request that finds every shard full gets `503 Service
/// Unavailable` with `Retry-After` at once, and never reaches the inner
/// service. Made by [`HttpShedLayer`](super::HttpShedLayer). Its error is the
/// inner service's; admitted responses' bodies are [`PermitBody`], which
/// hold the permit until they end or are dropped.
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
/// let layer = sidejob::tower::HttpShedLayer::with_capacity(8)?;
/// let service = layer.layer(service_fn(|_: Request<()>| async {
///     Ok::<_, Infallible>(Response::new(String::from("hi")))
/// }));
/// let response = service.oneshot(Request::new(())).await?;
/// assert_eq!(layer.resource().usage(), 1); // the body still holds the permit
/// drop(response);
/// assert_eq!(layer.resource().usage(), 0);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub struct HttpShed<S, P = Unprioritized> {
    inner: S,
    resource: Arc<Resource>,
    retry_after: HeaderValue,
    drop_on: fn(&Parts) -> bool,
    prioritize: P,
    readiness: Readiness,
}

impl<S, P> HttpShed<S, P> {
    pub(super) fn new(
        inner: S,
        resource: Arc<Resource>,
        retry_after: HeaderValue,
        drop_on: fn(&Parts) -> bool,
        prioritize: P,
    ) -> Self {
        HttpShed {
            inner,
            resource,
            retry_after,
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
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(2)?;
    /// let service = tower::Layer::layer(&layer, ());
    /// assert!(std::sync::Arc::ptr_eq(service.resource(), layer.resource()));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }
}

impl<S, P, ReqB, ResB> Service<Request<ReqB>> for HttpShed<S, P>
where
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    P: Prioritize<Request<ReqB>>,
{
    type Response = Response<PermitBody<ResB>>;
    type Error = S::Error;
    type Future = HttpResponseFuture<S::Future>;

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
            .take_for_call("HttpShed", &self.resource, || prioritize.priority(&request));
        match decision {
            Decision::Admitted(permit) => {
                let (asked, upgrade) = Asked::of(&request);
                let in_flight = InFlight::start(permit);
                if upgrade {
                    return self.call_upgrade(request, in_flight, asked);
                }
                HttpResponseFuture::admitted(
                    self.inner.call(request),
                    Held::Here(in_flight),
                    asked,
                    self.drop_on,
                )
            }
            Decision::Overloaded => HttpResponseFuture::overloaded(self.retry_after.clone()),
        }
    }
}

impl<S, P> HttpShed<S, P> {
    /// `call` for a request that asks for an upgrade: its permit waits in a
    /// slot its handler can take it from. The slot is offered before the
    /// inner call, so a panic there releases the permit too.
    #[cold]
    #[inline(never)]
    fn call_upgrade<ReqB, ResB>(
        &mut self,
        mut request: Request<ReqB>,
        in_flight: InFlight,
        asked: Asked,
    ) -> HttpResponseFuture<S::Future>
    where
        S: Service<Request<ReqB>, Response = Response<ResB>>,
    {
        let held = Held::offer(&mut request, in_flight);
        HttpResponseFuture::admitted(self.inner.call(request), held, asked, self.drop_on)
    }
}

impl<S: Clone, P: Clone> Clone for HttpShed<S, P> {
    /// A clone shares the resource, and starts unreadied.
    fn clone(&self) -> Self {
        HttpShed::new(
            self.inner.clone(),
            Arc::clone(&self.resource),
            self.retry_after.clone(),
            self.drop_on,
            self.prioritize.clone(),
        )
    }
}

impl<S: fmt::Debug, P> fmt::Debug for HttpShed<S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpShed")
            .field("inner", &self.inner)
            .field("resource", &self.resource)
            .field("readiness", &self.readiness)
            .finish()
    }
}
