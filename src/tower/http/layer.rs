//! [`HttpShedLayer`]: makes [`HttpShed`] services sharing one resource.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{response::Parts, HeaderValue};
use tower_layer::Layer;

use super::future::overload_status;
use super::service::HttpShed;
use crate::tower::prioritize::Unprioritized;
use crate::{BuildError, Resource};

/// A tower [`Layer`] for HTTP services: a request that finds every shard of
/// the shared [`Resource`] full is answered `503 Service Unavailable` at
/// once, with a `Retry-After` header, without reaching the inner service.
/// The inner service's error type is kept (axum's routers need
/// `Infallible`). Every service it makes, and every clone, shares the bound.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use http::{Request, Response, StatusCode};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let layer = sidejob::tower::HttpShedLayer::with_capacity(1)?
///     .retry_after(Duration::from_millis(1500));
/// let service = layer.layer(service_fn(|_: Request<String>| async {
///     Ok::<_, Infallible>(Response::new(String::from("done")))
/// }));
/// let held = layer.resource().try_acquire_owned()?; // the only permit
/// let response = service.oneshot(Request::new(String::new())).await?;
/// assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(response.headers()["retry-after"], "2"); // whole seconds, rounded up
/// # drop(held);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
#[derive(Clone)]
pub struct HttpShedLayer<P = Unprioritized> {
    resource: Arc<Resource>,
    retry_after: HeaderValue,
    drop_on: fn(&Parts) -> bool,
    prioritize: P,
}

impl HttpShedLayer {
    /// A layer over `resource`, answering overload with `Retry-After: 1`.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(100));
    /// let layer = sidejob::tower::HttpShedLayer::new(resource);
    /// assert_eq!(layer.resource().capacity(), 100);
    /// ```
    pub fn new(resource: Arc<Resource>) -> Self {
        HttpShedLayer {
            resource,
            retry_after: HeaderValue::from_static("1"),
            drop_on: overload_status,
            prioritize: Unprioritized,
        }
    }

    /// A layer over a new resource of `capacity` requests in flight.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` when the shards cannot hold it.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = sidejob::tower::HttpShedLayer::with_capacity(usize::MAX).unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// ```
    pub fn with_capacity(capacity: usize) -> Result<Self, BuildError> {
        let resource = Resource::builder().capacity(capacity).build()?;
        Ok(HttpShedLayer::new(Arc::new(resource)))
    }
}

impl<P> HttpShedLayer<P> {
    /// The `Retry-After` a refused request is told: `after` in whole
    /// seconds, rounded up (so never 0 unless `after` is zero).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(1)?
    ///     .retry_after(Duration::from_secs(30));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn retry_after(mut self, after: Duration) -> Self {
        let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        self.retry_after = HeaderValue::from(seconds);
        self
    }

    /// Tells which responses are *drops* for an adaptive resource: the
    /// request failed from overload downstream, and the limit backs off.
    /// Default: `503`, `429` and `504`. A drop's hold time is no latency
    /// sample; the permit is still held until the body ends.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::{adaptive::Adaptive, Resource};
    ///
    /// let resource = Arc::new(Resource::builder().capacity(64).adaptive(Adaptive::vegas()).build()?);
    /// // Only a 503 says overload here; a 429 is the client's own quota.
    /// let layer = sidejob::tower::HttpShedLayer::new(resource)
    ///     .drop_on(|parts| parts.status == http::StatusCode::SERVICE_UNAVAILABLE);
    /// # let _ = layer;
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn drop_on(mut self, drop_on: fn(&Parts) -> bool) -> Self {
        self.drop_on = drop_on;
        self
    }

    /// Gives each request the priority `prioritize` picks from it (a
    /// `Fn(&http::Request<B>) -> Priority`; see
    /// [`Prioritize`](crate::tower::Prioritize)): the permit is then taken
    /// in `call`, so that under overload `Sheddable` routes get their 503s
    /// first and `Critical` ones (health checks) find the slots the others
    /// must leave.
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
    /// let layer = sidejob::tower::HttpShedLayer::new(resource).priority(
    ///     |request: &http::Request<String>| match request.uri().path() {
    ///         "/health" => Priority::Critical,
    ///         path if path.starts_with("/batch") => Priority::Sheddable,
    ///         _ => Priority::Normal,
    ///     },
    /// );
    /// # let _ = layer;
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn priority<F>(self, prioritize: F) -> HttpShedLayer<F> {
        HttpShedLayer {
            resource: self.resource,
            retry_after: self.retry_after,
            drop_on: self.drop_on,
            prioritize,
        }
    }

    /// The shared resource, for its stats.
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(3)?;
    /// assert_eq!(layer.resource().stats().rejected, 0);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }
}

impl<S, P: Clone> Layer<S> for HttpShedLayer<P> {
    type Service = HttpShed<S, P>;

    fn layer(&self, inner: S) -> HttpShed<S, P> {
        HttpShed::new(
            inner,
            Arc::clone(&self.resource),
            self.retry_after.clone(),
            self.drop_on,
            self.prioritize.clone(),
        )
    }
}

impl<P> fmt::Debug for HttpShedLayer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpShedLayer")
            .field("resource", &self.resource)
            .field("retry_after", &self.retry_after)
            .finish()
    }
}
