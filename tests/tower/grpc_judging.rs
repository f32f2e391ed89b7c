//! What `GrpcShed` reads from a response, found by the review of #43: one
//! call is one drop, even when a head that is not `200` is followed by
//! trailers with an overload status; a trailers-only response ends its
//! call at its head, over any resource. Bodies written by hand, so each
//! frame is known.
#![cfg(feature = "grpc")]

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::support::adaptive_window::{aimd_for_calls, close_call_window as close};
use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use sidejob::tower::GrpcShedLayer;
use tower::{service_fn, Layer, ServiceExt};

/// One message, then trailers with `grpc-status: 14`, from frame `.0` on.
#[derive(Default)]
struct Answer(u8);

impl Body for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0 += 1;
        Poll::Ready(match self.0 {
            1 => Some(Ok(Frame::data(Bytes::from_static(b"\0\0\0\0\0")))),
            2 => {
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", http::HeaderValue::from_static("14"));
                Some(Ok(Frame::trailers(trailers)))
            }
            _ => None,
        })
    }
}

#[tokio::test]
async fn a_503_head_then_overload_trailers_is_one_drop() {
    let resource = aimd_for_calls(8);
    close(&resource).await;
    let before = resource.adaptive_stats().unwrap().drops;
    let service =
        GrpcShedLayer::new(Arc::clone(&resource)).layer(service_fn(|_: http::Request<()>| async {
            let mut response = http::Response::new(Answer::default());
            *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            Ok::<_, Infallible>(response)
        }));
    let response = service.oneshot(http::Request::new(())).await.unwrap();
    let collected = response.into_body().collect().await.unwrap();
    assert_eq!(collected.trailers().unwrap()["grpc-status"], "14");
    assert_eq!(resource.usage(), 0);
    close(&resource).await;
    let drops = resource.adaptive_stats().unwrap().drops - before;
    assert_eq!(drops, 1, "one call, counted as {drops} drops");
}

#[tokio::test]
async fn a_trailers_only_answer_ends_its_call_at_its_head_over_any_resource() {
    let layer = GrpcShedLayer::with_capacity(1).unwrap();
    let service = layer.layer(service_fn(|_: http::Request<()>| async {
        let response = http::Response::builder()
            .header("content-type", "application/grpc")
            .header("grpc-status", "0")
            .body(Answer(2)) // no frame left
            .unwrap();
        Ok::<_, Infallible>(response)
    }));
    let response = service.oneshot(http::Request::new(())).await.unwrap();
    assert!(!response.body().holds_permit());
    assert_eq!(layer.resource().usage(), 0);
}
