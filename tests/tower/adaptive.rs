//! The tower layers over an adaptive resource (#29): a request is a latency
//! sample from `call` to the end of its response (for `HttpShed`, of its
//! body, served by a real axum server on 127.0.0.1 to a real hyper
//! client); `HttpShed` counts 503, 429 and 504 as drops, or what `drop_on`
//! says; `Shed` counts an inner error as a drop only if `drop_if` says so;
//! a cancelled or failed request is a censored sample (#38), or a drop
//! past `drop_after` × the baseline, so a stall its clients time out on
//! brings the limit down. The sleeps are the windows' time and the
//! handlers' work.
#![cfg(feature = "http")]

use std::sync::Arc;
use std::time::Duration;

use crate::support;
use support::adaptive_window::{aimd, close_window, WINDOW};
use support::http::serve;

use axum::routing::get;
use axum::Router;
use http::StatusCode;
use sidejob::adaptive::Adaptive;
use sidejob::tower::{HttpShedLayer, Shed};
use sidejob::{Overload, Resource};
use tower::{service_fn, Service, ServiceExt};

#[tokio::test]
async fn shed_samples_from_call_to_completion() {
    let resource = aimd(8);
    let mut service = Shed::new(
        service_fn(|()| async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok::<_, Overload>(())
        }),
        Arc::clone(&resource),
    );
    let ready = service.ready().await.unwrap();
    // A permit taken in `poll_ready` long before `call`: the wait is no part
    // of the request's latency.
    tokio::time::sleep(Duration::from_millis(200)).await;
    ready.call(()).await.unwrap(); // closes the window: 230 ms since it opened
    let stats = resource.adaptive_stats().unwrap();
    assert_eq!(stats.samples, 1);
    assert!(
        stats.latency >= Duration::from_millis(30) && stats.latency < Duration::from_millis(200),
        "{:?}",
        stats.latency
    );
}

#[tokio::test]
async fn shed_counts_an_inner_error_as_a_drop_only_if_drop_if_says_so() {
    let failing = || service_fn(|()| async { Err::<(), _>(Overload) });
    let plain = aimd(20);
    let mut service = Shed::new(failing(), Arc::clone(&plain));
    for _ in 0..5 {
        assert!(service.ready().await.unwrap().call(()).await.is_err());
    }
    close_window(&plain).await;
    let stats = plain.adaptive_stats().unwrap();
    // Failed without an answer: censored samples, not drops.
    assert_eq!((stats.drops, stats.samples), (0, 6));
    assert_eq!(plain.capacity(), 20);

    let dropping = aimd(20);
    let mut service =
        Shed::new(failing(), Arc::clone(&dropping)).drop_if(|error| error.is::<Overload>());
    for _ in 0..5 {
        assert!(service.ready().await.unwrap().call(()).await.is_err());
    }
    close_window(&dropping).await;
    let stats = dropping.adaptive_stats().unwrap();
    assert_eq!((stats.drops, stats.samples), (5, 1));
    assert_eq!(dropping.capacity(), 18); // backed off
    assert_eq!(dropping.usage(), 0);
}

#[tokio::test]
async fn a_cancelled_request_is_a_censored_sample() {
    let resource = aimd(8);
    let mut service = Shed::new(
        service_fn(|()| std::future::pending::<Result<(), Overload>>()),
        Arc::clone(&resource),
    );
    for _ in 0..5 {
        let future = service.ready().await.unwrap().call(());
        let _ = tokio::time::timeout(Duration::from_millis(1), future).await;
    }
    assert_eq!(resource.usage(), 0);
    close_window(&resource).await;
    let stats = resource.adaptive_stats().unwrap();
    // Five censored samples of about 1 ms, and the one that closed the
    // window: the baseline is that one's, the window's mean is theirs.
    assert_eq!((stats.samples, stats.drops), (6, 0));
    assert!(stats.latency > stats.baseline, "{stats:?}");
}

#[tokio::test]
async fn a_stall_its_callers_time_out_on_brings_the_limit_down() {
    let resource = Arc::new(
        Resource::builder()
            .capacity(16)
            .adaptive(Adaptive::gradient().window(WINDOW).min_limit(2))
            .build()
            .unwrap(),
    );
    let stalled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let service = {
        let stalled = Arc::clone(&stalled);
        tower::ServiceBuilder::new()
            .timeout(Duration::from_millis(30))
            .layer(sidejob::tower::ShedLayer::new(Arc::clone(&resource)))
            .service(service_fn(move |()| {
                let stalled = stalled.load(std::sync::atomic::Ordering::Relaxed);
                async move {
                    if stalled {
                        std::future::pending::<()>().await;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Ok::<_, Overload>(())
                }
            }))
    };
    let client = |mut service: tower::timeout::Timeout<_>| async move {
        for _ in 0..400 {
            match service.ready().await {
                Ok(ready) => drop(ready.call(()).await),
                Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
    };
    // 8 callers at 2 ms: the baseline; then the downstream stalls and
    // every call times out after 30 ms.
    let calm: Vec<_> = (0..8)
        .map(|_| tokio::spawn(client(service.clone())))
        .collect();
    for task in calm {
        task.await.unwrap();
    }
    let before = resource.capacity();
    stalled.store(true, std::sync::atomic::Ordering::Relaxed);
    let stall: Vec<_> = (0..8)
        .map(|_| tokio::spawn(client(service.clone())))
        .collect();
    let began = std::time::Instant::now();
    while resource.capacity() > 4 && began.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for task in stall {
        task.abort();
    }
    assert!(
        resource.capacity() <= 4,
        "stayed at {} from {before}: {:?}",
        resource.capacity(),
        resource.adaptive_stats()
    );
}

fn router(layer: HttpShedLayer) -> Router {
    Router::new()
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(30)).await;
                "done"
            }),
        )
        .route(
            "/busy",
            get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "busy") }),
        )
        .route(
            "/limited",
            get(|| async { (StatusCode::TOO_MANY_REQUESTS, "quota") }),
        )
        .route(
            "/late",
            get(|| async { (StatusCode::GATEWAY_TIMEOUT, "late") }),
        )
        .route("/missing", get(|| async { (StatusCode::NOT_FOUND, "no") }))
        .layer(layer)
}

#[tokio::test]
async fn http_shed_samples_served_requests_and_counts_overload_answers_as_drops() {
    let resource = aimd(20);
    let served = serve(router(HttpShedLayer::new(Arc::clone(&resource)))).await;
    for path in ["/busy", "/limited", "/late"] {
        let (status, _) = served.get(path).await;
        assert_ne!(status, StatusCode::OK);
    }
    assert_eq!(served.get("/missing").await.0, StatusCode::NOT_FOUND);
    tokio::time::sleep(WINDOW * 2).await;
    let (status, body) = served.get("/slow").await; // closes the window
    assert_eq!((status, &body[..]), (StatusCode::OK, &b"done"[..]));
    let stats = resource.adaptive_stats().unwrap();
    // The 404 and the 200 are samples; the 200 took its handler's 30 ms.
    assert_eq!((stats.drops, stats.samples), (3, 2));
    assert!(
        stats.latency >= Duration::from_millis(15),
        "{:?}",
        stats.latency
    );
    assert_eq!(resource.capacity(), 18);
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn drop_on_decides_which_answers_are_drops() {
    let resource = aimd(20);
    let layer = HttpShedLayer::new(Arc::clone(&resource))
        .drop_on(|parts| parts.status == StatusCode::SERVICE_UNAVAILABLE);
    let served = serve(router(layer)).await;
    for path in ["/busy", "/limited", "/late"] {
        served.get(path).await;
    }
    tokio::time::sleep(WINDOW * 2).await;
    served.get("/slow").await;
    let stats = resource.adaptive_stats().unwrap();
    assert_eq!((stats.drops, stats.samples), (1, 3));
}
