//! [`ShedLayer`]: makes [`Shed`] services that share one resource.

use std::fmt;
use std::sync::Arc;

use tower_layer::Layer;

use super::drop_on_response::NoResponseDrops;
use super::prioritize::Unprioritized;
use super::shed::{no_error_is_a_drop, Shed};
use super::BoxError;
use crate::{BuildError, Resource};

/// A tower [`Layer`] whose services refuse at once, with
/// [`Overload`](crate::Overload), when the requests in flight fill the
/// resource. Every service it makes, and every clone of one, shares the one
/// [`Resource`]: the bound is global across routes and clones.
///
/// # Examples
///
/// ```
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let layer = sidejob::tower::ShedLayer::with_capacity(64)?;
/// let service = layer.layer(service_fn(|name: String| async move {
///     Ok::<_, std::convert::Infallible>(format!("hello, {name}"))
/// }));
/// assert_eq!(service.oneshot(String::from("you")).await?, "hello, you");
/// assert_eq!(layer.resource().stats().accepted, 1);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
#[derive(Clone)]
pub struct ShedLayer<P = Unprioritized, D = NoResponseDrops> {
    resource: Arc<Resource>,
    prioritize: P,
    drop_if: fn(&BoxError) -> bool,
    drop_on_response: D,
}

impl ShedLayer {
    /// A layer over `resource`, which its services share with whoever else
    /// holds it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let resource = Arc::new(sidejob::Resource::new(100));
    /// let layer = sidejob::tower::ShedLayer::new(Arc::clone(&resource));
    /// assert!(Arc::ptr_eq(layer.resource(), &resource));
    /// ```
    pub fn new(resource: Arc<Resource>) -> Self {
        ShedLayer {
            resource,
            prioritize: Unprioritized,
            drop_if: no_error_is_a_drop,
            drop_on_response: NoResponseDrops,
        }
    }

    /// A layer over a new resource of `capacity` requests in flight, one
    /// shard per CPU.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming `capacity` when the shards cannot hold it.
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = sidejob::tower::ShedLayer::with_capacity(10)?;
    /// assert_eq!(layer.resource().capacity(), 10);
    /// let err = sidejob::tower::ShedLayer::with_capacity(usize::MAX).unwrap_err();
    /// assert_eq!(err.setting(), "capacity");
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn with_capacity(capacity: usize) -> Result<Self, BuildError> {
        let resource = Resource::builder().capacity(capacity).build()?;
        Ok(ShedLayer::new(Arc::new(resource)))
    }
}

impl<D> ShedLayer<Unprioritized, D> {
    /// Gives each request the priority `prioritize` picks (a
    /// `Fn(&Request) -> Priority`; see [`Prioritize`](super::Prioritize)):
    /// its services then take the permit in `call`, with that request's
    /// priority, so that under overload the priorities below `Critical`
    /// are refused once their [share](crate::ResourceBuilder::share) of the
    /// capacity is in use.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::{Priority, Resource};
    /// use tower::{service_fn, Layer, Service, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let resource = Arc::new(Resource::builder().capacity(1).share(Priority::Normal, 0.5).build()?);
    /// let layer = sidejob::tower::ShedLayer::new(resource)
    ///     .priority(|name: &String| if name == "health" { Priority::Critical } else { Priority::Normal });
    /// let mut service = layer.layer(service_fn(|name: String| async move {
    ///     Ok::<_, std::convert::Infallible>(name)
    /// }));
    /// // ⌊0.5 × 1⌋ = 0 slots for normal requests; the one slot is critical's.
    /// assert!(service.ready().await?.call("work".into()).await.is_err());
    /// assert_eq!(service.ready().await?.call("health".into()).await?, "health");
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn priority<F>(self, prioritize: F) -> ShedLayer<F, D> {
        ShedLayer {
            resource: self.resource,
            prioritize,
            drop_if: self.drop_if,
            drop_on_response: self.drop_on_response,
        }
    }
}

impl<P> ShedLayer<P> {
    /// Tells which *responses* are drops for an adaptive resource, for
    /// every service the layer makes: `drop_on_response` (a
    /// `Fn(&Response) -> bool`; see [`DropOnResponse`](super::DropOnResponse))
    /// says whether an answer tells of overload downstream. For a client's
    /// outbound calls, whose dependency answers overload as a response: a
    /// `503`, a `429`, a gRPC `RESOURCE_EXHAUSTED`
    /// ([`is_overload_response`](super::is_overload_response) reads those
    /// from an `http::Response`). A drop backs the limit off; its hold time
    /// is no latency sample.
    ///
    /// The permit is released when the response's head arrives (the
    /// future completes); a layer whose permit must last until the body
    /// has streamed is [`HttpShedLayer`](super::HttpShedLayer), with its
    /// own [`drop_on`](super::HttpShedLayer::drop_on).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use http::{Response, StatusCode};
    /// use sidejob::{adaptive::Adaptive, Resource};
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let resource = Arc::new(Resource::builder().capacity(8).adaptive(Adaptive::aimd()).build()?);
    /// // Around a client: the dependency's 503 is an `Ok` response, and a drop.
    /// let layer = sidejob::tower::ShedLayer::new(Arc::clone(&resource))
    ///     .drop_on_response(sidejob::tower::is_overload_response);
    /// let client = layer.layer(service_fn(|_: ()| async {
    ///     let busy = Response::builder().status(StatusCode::SERVICE_UNAVAILABLE).body(())?;
    ///     Ok::<_, http::Error>(busy)
    /// }));
    /// let answer = client.oneshot(()).await?;
    /// assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn drop_on_response<D>(self, drop_on_response: D) -> ShedLayer<P, D> {
        ShedLayer {
            resource: self.resource,
            prioritize: self.prioritize,
            drop_if: self.drop_if,
            drop_on_response,
        }
    }
}

impl<P, D> ShedLayer<P, D> {
    /// The shared resource: its stats count the requests admitted, refused
    /// and in flight.
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = sidejob::tower::ShedLayer::with_capacity(4)?;
    /// assert_eq!(layer.resource().usage(), 0);
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }

    /// Tells which inner errors are drops for an adaptive resource, for
    /// every service the layer makes (see [`Shed::drop_if`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::{adaptive::Adaptive, Resource};
    ///
    /// let resource = Arc::new(Resource::builder().capacity(64).adaptive(Adaptive::gradient()).build()?);
    /// let layer = sidejob::tower::ShedLayer::new(resource)
    ///     .drop_if(|error| error.is::<sidejob::Overload>()); // the next hop shed it
    /// # let _ = layer;
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn drop_if(mut self, drop_if: fn(&BoxError) -> bool) -> Self {
        self.drop_if = drop_if;
        self
    }
}

impl<S, P: Clone, D: Clone> Layer<S> for ShedLayer<P, D> {
    type Service = Shed<S, P, D>;

    fn layer(&self, inner: S) -> Shed<S, P, D> {
        Shed::with_priority(inner, Arc::clone(&self.resource), self.prioritize.clone())
            .drop_if(self.drop_if)
            .drop_on_response(self.drop_on_response.clone())
    }
}

impl<P, D> fmt::Debug for ShedLayer<P, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShedLayer")
            .field("resource", &self.resource)
            .finish()
    }
}
