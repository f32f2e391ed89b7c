//! [`ResponseFuture`]: the inner service's future with the request's permit,
//! or an immediate refusal.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::drop_on_response::{DropOnResponse, NoResponseDrops};
use super::in_flight::InFlight;
use super::BoxError;
use crate::{Overload, OwnedPermit};

pin_project! {
    /// The future of a [`Shed`](super::Shed) call: the inner service's
    /// response, holding the request's permit until it completes or is
    /// dropped, or [`Overload`] at once.
    ///
    /// # Cancel safety
    ///
    /// Dropping it at any point, polled or not, releases the permit (with
    /// no latency sample, over an adaptive resource).
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
    pub struct ResponseFuture<F, D = NoResponseDrops> {
        #[pin]
        kind: Kind<F, D>,
    }
}

pin_project! {
    #[project = KindProjection]
    enum Kind<F, D> {
        Admitted {
            #[pin]
            future: F,
            in_flight: InFlight,
            drop_if: fn(&BoxError) -> bool,
            drop_on_response: D,
        },
        Overloaded,
    }
}

impl<F, D> ResponseFuture<F, D> {
    pub(super) fn admitted(
        future: F,
        permit: OwnedPermit,
        drop_if: fn(&BoxError) -> bool,
        drop_on_response: D,
    ) -> Self {
        ResponseFuture {
            kind: Kind::Admitted {
                future,
                in_flight: InFlight::start(permit),
                drop_if,
                drop_on_response,
            },
        }
    }

    pub(super) fn overloaded() -> Self {
        ResponseFuture {
            kind: Kind::Overloaded,
        }
    }
}

impl<F, T, E, D> Future for ResponseFuture<F, D>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    D: DropOnResponse<T>,
{
    type Output = Result<T, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProjection::Admitted {
                future,
                in_flight,
                drop_if,
                drop_on_response,
            } => {
                let output = std::task::ready!(future.poll(cx));
                // Done: the request is no longer in flight.
                match output {
                    Ok(response) => {
                        if D::CHECKS && in_flight.adapts() && drop_on_response.is_drop(&response) {
                            // An answer that says overload downstream.
                            in_flight.fail(true);
                        } else {
                            in_flight.finish();
                        }
                        Poll::Ready(Ok(response))
                    }
                    Err(error) => {
                        let error = error.into();
                        in_flight.fail(drop_if(&error));
                        Poll::Ready(Err(error))
                    }
                }
            }
            KindProjection::Overloaded => Poll::Ready(Err(Box::new(Overload))),
        }
    }
}

impl<F, D> fmt::Debug for ResponseFuture<F, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Admitted { in_flight, .. } if in_flight.holds() => "admitted",
            Kind::Admitted { .. } => "completed",
            Kind::Overloaded => "overloaded",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}
