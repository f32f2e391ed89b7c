//! [`HttpResponseFuture`]: the inner response with its body wrapped to hold
//! the permit, or a 503 at once.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{header, HeaderValue, Response, StatusCode};
use pin_project_lite::pin_project;

use super::body::PermitBody;
use crate::OwnedPermit;

pin_project! {
    /// The future of an [`HttpShed`](super::HttpShed) call: the inner
    /// response, its body wrapped in a [`PermitBody`] that takes over the
    /// request's permit, or `503 Service Unavailable` at once.
    ///
    /// # Cancel safety
    ///
    /// Dropping it at any point, polled or not, releases the permit.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use http::{Request, Response};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(1)?;
    /// let mut service = tower::Layer::layer(&layer, service_fn(|_: Request<()>| async {
    ///     Ok::<_, Infallible>(Response::new(()))
    /// }));
    /// let future = service.ready().await?.call(Request::new(()));
    /// drop(future);
    /// assert_eq!(layer.resource().usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub struct HttpResponseFuture<F> {
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
        Overloaded {
            retry_after: Option<HeaderValue>,
        },
    }
}

impl<F> HttpResponseFuture<F> {
    pub(super) fn admitted(future: F, permit: OwnedPermit) -> Self {
        HttpResponseFuture {
            kind: Kind::Admitted {
                future,
                permit: Some(permit),
            },
        }
    }

    pub(super) fn overloaded(retry_after: HeaderValue) -> Self {
        HttpResponseFuture {
            kind: Kind::Overloaded {
                retry_after: Some(retry_after),
            },
        }
    }
}

impl<F, B, E> Future for HttpResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Default,
{
    type Output = Result<Response<PermitBody<B>>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProjection::Admitted { future, permit } => {
                let output = std::task::ready!(future.poll(cx));
                // The body takes the permit over; an error drops it here.
                let permit = permit.take();
                Poll::Ready(
                    output.map(|response| response.map(|body| PermitBody::new(body, permit))),
                )
            }
            KindProjection::Overloaded { retry_after } => {
                let mut response = Response::new(PermitBody::new(B::default(), None));
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                if let Some(retry_after) = retry_after.take() {
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, retry_after);
                }
                Poll::Ready(Ok(response))
            }
        }
    }
}

impl<F> fmt::Debug for HttpResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Admitted {
                permit: Some(_), ..
            } => "admitted",
            Kind::Admitted { permit: None, .. } => "completed",
            Kind::Overloaded { .. } => "overloaded",
        };
        f.debug_struct("HttpResponseFuture")
            .field("state", &state)
            .finish()
    }
}
