//! [`PermitBody`]: a response body that holds its request's permit until it
//! has streamed.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Buf;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::tower::in_flight::InFlight;

pin_project! {
    /// The body of a response an [`HttpShed`](super::HttpShed) admitted:
    /// the inner body, holding the request's permit until the body has
    /// ended or is dropped, so a streaming response counts as in flight
    /// while it streams. A 503's body holds none.
    ///
    /// The body has ended when `poll_frame` returns `None`, when the inner
    /// body says [`is_end_stream`](Body::is_end_stream), or when its data
    /// frames have carried the length the response declared (its
    /// `Content-Length`, or else the inner body's exact
    /// [`size_hint`](Body::size_hint)): a server stops there and drops
    /// the body without polling it to `None` (hyper 1 does). The length is
    /// counted per data frame. A response that has no body (to a `HEAD`,
    /// a `1xx`, `204` or `304`, a declared length of 0, or a `CONNECT`'s
    /// `2xx`) ends with its head, and its body holds no permit. Over an
    /// adaptive resource, the end (or a drop once the end was seen) closes
    /// the request's latency sample; a body dropped before its end, or
    /// broken off by an error frame, is a censored sample (the request
    /// ended without its whole answer).
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
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(1)?;
    /// let service = tower::Layer::layer(&layer, service_fn(|_: Request<()>| async {
    ///     Ok::<_, Infallible>(Response::new(http_body_util::Full::new(bytes::Bytes::from("hi"))))
    /// }));
    /// let body = service.oneshot(Request::new(())).await?.into_body();
    /// assert_eq!(layer.resource().usage(), 1); // still streaming
    /// let bytes = body.collect().await?.to_bytes(); // read to the end
    /// assert_eq!(bytes, "hi");
    /// assert_eq!(layer.resource().usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub struct PermitBody<B> {
        // `None` for a 503's: no body at all.
        #[pin]
        inner: Option<B>,
        in_flight: InFlight,
        // The bytes of data the declared length still expects.
        remaining: Remaining,
        // Set when `is_end_stream` answered `true`, or `size_hint` an exact
        // 0: a server that saw that drops the body without polling it to
        // its end (hyper does, for a body that is whole at once), and the
        // drop then ends the sample.
        seen_ended: AtomicBool,
    }

    impl<B> PinnedDrop for PermitBody<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if this.seen_ended.load(Ordering::Relaxed) {
                this.in_flight.finish();
            }
        }
    }
}

/// What is left of a response's declared length, in one word: the bytes
/// of data still expected, or one of two marks above any length a body can
/// declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Remaining(u64);

impl Remaining {
    /// No `Content-Length`: the inner body's exact size hint is read at the
    /// first frame.
    const UNREAD: Remaining = Remaining(u64::MAX);
    /// No length is declared: only the body tells its end.
    const UNKNOWN: Remaining = Remaining(u64::MAX - 1);

    /// `length` bytes of data, then the body is over (a length at the marks,
    /// beyond any real body, reads as unknown).
    fn bytes(length: u64) -> Remaining {
        Remaining(length.min(Remaining::UNKNOWN.0))
    }

    /// The bytes still expected, if a length was declared.
    fn expected(self) -> Option<u64> {
        (self.0 < Remaining::UNKNOWN.0).then_some(self.0)
    }
}

impl<B> PermitBody<B> {
    /// `inner`, holding `in_flight` until it ends; `length` is the
    /// response's `Content-Length`, if it has one.
    pub(super) fn new(inner: B, in_flight: InFlight, length: Option<u64>) -> Self {
        PermitBody {
            inner: Some(inner),
            in_flight,
            remaining: length.map_or(Remaining::UNREAD, Remaining::bytes),
            seen_ended: AtomicBool::new(false),
        }
    }

    /// No body, and no permit: a 503's.
    pub(super) fn empty() -> Self {
        PermitBody {
            inner: None,
            in_flight: InFlight::none(),
            remaining: Remaining::UNKNOWN,
            seen_ended: AtomicBool::new(false),
        }
    }

    /// Whether the body still holds its request's permit.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::convert::Infallible;
    /// # use http::{Request, Response};
    /// # use tower::{service_fn, ServiceExt};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(1)?;
    /// let service = tower::Layer::layer(&layer, service_fn(|_: Request<()>| async {
    ///     Ok::<_, Infallible>(Response::new(String::new()))
    /// }));
    /// let response = service.oneshot(Request::new(())).await?;
    /// assert!(response.body().holds_permit());
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn holds_permit(&self) -> bool {
        self.in_flight.holds()
    }

    /// The inner body; `None` for a `503` the layer answered, which has
    /// none.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::convert::Infallible;
    /// # use http::{Request, Response};
    /// # use tower::{service_fn, ServiceExt};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(1)?;
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

impl<B: Body> Body for PermitBody<B> {
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
        if *this.remaining == Remaining::UNREAD {
            // Before the first frame, the whole body's.
            *this.remaining =
                (inner.size_hint().exact()).map_or(Remaining::UNKNOWN, Remaining::bytes);
        }
        let polled = inner.as_mut().poll_frame(cx);
        if !this.in_flight.holds() {
            return polled;
        }
        match &polled {
            // The body has ended: the request is no longer in flight.
            Poll::Ready(None) => this.in_flight.finish(),
            // The body broke off (its server gone): the request ended
            // without its whole answer, a censored sample.
            Poll::Ready(Some(Err(_))) => this.in_flight.fail(false),
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if let Some(expected) = this.remaining.expected() {
                        // Its last byte is out: a server reads no further.
                        let left = expected.saturating_sub(data.remaining() as u64);
                        *this.remaining = Remaining(left);
                        if left == 0 {
                            this.in_flight.finish();
                            return polled;
                        }
                    }
                }
                if inner.is_end_stream() {
                    this.in_flight.finish();
                }
            }
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
        let hint = self
            .inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint);
        if hint.exact() == Some(0) {
            // Nothing more to send (hyper asks before it sends the head, and
            // sends no body then): ended, as for `is_end_stream`.
            self.seen_ended.store(true, Ordering::Relaxed);
        }
        hint
    }
}

impl<B> Default for PermitBody<B> {
    /// No body, and no permit: a 503's.
    fn default() -> Self {
        PermitBody::empty()
    }
}

impl<B: fmt::Debug> fmt::Debug for PermitBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermitBody")
            .field("inner", &self.inner)
            .field("holds_permit", &self.in_flight.holds())
            .finish()
    }
}
