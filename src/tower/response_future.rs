//! [`ResponseFuture`]: the inner service's future with the request's permit,
//! or an immediate refusal.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::BoxError;
use crate::{Overload, OwnedPermit};

pin_project! {
    /// The future of a [`Shed`](super::Shed) call: the inner service's
    /// response, holding the request's permit until it completes or is
    /// dropped, or [`Overload`] at once.
    ///
    /// # Cancel safety
    ///
    /// Dropping it at any point, polled or not, releases the permit.
    ///
    /// # Examples
    ///
    /// ```
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::ShedLayer::with_capacity(1)?;
    /// let mut service = tower::Layer::layer(&layer, service_fn(|()| async {
    ///     Ok::<_, std::convert::Infallible>(())
    /// }));
    /// let future = service.ready().await?.call(());
    /// assert_eq!(layer.resource().usage(), 1); // in flight
    /// drop(future); // never polled: the permit goes back
    /// assert_eq!(layer.resource().usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProjection]
    enum Kind<F> {
        Admitted {
            #[pin]
            future: F,
            permit: Option<OwnedPermit>,
        },
        Overloaded,
    }
}

impl<F> ResponseFuture<F> {
    pub(super) fn admitted(future: F, permit: OwnedPermit) -> Self {
        ResponseFuture {
            kind: Kind::Admitted {
                future,
                permit: Some(permit),
            },
        }
    }

    pub(super) fn overloaded() -> Self {
        ResponseFuture {
            kind: Kind::Overloaded,
        }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProjection::Admitted { future, permit } => {
                let output = std::task::ready!(future.poll(cx));
                // Done: the request is no longer in flight.
                drop(permit.take());
                Poll::Ready(output.map_err(Into::into))
            }
            KindProjection::Overloaded => Poll::Ready(Err(Box::new(Overload))),
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Admitted {
                permit: Some(_), ..
            } => "admitted",
            Kind::Admitted { permit: None, .. } => "completed",
            Kind::Overloaded => "overloaded",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}
