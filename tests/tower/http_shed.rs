//! The HTTP flavour (#17): overload is a `503 Service Unavailable` with
//! `Retry-After`, the inner error type is kept, and a streaming response's
//! body holds its permit until it ends or is dropped.
#![cfg(feature = "http")]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use sidejob::tower::HttpShedLayer;
use tower::{service_fn, Layer, ServiceExt};

/// A body of a few chunks, then its end.
#[derive(Default)]
struct Chunks(VecDeque<&'static str>);

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(
            self.0
                .pop_front()
                .map(|chunk| Ok(Frame::data(Bytes::from(chunk)))),
        )
    }
}

fn chunked(
    layer: &HttpShedLayer,
) -> impl tower::Service<
    Request<()>,
    Response = Response<sidejob::tower::PermitBody<Chunks>>,
    Error = Infallible,
    Future = impl Send,
> + Clone {
    layer.layer(service_fn(|_: Request<()>| async {
        Ok::<_, Infallible>(Response::new(Chunks(VecDeque::from(["a", "b", "c"]))))
    }))
}

#[tokio::test]
async fn overload_is_a_503_with_retry_after_and_an_empty_body() {
    let layer = HttpShedLayer::with_capacity(1)
        .unwrap()
        .retry_after(Duration::from_millis(2500));
    let held = layer.resource().try_acquire_owned().unwrap();
    let response = chunked(&layer).oneshot(Request::new(())).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[http::header::RETRY_AFTER], "3");
    assert!(!response.body().holds_permit());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.is_empty());
    assert_eq!(layer.resource().stats().rejected, 1);
    drop(held);
}

#[tokio::test]
async fn the_default_retry_after_is_one_second() {
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let _held = layer.resource().try_acquire_owned().unwrap();
    let response = chunked(&layer).oneshot(Request::new(())).await.unwrap();
    assert_eq!(response.headers()[http::header::RETRY_AFTER], "1");
}

#[tokio::test]
async fn a_streaming_body_holds_its_permit_until_it_ends() {
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let response = chunked(&layer).oneshot(Request::new(())).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), "a");
    assert_eq!(layer.resource().usage(), 1, "still streaming");
    assert!(body.holds_permit());
    // A second request meanwhile is refused: the stream counts.
    let refused = chunked(&layer).oneshot(Request::new(())).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    while body.frame().await.is_some() {}
    assert!(!body.holds_permit());
    assert_eq!(layer.resource().usage(), 0, "released at the end");
}

#[tokio::test]
async fn a_body_dropped_mid_stream_releases_its_permit() {
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let response = chunked(&layer).oneshot(Request::new(())).await.unwrap();
    let mut body = response.into_body();
    body.frame().await.unwrap().unwrap();
    assert_eq!(layer.resource().usage(), 1);
    drop(body);
    assert_eq!(layer.resource().usage(), 0);
}

#[tokio::test]
async fn the_inner_error_type_is_kept_and_releases_the_permit() {
    #[derive(Debug, PartialEq)]
    struct Teapot;
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let service = layer.layer(service_fn(|_: Request<()>| async {
        Err::<Response<String>, Teapot>(Teapot)
    }));
    let error = service.oneshot(Request::new(())).await.unwrap_err();
    assert_eq!(error, Teapot);
    assert_eq!(layer.resource().usage(), 0);
}
