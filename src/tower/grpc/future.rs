//! [`GrpcResponseFuture`]: the inner response with its body wrapped to hold
//! the permit, or a trailers-only refusal at once.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{header, HeaderValue, Response};
use pin_project_lite::pin_project;

use super::body::GrpcPermitBody;
use super::code::{GrpcCode, GrpcCodes};
use crate::tower::in_flight::InFlight;

/// The headers of a refusal, made once by the layer: a trailers-only
/// response is its head alone.
#[derive(Debug, Clone)]
pub(super) struct Refusal {
    pub(super) status: HeaderValue,
    pub(super) message: HeaderValue,
    pub(super) pushback: HeaderValue,
}

impl Refusal {
    /// `200`, `content-type: application/grpc` and the status, message and
    /// pushback: what gRPC calls a trailers-only response.
    #[cold]
    fn respond<B>(self) -> Response<GrpcPermitBody<B>> {
        let mut response = Response::new(GrpcPermitBody::empty());
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        headers.insert("grpc-status", self.status);
        headers.insert("grpc-message", self.message);
        headers.insert("grpc-retry-pushback-ms", self.pushback);
        response
    }
}

pin_project! {
    /// The future of a [`GrpcShed`](super::GrpcShed) call: the inner
    /// response, its body wrapped in a [`GrpcPermitBody`] that takes over
    /// the call's permit, or a trailers-only refusal at once.
    ///
    /// # Cancel safety
    ///
    /// Dropping it at any point, polled or not, releases the permit (a
    /// censored sample, over an adaptive resource).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use http::{Request, Response};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::GrpcShedLayer::with_capacity(1)?;
    /// let mut service = tower::Layer::layer(&layer, service_fn(|_: Request<()>| async {
    ///     Ok::<_, Infallible>(Response::new(()))
    /// }));
    /// let future = service.ready().await?.call(Request::new(()));
    /// drop(future);
    /// assert_eq!(layer.resource().usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
    pub struct GrpcResponseFuture<F> {
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
            in_flight: InFlight,
            drop_on: GrpcCodes,
        },
        Refused {
            refusal: Option<Refusal>,
        },
    }
}

impl<F> GrpcResponseFuture<F> {
    pub(super) fn admitted(future: F, in_flight: InFlight, drop_on: GrpcCodes) -> Self {
        GrpcResponseFuture {
            kind: Kind::Admitted {
                future,
                in_flight,
                drop_on,
            },
        }
    }

    pub(super) fn refused(refusal: Refusal) -> Self {
        GrpcResponseFuture {
            kind: Kind::Refused {
                refusal: Some(refusal),
            },
        }
    }
}

impl<F, B, E> Future for GrpcResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<GrpcPermitBody<B>>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProjection::Admitted {
                future,
                in_flight,
                drop_on,
            } => {
                let output = std::task::ready!(future.poll(cx));
                // From here on the permit is this call's to release.
                let mut in_flight = in_flight.hand_on();
                let response = match output {
                    Ok(response) => response,
                    Err(error) => {
                        // No answer from downstream: a censored sample.
                        in_flight.fail(false);
                        return Poll::Ready(Err(error));
                    }
                };
                let trailers_drop_on = judge_head(&response, &mut in_flight, *drop_on);
                Poll::Ready(Ok(
                    response.map(|body| GrpcPermitBody::new(body, in_flight, trailers_drop_on))
                ))
            }
            KindProjection::Refused { refusal } => {
                let refusal = refusal
                    .take()
                    .expect("GrpcResponseFuture polled after completion");
                Poll::Ready(Ok(refusal.respond()))
            }
        }
    }
}

/// What a response's head tells; the codes that are drops in its trailers,
/// if it has any to judge. A trailers-only response (its `grpc-status` in
/// the head) ends the call here, a drop if its code is one of `drop_on`:
/// no message follows. A head that is not `200` (from a proxy) decides
/// the call's status by itself (gRPC's HTTP/2 protocol: the status a
/// client sees is the one its HTTP status maps to), so its trailers, if
/// any, are not judged again; it is a drop if that code is one of
/// `drop_on`. Only an adaptive resource has drops to hear of.
#[inline]
fn judge_head<B>(
    response: &Response<B>,
    in_flight: &mut InFlight,
    drop_on: GrpcCodes,
) -> GrpcCodes {
    if let Some(code) = GrpcCode::of_headers(response.headers()) {
        if drop_on.contains(code) && in_flight.adapts() {
            in_flight.mark_dropped();
        }
        in_flight.finish();
        return GrpcCodes::none();
    }
    match GrpcCode::from_http_status(response.status()) {
        None => drop_on,
        Some(code) => {
            if drop_on.contains(code) && in_flight.adapts() {
                in_flight.mark_dropped();
            }
            GrpcCodes::none()
        }
    }
}

impl<F> fmt::Debug for GrpcResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Admitted { in_flight, .. } if in_flight.holds() => "admitted",
            Kind::Admitted { .. } => "completed",
            Kind::Refused { .. } => "refused",
        };
        f.debug_struct("GrpcResponseFuture")
            .field("state", &state)
            .finish()
    }
}
