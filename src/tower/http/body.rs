//! [`PermitBody`]: a response body that holds its request's permit until it
//! has streamed.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::sync::atomic::{AtomicBool, Ordering};

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::tower::in_flight::InFlight;

pin_project! {
    /// The body of a response an [`HttpShed`](super::HttpShed) admitted:
    /// the inner body, holding the request's permit until `poll_frame`
    /// returns `None` (the body has ended) or the body is dropped, so a
    /// streaming response counts as in flight while it streams. A 503's
    /// body holds none. Over an adaptive resource, a body that ends (or is
    /// dropped once its inner body says it has ended) closes the request's
    /// latency sample; one dropped before its end is no sample.
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
        #[pin]
        inner: B,
        in_flight: InFlight,
        // Set when `is_end_stream` answered `true`: a server that saw that
        // drops the body without polling it to its end (hyper does, for a
        // body that is whole at once), and the drop then ends the sample.
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

impl<B> PermitBody<B> {
    pub(super) fn new(inner: B, in_flight: InFlight) -> Self {
        PermitBody {
            inner,
            in_flight,
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

    /// The inner body.
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
    /// assert_eq!(response.body().get_ref(), "text");
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn get_ref(&self) -> &B {
        &self.inner
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
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        match &polled {
            // The body has ended: the request is no longer in flight.
            Poll::Ready(None) => this.in_flight.finish(),
            Poll::Ready(Some(_)) if this.inner.is_end_stream() => this.in_flight.finish(),
            _ => {}
        }
        polled
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        let ended = self.inner.is_end_stream();
        if ended {
            // Relaxed: read back by the drop on the thread that owns the body.
            self.seen_ended.store(true, Ordering::Relaxed);
        }
        ended
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B: Default> Default for PermitBody<B> {
    fn default() -> Self {
        PermitBody::new(B::default(), InFlight::none())
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
