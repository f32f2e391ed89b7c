//! [`HttpResponseFuture`]: the inner response with its body wrapped to hold
//! the permit, or a 503 at once.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{header, response::Parts, HeaderValue, Response, StatusCode};
use pin_project_lite::pin_project;

use super::body::PermitBody;
use super::upgrade::{Asked, Held};

/// Responses that tell of overload downstream: `503 Service Unavailable`,
/// `429 Too Many Requests` and `504 Gateway Timeout`.
pub(super) fn overload_status(parts: &Parts) -> bool {
    matches!(
        parts.status,
        StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::TOO_MANY_REQUESTS
            | StatusCode::GATEWAY_TIMEOUT
    )
}

pin_project! {
    /// The future of an [`HttpShed`](super::HttpShed) call: the inner
    /// response, its body wrapped in a [`PermitBody`] that takes over the
    /// request's permit, or `503 Service Unavailable` at once.
    ///
    /// # Cancel safety
    ///
    /// Dropping it at any point, polled or not, releases the permit (with
    /// no latency sample, over an adaptive resource).
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
            held: Held,
            asked: Asked,
            drop_on: fn(&Parts) -> bool,
        },
        Overloaded {
            retry_after: Option<HeaderValue>,
        },
    }
}

impl<F> HttpResponseFuture<F> {
    pub(super) fn admitted(
        future: F,
        held: Held,
        asked: Asked,
        drop_on: fn(&Parts) -> bool,
    ) -> Self {
        HttpResponseFuture {
            kind: Kind::Admitted {
                future,
                held,
                asked,
                drop_on,
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

/// The length a response's `Content-Length` declares; `None` when it has
/// none (the body's exact size hint is read at its first frame) or one that
/// is no length.
#[inline]
fn declared_length<B>(response: &Response<B>) -> Option<u64> {
    let headers = response.headers();
    if headers.is_empty() {
        // Cheaper than the lookup, which hashes the name first.
        return None;
    }
    let value = headers.get(header::CONTENT_LENGTH)?;
    // Digits only, as RFC 9110 writes it, read in place: this runs for
    // every response.
    let digits = value.as_bytes();
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |length, &digit| {
        digit
            .is_ascii_digit()
            .then(|| length * 10 + u64::from(digit - b'0'))
    })
}

impl<F, B, E> Future for HttpResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<PermitBody<B>>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProjection::Admitted {
                future,
                held,
                asked,
                drop_on,
            } => {
                let output = std::task::ready!(future.poll(cx));
                // From here on the permit is this call's to release.
                let mut in_flight = held.take();
                let response = match output {
                    Ok(response) => response,
                    Err(error) => {
                        // No answer from downstream: a censored sample.
                        in_flight.fail(false);
                        return Poll::Ready(Err(error));
                    }
                };
                let length = declared_length(&response);
                let at_head = length == Some(0) || asked.ends_at_head(response.status());
                if !in_flight.adapts() {
                    // No limit to tell: the response need not be taken apart.
                    if at_head {
                        in_flight.finish();
                    }
                    return Poll::Ready(Ok(
                        response.map(|body| PermitBody::new(body, in_flight, length))
                    ));
                }
                let (parts, body) = response.into_parts();
                if drop_on(&parts) {
                    in_flight.mark_dropped();
                }
                if at_head {
                    // No body follows: the request ends with its head.
                    in_flight.finish();
                }
                // The body takes the permit over.
                let body = PermitBody::new(body, in_flight, length);
                Poll::Ready(Ok(Response::from_parts(parts, body)))
            }
            KindProjection::Overloaded { retry_after } => {
                let mut response = Response::new(PermitBody::empty());
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
            Kind::Admitted { held, .. } if held.holds() => "admitted",
            Kind::Admitted { .. } => "completed",
            Kind::Overloaded { .. } => "overloaded",
        };
        f.debug_struct("HttpResponseFuture")
            .field("state", &state)
            .finish()
    }
}
