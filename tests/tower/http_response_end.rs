//! `HttpShed` ends a response's permit at the response's end even when the
//! server never polls the body to it (#38, 12): hyper 1 stops reading a
//! body at its `Content-Length` and drops it, and sends no body at all to a
//! `HEAD` or for a `204` or `304`. Served by hyper's own server on
//! 127.0.0.1 over an adaptive resource, such responses are latency samples
//! (on 89ace99, five streamed responses and a closing release gave 1 sample
//! where 6 were due), and a body read to its declared length lets go of the
//! permit while it is still held. The sleeps are the window's time.
#![cfg(feature = "http")]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::support;
use support::adaptive_window::{aimd, close_window};
use support::http::serve_hyper;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use sidejob::tower::HttpShedLayer;
use tower::{service_fn, Layer, ServiceExt};

/// A streamed body: its chunks one frame each, no size hint, and never
/// `is_end_stream` before `poll_frame` has answered `None`.
#[derive(Debug, Default)]
struct Chunks(VecDeque<Bytes>);

impl Chunks {
    fn of(chunks: &[&'static str]) -> Self {
        Chunks(
            chunks
                .iter()
                .map(|chunk| Bytes::from_static(chunk.as_bytes()))
                .collect(),
        )
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|chunk| Ok(Frame::data(chunk))))
    }
}

const CHUNKS: [&str; 3] = ["one ", "two ", "three"];

/// A streamed response that declares its length.
fn streamed(status: StatusCode) -> Response<Chunks> {
    let length: usize = CHUNKS.iter().map(|chunk| chunk.len()).sum();
    Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, length)
        .body(Chunks::of(&CHUNKS))
        .unwrap()
}

/// Answers `/204` and `/304` with that status, anything else with 200; each
/// with a streamed body of a declared length.
async fn handler(request: Request<hyper::body::Incoming>) -> Result<Response<Chunks>, Infallible> {
    Ok(streamed(match request.uri().path() {
        "/204" => StatusCode::NO_CONTENT,
        "/304" => StatusCode::NOT_MODIFIED,
        _ => StatusCode::OK,
    }))
}

#[tokio::test]
async fn streamed_responses_with_a_content_length_are_samples() {
    let resource = aimd(8);
    let layer = HttpShedLayer::new(Arc::clone(&resource));
    let served = serve_hyper(layer.layer(service_fn(handler))).await;
    for _ in 0..5 {
        let (status, body) = served.get("/stream").await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"one two three"[..]));
    }
    close_window(&resource).await;
    assert_eq!(resource.adaptive_stats().unwrap().samples, 6);
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn responses_with_no_body_are_samples_at_their_head() {
    let resource = aimd(8);
    let layer = HttpShedLayer::new(Arc::clone(&resource));
    let served = serve_hyper(layer.layer(service_fn(handler))).await;
    let (status, body) = served.send(Method::HEAD, "/").await;
    assert_eq!((status, body.len()), (StatusCode::OK, 0));
    assert_eq!(served.get("/204").await.0, StatusCode::NO_CONTENT);
    assert_eq!(served.get("/304").await.0, StatusCode::NOT_MODIFIED);
    close_window(&resource).await;
    assert_eq!(resource.adaptive_stats().unwrap().samples, 4);
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn a_body_read_to_its_content_length_lets_go_of_its_permit() {
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let service = layer.layer(service_fn(|_: Request<()>| async {
        Ok::<_, Infallible>(streamed(StatusCode::OK))
    }));
    let mut body = service.oneshot(Request::new(())).await.unwrap().into_body();
    for chunk in CHUNKS {
        assert!(body.holds_permit());
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), chunk);
    }
    // Never polled to `None`, still alive: done at its last declared byte.
    assert!(!body.holds_permit());
    assert_eq!(layer.resource().usage(), 0);
    drop(body);
}
