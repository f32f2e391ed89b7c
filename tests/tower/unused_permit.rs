//! A permit `poll_ready` reserved and no `call` used is no latency sample
//! of an adaptive resource (#38, 10): the inner service failed to get
//! ready, or the readied service was dropped (a caller that gave up, a
//! router that readied one service and called a clone). Five such services
//! and one sampled release closing the window made 6 samples where 1 was
//! due. The sleeps are the window's time.
#![cfg(feature = "http")]

use crate::support;
use support::adaptive_window::{aimd, close_window};

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use sidejob::tower::{HttpShedLayer, ShedLayer};
use tower::{service_fn, Layer, Service, ServiceExt};

const SERVICES: usize = 5;

/// An inner service that never gets ready.
#[derive(Debug, Clone)]
struct Broken;

impl Service<()> for Broken {
    type Response = ();
    type Error = &'static str;
    type Future = std::future::Ready<Result<(), &'static str>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), &'static str>> {
        Poll::Ready(Err("broken"))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        unreachable!("never ready")
    }
}

#[tokio::test]
async fn a_readied_service_dropped_is_no_sample() {
    let resource = aimd(8);
    let layer = ShedLayer::new(Arc::clone(&resource));
    for _ in 0..SERVICES {
        let mut service = layer.layer(service_fn(|()| async { Ok::<_, Infallible>(()) }));
        service.ready().await.unwrap();
        assert_eq!(resource.usage(), 1); // reserved
        drop(service);
    }
    assert_eq!(resource.usage(), 0);
    close_window(&resource).await;
    assert_eq!(resource.adaptive_stats().unwrap().samples, 1);
}

#[tokio::test]
async fn a_readied_http_service_replaced_by_a_clone_is_no_sample() {
    let resource = aimd(8);
    let layer = HttpShedLayer::new(Arc::clone(&resource));
    let mut service = layer.layer(service_fn(|_: Request<()>| async {
        Ok::<_, Infallible>(Response::new(String::from("hi")))
    }));
    for _ in 0..SERVICES {
        service.ready().await.unwrap();
        // The readied one goes, unused; its clone serves on, unreadied.
        let clone = service.clone();
        let readied = std::mem::replace(&mut service, clone);
        drop(readied);
    }
    assert_eq!(resource.usage(), 0);
    close_window(&resource).await;
    assert_eq!(resource.adaptive_stats().unwrap().samples, 1);
}

#[tokio::test]
async fn an_inner_service_that_fails_to_get_ready_is_no_sample() {
    let resource = aimd(8);
    let mut service = ShedLayer::new(Arc::clone(&resource)).layer(Broken);
    for _ in 0..SERVICES {
        let error = service.ready().await.unwrap_err();
        assert_eq!(error.to_string(), "broken");
    }
    assert_eq!(resource.usage(), 0);
    close_window(&resource).await;
    let stats = resource.adaptive_stats().unwrap();
    assert_eq!((stats.samples, stats.drops), (1, 0));
}
