//! [`GrpcPermitBody`]: a gRPC response body that holds its call's permit
//! until its trailers.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::code::{GrpcCode, GrpcCodes};
use crate::tower::in_flight::InFlight;

pin_project! {
    /// The body of a response a [`GrpcShed`](super::GrpcShed) admitted:
    /// the inner body, holding the call's permit until the body has ended
    /// or is dropped, so a streaming call counts as in flight while it
    /// streams, every message and its trailers. A refusal's body, and a
    /// trailers-only response's, hold none.
    ///
    /// The body has ended at its trailers (a gRPC response's last frame:
    /// the server sends them and polls no further), when `poll_frame`
    /// returns `None`, or when the inner body says
    /// [`is_end_stream`](Body::is_end_stream). Over an adaptive resource
    /// the trailers' `grpc-status` tells whether the call was a drop (one
    /// of the layer's [drop codes](super::GrpcShedLayer::drop_on)); the end
    /// closes the call's latency sample otherwise. A body dropped before
    /// its end (the call cancelled) is a censored sample.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use http::{Request, Response};
    /// use http_body_util::BodyExt;
    /// use tower::{service_fn, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::GrpcShedLayer::with_capacity(1)?;
    /// let service = tower::Layer::layer(&layer, service_fn(|_: Request<()>| async {
    ///     let body = http_body_util::Full::new(bytes::Bytes::from_static(b"\0\0\0\0\0"));
    ///     Ok::<_, Infallible>(Response::new(body))
    /// }));
    /// let body = service.oneshot(Request::new(())).await?.into_body();
    /// assert!(body.holds_permit()); // the message is still to stream
    /// body.collect().await?;
    /// assert_eq!(layer.resource().usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
    pub struct GrpcPermitBody<B> {
        // `None` for a refusal: no body at all.
        #[pin]
        inner: Option<B>,
        in_flight: InFlight,
        drop_on: GrpcCodes,
        // Set when `is_end_stream` answered `true`: a server that saw it
        // drops the body without polling it to its end, and the drop then
        // ends the sample.
        seen_ended: AtomicBool,
    }

    impl<B> PinnedDrop for GrpcPermitBody<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if this.seen_ended.load(Ordering::Relaxed) {
                this.in_flight.finish();
            }
        }
    }
}

impl<B> GrpcPermitBody<B> {
    /// `inner`, holding `in_flight` until its end; its trailers' status is
    /// a drop if it is one of `drop_on`.
    pub(super) fn new(inner: B, in_flight: InFlight, drop_on: GrpcCodes) -> Self {
        GrpcPermitBody {
            inner: Some(inner),
            in_flight,
            drop_on,
            seen_ended: AtomicBool::new(false),
        }
    }

    /// No body: a refusal's, which a trailers-only response has.
    pub(super) fn empty() -> Self {
        GrpcPermitBody {
            inner: None,
            in_flight: InFlight::none(),
            drop_on: GrpcCodes::none(),
            seen_ended: AtomicBool::new(false),
        }
    }

    /// Whether the body still holds its call's permit.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::convert::Infallible;
    /// # use http::{Request, Response};
    /// # use tower::{service_fn, ServiceExt};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::GrpcShedLayer::with_capacity(1)?;
    /// let service = tower::Layer::layer(&layer, service_fn(|_: Request<()>| async {
    ///     Ok::<_, Infallible>(Response::new(String::from("a message")))
    /// }));
    /// let response = service.oneshot(Request::new(())).await?;
    /// assert!(response.body().holds_permit());
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn holds_permit(&self) -> bool {
        self.in_flight.holds()
    }

    /// The inner body; `None` for a refusal, which has none.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::convert::Infallible;
    /// # use http::{Request, Response};
    /// # use tower::{service_fn, ServiceExt};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::GrpcShedLayer::with_capacity(1)?;
    /// let service = tower::Layer::layer(&layer, service_fn(|_: Request<()>| async {
    ///     Ok::<_, Infallible>(Response::new(String::from("text")))
    /// }));
    /// let response = service.oneshot(Request::new(())).await?;
    /// assert_eq!(response.body().get_ref().map(String::as_str), Some("text"));
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn get_ref(&self) -> Option<&B> {
        self.inner.as_ref()
    }
}

impl<B: Body> Body for GrpcPermitBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let Some(mut inner) = this.inner.as_pin_mut() else {
            return Poll::Ready(None);
        };
        let polled = inner.as_mut().poll_frame(cx);
        if !this.in_flight.holds() {
            return polled;
        }
        match &polled {
            Poll::Ready(None) => this.in_flight.finish(),
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    // The call's status, and its end: nothing follows
                    // trailers.
                    if GrpcCode::of_headers(trailers)
                        .is_some_and(|code| this.drop_on.contains(code))
                    {
                        this.in_flight.mark_dropped();
                    }
                    this.in_flight.finish();
                } else if inner.is_end_stream() {
                    this.in_flight.finish();
                }
            }
            // The body broke off: the call ended without its status.
            Poll::Ready(Some(Err(_))) => this.in_flight.fail(false),
            Poll::Pending => {}
        }
        polled
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        let ended = self.inner.as_ref().is_none_or(Body::is_end_stream);
        if ended {
            // Relaxed: read back by the drop on the thread that owns the body.
            self.seen_ended.store(true, Ordering::Relaxed);
        }
        ended
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

impl<B> Default for GrpcPermitBody<B> {
    /// No body, and no permit: a refusal's.
    fn default() -> Self {
        GrpcPermitBody::empty()
    }
}

impl<B: fmt::Debug> fmt::Debug for GrpcPermitBody<B> {
    // `inner` is `None` for a refusal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcPermitBody")
            .field("inner", &self.inner)
            .field("holds_permit", &self.in_flight.holds())
            .finish()
    }
}
