//! [`GrpcShedLayer`]: makes [`GrpcShed`] services sharing one resource.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;
use tower_layer::Layer;

use super::code::{GrpcCodes, GrpcRefusal};
use super::future::Refusal;
use super::service::GrpcShed;
use crate::tower::prioritize::Unprioritized;
use crate::{BuildError, Resource};

/// A tower [`Layer`] for gRPC services: a call that finds every shard of
/// the shared [`Resource`] full gets a gRPC status at once, in a
/// trailers-only response, without reaching the inner service. By default
/// the status is `RESOURCE_EXHAUSTED` ([`GrpcRefusal`] tells why, and
/// [`refuse_with`](GrpcShedLayer::refuse_with) picks `UNAVAILABLE`), the
/// message `overloaded`, and `grpc-retry-pushback-ms: 1000`, which gRPC's
/// retry design has a client's retry policy wait before it tries again.
///
/// It needs no tonic: it works on `http` requests and responses, so it goes
/// in front of a tonic server (`Server::builder().layer(..)`) and around a
/// tonic `Channel` on the client side alike. A call holds its permit until
/// its response body ends (every message of a stream, and the trailers) or
/// is dropped (the call cancelled). The inner service's error type is kept.
/// Every service it makes, and every clone, shares the bound.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use http::{Request, Response};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let layer = sidejob::tower::GrpcShedLayer::with_capacity(1)?
///     .retry_after(Duration::from_millis(250));
/// let service = layer.layer(service_fn(|_: Request<()>| async {
///     Ok::<_, Infallible>(Response::new(String::new()))
/// }));
/// let held = layer.resource().try_acquire_owned()?; // the only permit
/// let refused = service.oneshot(Request::new(())).await?;
/// assert_eq!(refused.status(), http::StatusCode::OK); // gRPC's errors travel in grpc-status
/// assert_eq!(refused.headers()["content-type"], "application/grpc");
/// assert_eq!(refused.headers()["grpc-status"], "8"); // RESOURCE_EXHAUSTED
/// assert_eq!(refused.headers()["grpc-retry-pushback-ms"], "250");
/// # drop(held);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
#[derive(Clone)]
pub struct GrpcShedLayer<P = Unprioritized> {
    resource: Arc<Resource>,
    refuse_with: GrpcRefusal,
    refusal: Refusal,
    drop_on: GrpcCodes,
    prioritize: P,
}

impl GrpcShedLayer {
    /// A layer over `resource`, refusing with `RESOURCE_EXHAUSTED` and a
    /// pushback of 1 s.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(100));
    /// let layer = sidejob::tower::GrpcShedLayer::new(resource);
    /// assert_eq!(layer.resource().capacity(), 100);
    /// ```
    pub fn new(resource: Arc<Resource>) -> Self {
        let refuse_with = GrpcRefusal::default();
        GrpcShedLayer {
            resource,
            refuse_with,
            refusal: Refusal {
                status: refuse_with.header(),
                message: HeaderValue::from_static("overload: every shard is at its limit"),
                pushback: HeaderValue::from_static("1000"),
            },
            drop_on: GrpcCodes::overload(),
            prioritize: Unprioritized,
        }
    }

    /// A layer over a new resource of `capacity` calls in flight.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` when the shards cannot hold it.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::tower::GrpcShedLayer::with_capacity(usize::MAX).unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// ```
    pub fn with_capacity(capacity: usize) -> Result<Self, BuildError> {
        let resource = Resource::builder().capacity(capacity).build()?;
        Ok(GrpcShedLayer::new(Arc::new(resource)))
    }
}

impl<P> GrpcShedLayer<P> {
    /// The status a refused call gets: `RESOURCE_EXHAUSTED` (the default)
    /// or `UNAVAILABLE`; [`GrpcRefusal`] tells when each fits.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::{GrpcRefusal, GrpcShedLayer};
    ///
    /// // One replica of several: a client's retry may find another.
    /// let layer = GrpcShedLayer::with_capacity(64)?.refuse_with(GrpcRefusal::Unavailable);
    /// assert_eq!(layer.refusal(), GrpcRefusal::Unavailable);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn refuse_with(mut self, refusal: GrpcRefusal) -> Self {
        self.refuse_with = refusal;
        self.refusal.status = refusal.header();
        self
    }

    /// The status a refused call gets.
    ///
    /// # Examples
    ///
    /// ```
    /// use sidejob::tower::{GrpcCode, GrpcShedLayer};
    /// let layer = GrpcShedLayer::with_capacity(64)?;
    /// assert_eq!(layer.refusal().code(), GrpcCode::RESOURCE_EXHAUSTED);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn refusal(&self) -> GrpcRefusal {
        self.refuse_with
    }

    /// The `grpc-retry-pushback-ms` a refused call is told: `after` in
    /// whole milliseconds, rounded up (so never 0 unless `after` is zero),
    /// and at most `i32::MAX` (gRPC reads it as an int32, a larger value as
    /// "do not retry").
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let layer = sidejob::tower::GrpcShedLayer::with_capacity(1)?
    ///     .retry_after(Duration::from_secs(2));
    /// assert!(format!("{layer:?}").contains("2000"));
    /// let forever = sidejob::tower::GrpcShedLayer::with_capacity(1)?.retry_after(Duration::MAX);
    /// assert!(format!("{forever:?}").contains("2147483647"));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn retry_after(mut self, after: Duration) -> Self {
        let millis =
            after.as_millis() + u128::from(!after.subsec_nanos().is_multiple_of(1_000_000));
        // gRPC reads the pushback as an int32: a larger one means "do not
        // retry" to a client, so it stops at the largest that is a wait.
        let millis = millis.min(i32::MAX as u128) as u64;
        self.refusal.pushback = HeaderValue::from(millis);
        self
    }

    /// Tells which calls are *drops* for an adaptive resource: the call
    /// failed from overload downstream, and the limit backs off. A call's
    /// code is its `grpc-status`, from the trailers or from the head of a
    /// trailers-only response; a head with no `grpc-status` and an HTTP
    /// status other than `200` (a proxy's `503`) has the code gRPC maps
    /// that status to. Default: [`GrpcCodes::overload`]
    /// (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`). A drop's
    /// hold time is no latency sample; the permit is still held until the
    /// body ends.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::tower::{GrpcCode, GrpcShedLayer};
    /// use sidejob::{adaptive::Adaptive, Resource};
    ///
    /// let resource = Arc::new(Resource::builder().capacity(64).adaptive(Adaptive::gradient()).build()?);
    /// // Deadlines here are the callers' own, short on purpose: not overload.
    /// let layer = GrpcShedLayer::new(resource)
    ///     .drop_on([GrpcCode::RESOURCE_EXHAUSTED, GrpcCode::UNAVAILABLE]);
    /// # let _ = layer;
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn drop_on(mut self, codes: impl Into<GrpcCodes>) -> Self {
        self.drop_on = codes.into();
        self
    }

    /// Gives each call the priority `prioritize` picks from its request (a
    /// `Fn(&http::Request<B>) -> Priority`, reading the method's path or a
    /// metadata header; see [`Prioritize`](crate::tower::Prioritize)): the
    /// permit is then taken in `call`, so that under overload `Sheddable`
    /// methods are refused first and `Critical` ones find the slots the
    /// others must leave.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::{Priority, Resource};
    ///
    /// let resource = Arc::new(
    ///     Resource::builder()
    ///         .capacity(64)
    ///         .share(Priority::Normal, 0.9)
    ///         .share(Priority::Sheddable, 0.5)
    ///         .build()?,
    /// );
    /// let layer = sidejob::tower::GrpcShedLayer::new(resource).priority(
    ///     |request: &http::Request<String>| match request.uri().path() {
    ///         "/grpc.health.v1.Health/Check" => Priority::Critical,
    ///         path if path.starts_with("/shop.Reports/") => Priority::Sheddable,
    ///         _ => match request.headers().get("x-priority").map(|v| v.as_bytes()) {
    ///             Some(b"sheddable") => Priority::Sheddable,
    ///             _ => Priority::Normal,
    ///         },
    ///     },
    /// );
    /// # let _ = layer;
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn priority<F>(self, prioritize: F) -> GrpcShedLayer<F> {
        GrpcShedLayer {
            resource: self.resource,
            refuse_with: self.refuse_with,
            refusal: self.refusal,
            drop_on: self.drop_on,
            prioritize,
        }
    }

    /// The shared resource, for its stats.
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = sidejob::tower::GrpcShedLayer::with_capacity(3)?;
    /// assert_eq!(layer.resource().stats().rejected, 0);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }
}

impl<S, P: Clone> Layer<S> for GrpcShedLayer<P> {
    type Service = GrpcShed<S, P>;

    fn layer(&self, inner: S) -> GrpcShed<S, P> {
        GrpcShed::new(
            inner,
            Arc::clone(&self.resource),
            self.refusal.clone(),
            self.drop_on,
            self.prioritize.clone(),
        )
    }
}

impl<P> fmt::Debug for GrpcShedLayer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcShedLayer")
            .field("resource", &self.resource)
            .field("refuse_with", &self.refuse_with)
            .field("retry_pushback_ms", &self.refusal.pushback)
            .field("drop_on", &self.drop_on)
            .finish()
    }
}
