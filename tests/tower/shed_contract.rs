//! The `Shed` service contract (#17), against tower-test's mock: a permit is
//! taken in `poll_ready` before the inner service is polled, kept while it
//! is pending, released on an inner error, moved into the response future
//! and released when that completes or is dropped; overload answers at
//! once without reaching the inner service.
#![cfg(feature = "tower")]

use std::sync::Arc;
use std::task::Poll;

use sidejob::tower::{Shed, ShedLayer};
use sidejob::{Overload, Resource};
use tower::Layer;
use tower_test::mock::{self, Handle, Spawn};

type Service = Spawn<Shed<mock::Mock<&'static str, &'static str>>>;

/// A `Shed` over the mock, with a resource of `capacity`.
fn shed(capacity: usize) -> (Service, Handle<&'static str, &'static str>, Arc<Resource>) {
    let layer = ShedLayer::with_capacity(capacity).unwrap();
    let (inner, handle) = mock::pair();
    let resource = Arc::clone(layer.resource());
    (Spawn::new(layer.layer(inner)), handle, resource)
}

fn ready(service: &mut Service) {
    match service.poll_ready() {
        Poll::Ready(Ok(())) => {}
        other => panic!(
            "not ready: {:?}",
            other.map(|r| r.map_err(|e| e.to_string()))
        ),
    }
}

#[tokio::test]
async fn ready_then_call_then_complete() {
    let (mut service, mut handle, resource) = shed(2);
    ready(&mut service);
    assert_eq!(resource.usage(), 1, "the permit is taken in poll_ready");
    let response = service.call("ping");
    let (request, reply) = handle.next_request().await.unwrap();
    assert_eq!(request, "ping");
    assert_eq!(resource.usage(), 1, "in flight");
    reply.send_response("pong");
    assert_eq!(response.await.unwrap(), "pong");
    assert_eq!(resource.usage(), 0);
    assert_eq!(resource.stats().accepted, 1);
}

#[tokio::test]
async fn overload_answers_at_once_without_the_inner_service() {
    let (mut service, mut handle, resource) = shed(1);
    // The inner service is not ready: an admitted request would wait.
    handle.allow(0);
    let held = resource.try_acquire_owned().unwrap();
    // Still ready: a full resource never makes the service pending.
    ready(&mut service);
    let error = service.call("refused").await.unwrap_err();
    assert!(error.is::<Overload>(), "{error}");
    assert_eq!(resource.stats().rejected, 1);
    // The inner service never saw it.
    assert!(matches!(handle.poll_request(), Poll::Pending));
    drop(held);
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn a_pending_inner_service_keeps_the_permit() {
    let (mut service, mut handle, resource) = shed(1);
    handle.allow(0);
    assert!(service.poll_ready().is_pending());
    assert_eq!(resource.usage(), 1, "waiting for the inner service counts");
    assert!(resource.try_acquire().is_err());
    handle.allow(1);
    assert!(service.is_woken());
    ready(&mut service);
    assert_eq!(resource.usage(), 1, "the same permit, not a second");
    let response = service.call("late");
    let (_, reply) = handle.next_request().await.unwrap();
    reply.send_response("done");
    response.await.unwrap();
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn an_inner_readiness_error_releases_the_permit() {
    let (mut service, mut handle, resource) = shed(1);
    handle.send_error("broken");
    match service.poll_ready() {
        Poll::Ready(Err(error)) => assert_eq!(error.to_string(), "broken"),
        _ => panic!("the inner error is passed on"),
    }
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn an_inner_call_error_releases_the_permit() {
    let (mut service, mut handle, resource) = shed(1);
    ready(&mut service);
    let response = service.call("fails");
    let (_, reply) = handle.next_request().await.unwrap();
    reply.send_error("handler failed");
    let error = response.await.unwrap_err();
    assert_eq!(error.to_string(), "handler failed");
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn a_response_future_dropped_unpolled_releases_the_permit() {
    let (mut service, _handle, resource) = shed(1);
    ready(&mut service);
    let response = service.call("never awaited");
    assert_eq!(resource.usage(), 1);
    drop(response);
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn a_readied_service_dropped_without_call_releases_the_permit() {
    let (mut service, _handle, resource) = shed(1);
    ready(&mut service);
    assert_eq!(resource.usage(), 1);
    drop(service);
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn a_clone_starts_unreadied_and_shares_the_bound() {
    let layer = ShedLayer::with_capacity(1).unwrap();
    let (inner, _handle) = mock::pair::<&str, &str>();
    let mut first = Spawn::new(layer.layer(inner));
    ready(&mut first);
    let mut clone = Spawn::new(first.get_ref().clone());
    // The clone holds no permit, and the one permit is taken.
    ready(&mut clone);
    let error = clone.call("second").await.unwrap_err();
    assert!(error.is::<Overload>());
    assert_eq!(layer.resource().usage(), 1);
}

#[tokio::test]
#[should_panic(expected = "poll_ready")]
async fn call_without_poll_ready_panics_naming_it() {
    let (mut service, _handle, _resource) = shed(1);
    drop(service.call("too early"));
}

#[test]
fn a_capacity_past_the_maximum_is_a_build_error() {
    let error = ShedLayer::with_capacity(usize::MAX).unwrap_err();
    assert_eq!(error.setting(), "capacity");
    #[cfg(feature = "http")]
    {
        let error = sidejob::tower::HttpShedLayer::with_capacity(usize::MAX).unwrap_err();
        assert_eq!(error.setting(), "capacity");
    }
}

#[test]
fn layers_services_and_futures_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<ShedLayer>();
    send_sync::<Shed<mock::Mock<String, String>>>();
    send::<sidejob::tower::ResponseFuture<mock::future::ResponseFuture<String>>>();
    #[cfg(feature = "http")]
    send_sync::<sidejob::tower::HttpShedLayer>();
}
