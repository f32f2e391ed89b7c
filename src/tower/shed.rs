//! [`Shed`]: a service that admits a request only with a permit of the
//! shared resource, and refuses at once without one.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_service::Service;

use super::drop_on_response::{DropOnResponse, NoResponseDrops};
use super::prioritize::{Prioritize, Unprioritized};
use super::readiness::{Decision, Readiness};
use super::response_future::ResponseFuture;
use super::BoxError;
use crate::Resource;

/// A service that holds a permit of its [`Resource`] for each request in
/// flight, and answers [`Overload`](crate::Overload) at once when every
/// shard is full. Made by [`ShedLayer`](super::ShedLayer); see the
/// [module docs](super) for the permit's life.
///
/// A clone shares the resource (and the prioritizer, which must be `Clone`,
/// as closures that capture only `Clone` values are), and starts unreadied:
/// axum and hyper clone the service they are given.
///
/// # Panics
///
/// `call` panics if `poll_ready` did not answer `Ready(Ok(()))` first, as
/// tower's own middleware does.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use tower::{service_fn, Service, ServiceExt};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let resource = Arc::new(sidejob::Resource::new(1));
/// let mut service = sidejob::tower::Shed::new(
///     service_fn(|x: u32| async move { Ok::<_, std::convert::Infallible>(x + 1) }),
///     Arc::clone(&resource),
/// );
/// let held = resource.try_acquire_owned()?; // the only permit
/// let err = service.ready().await?.call(1).await.unwrap_err();
/// assert!(err.is::<sidejob::Overload>());
/// drop(held);
/// assert_eq!(service.ready().await?.call(1).await?, 2);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub struct Shed<S, P = Unprioritized, D = NoResponseDrops> {
    inner: S,
    resource: Arc<Resource>,
    prioritize: P,
    drop_if: fn(&BoxError) -> bool,
    drop_on_response: D,
    readiness: Readiness,
}

/// No inner error is a drop unless `drop_if` says so.
pub(super) fn no_error_is_a_drop(_: &BoxError) -> bool {
    false
}

impl<S> Shed<S> {
    /// Wraps `inner` so that its requests in flight hold permits of
    /// `resource`.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(8));
    /// let service = sidejob::tower::Shed::new(tower::service_fn(|()| async {
    ///     Ok::<_, std::convert::Infallible>(())
    /// }), resource);
    /// assert_eq!(service.resource().capacity(), 8);
    /// ```
    pub fn new(inner: S, resource: Arc<Resource>) -> Self {
        Shed::with_priority(inner, resource, Unprioritized)
    }
}

impl<S, P> Shed<S, P> {
    /// Wraps `inner` like [`new`](Shed::new), giving each request the
    /// priority `prioritize` picks (see [`Prioritize`]): the permit is then
    /// taken in `call`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::{Priority, Resource};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let resource = Arc::new(Resource::builder().capacity(2).share(Priority::Sheddable, 0.5).build()?);
    /// let by_size = |n: &u32| if *n > 100 { Priority::Sheddable } else { Priority::Normal };
    /// let mut service = sidejob::tower::Shed::with_priority(
    ///     service_fn(|n: u32| async move { Ok::<_, std::convert::Infallible>(n) }),
    ///     Arc::clone(&resource),
    ///     by_size,
    /// );
    /// let held = resource.try_acquire_owned()?; // half the capacity in use
    /// assert!(service.ready().await?.call(500).await.unwrap_err().is::<sidejob::Overload>());
    /// assert_eq!(service.ready().await?.call(5).await?, 5);
    /// # drop(held);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn with_priority(inner: S, resource: Arc<Resource>, prioritize: P) -> Self {
        Shed {
            inner,
            resource,
            prioritize,
            drop_if: no_error_is_a_drop,
            drop_on_response: NoResponseDrops,
            readiness: Readiness::new(),
        }
    }

    /// Tells which of the inner service's *responses* are drops for an
    /// adaptive resource (see [`ShedLayer::drop_on_response`](super::ShedLayer::drop_on_response)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::{adaptive::Adaptive, Resource};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let resource = Arc::new(Resource::builder().capacity(8).adaptive(Adaptive::aimd()).build()?);
    /// // A dependency that answers "busy" rather than failing.
    /// let mut client = sidejob::tower::Shed::new(
    ///     service_fn(|()| async { Ok::<_, std::convert::Infallible>("busy") }),
    ///     Arc::clone(&resource),
    /// )
    /// .drop_on_response(|answer: &&str| *answer == "busy");
    /// assert_eq!(client.ready().await?.call(()).await?, "busy");
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn drop_on_response<D>(self, drop_on_response: D) -> Shed<S, P, D> {
        Shed {
            inner: self.inner,
            resource: self.resource,
            prioritize: self.prioritize,
            drop_if: self.drop_if,
            drop_on_response,
            readiness: self.readiness,
        }
    }
}

impl<S, P, D> Shed<S, P, D> {
    /// Tells which of the inner service's errors are *drops* for an
    /// adaptive resource: the request failed from overload downstream (a
    /// timeout, an [`Overload`](crate::Overload) from the next hop), and
    /// the limit backs off. Other errors release the permit with no
    /// latency sample; so do all of them without this.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sidejob::{adaptive::Adaptive, Resource};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let resource = Arc::new(Resource::builder().capacity(4).adaptive(Adaptive::aimd()).build()?);
    /// let mut service = sidejob::tower::Shed::new(
    ///     service_fn(|()| async { Err::<(), _>(sidejob::Overload) }), // the next hop refused
    ///     Arc::clone(&resource),
    /// )
    /// .drop_if(|error| error.is::<sidejob::Overload>());
    /// assert!(service.ready().await?.call(()).await.is_err());
    /// assert_eq!(resource.usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn drop_if(mut self, drop_if: fn(&BoxError) -> bool) -> Self {
        self.drop_if = drop_if;
        self
    }

    /// The shared resource.
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = sidejob::tower::ShedLayer::with_capacity(2)?;
    /// let service = tower::Layer::layer(&layer, tower::service_fn(|()| async {
    ///     Ok::<_, std::convert::Infallible>(())
    /// }));
    /// assert!(std::sync::Arc::ptr_eq(service.resource(), layer.resource()));
    /// # Ok::<(), sidejob::BuildError>(())
    /// ```
    pub fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }

    /// The wrapped service.
    ///
    /// # Examples
    ///
    /// ```
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(1));
    /// let service = sidejob::tower::Shed::new("inner", resource);
    /// assert_eq!(*service.get_ref(), "inner");
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, P, D, Request> Service<Request> for Shed<S, P, D>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
    P: Prioritize<Request>,
    D: DropOnResponse<S::Response> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, D>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        let inner = &mut self.inner;
        self.readiness
            .poll_ready(&self.resource, P::AT_CALL, || inner.poll_ready(cx))
            .map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        let prioritize = &self.prioritize;
        let decision = self
            .readiness
            .take_for_call("Shed", &self.resource, || prioritize.priority(&request));
        match decision {
            Decision::Admitted(permit) => ResponseFuture::admitted(
                self.inner.call(request),
                permit,
                self.drop_if,
                self.drop_on_response.clone(),
            ),
            Decision::Overloaded => ResponseFuture::overloaded(),
        }
    }
}

impl<S: Clone, P: Clone, D: Clone> Clone for Shed<S, P, D> {
    /// A clone shares the resource and the prioritizer, and starts
    /// unreadied: a permit is never copied.
    fn clone(&self) -> Self {
        Shed::with_priority(
            self.inner.clone(),
            Arc::clone(&self.resource),
            self.prioritize.clone(),
        )
        .drop_if(self.drop_if)
        .drop_on_response(self.drop_on_response.clone())
    }
}

/// For every prioritizer: a closure has no `Debug`, so it is left out.
impl<S: fmt::Debug, P, D> fmt::Debug for Shed<S, P, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shed")
            .field("inner", &self.inner)
            .field("resource", &self.resource)
            .field("readiness", &self.readiness)
            .finish()
    }
}
