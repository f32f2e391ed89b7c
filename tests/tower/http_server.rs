//! A real HTTP server on 127.0.0.1 (axum) behind `HttpShedLayer`, driven by
//! a real HTTP client (hyper-util's) (#17): the bound holds across two
//! routes and the router clones each connection gets, the requests beyond
//! it are answered 503 at once, and nothing is in flight after the load.
#![cfg(feature = "http")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support;
use support::http::serve;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use http::StatusCode;
use sidejob::tower::HttpShedLayer;
use tokio::sync::{mpsc, Semaphore};

const CAPACITY: usize = 4;
const EXTRA: usize = 6;

/// What the handlers share with the test.
struct Handlers {
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    /// A handler says it has started.
    entered: mpsc::UnboundedSender<()>,
    /// Handlers wait here until the test lets them finish.
    gate: Semaphore,
}

async fn hold(State(handlers): State<Arc<Handlers>>) -> &'static str {
    let now = handlers.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    handlers.peak.fetch_max(now, Ordering::SeqCst);
    handlers.entered.send(()).unwrap();
    let _pass = handlers.gate.acquire().await.unwrap();
    handlers.in_flight.fetch_sub(1, Ordering::SeqCst);
    "done"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_holds_across_routes_and_clones_over_real_http() {
    let layer = HttpShedLayer::with_capacity(CAPACITY).unwrap();
    let (entered, mut starts) = mpsc::unbounded_channel();
    let handlers = Arc::new(Handlers {
        in_flight: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
        entered,
        gate: Semaphore::new(0),
    });
    let router = Router::new()
        .route("/a", get(hold))
        .route("/b", get(hold))
        .with_state(Arc::clone(&handlers))
        .layer(layer.clone());
    let served = serve(router).await;
    let get = |path: &'static str| served.get(path);

    // Fill the bound over both routes, each request on its own connection.
    let admitted: Vec<_> = (0..CAPACITY)
        .map(|index| tokio::spawn(get(if index % 2 == 0 { "/a" } else { "/b" })))
        .collect();
    for _ in 0..CAPACITY {
        starts.recv().await.unwrap();
    }
    assert_eq!(layer.resource().usage(), CAPACITY);

    // Everything beyond it is refused at once, on either route.
    for index in 0..EXTRA {
        let (status, body) = get(if index % 2 == 0 { "/b" } else { "/a" }).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.is_empty());
    }

    handlers.gate.add_permits(CAPACITY);
    for request in admitted {
        let (status, body) = request.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "done");
    }
    assert_eq!(handlers.peak.load(Ordering::SeqCst), CAPACITY);
    // The server lets go of a body's permit once it has sent it, which the
    // client may see a moment before.
    let deadline = Instant::now() + Duration::from_secs(10);
    while layer.resource().usage() > 0 {
        assert!(
            Instant::now() < deadline,
            "permits still held after the load"
        );
        tokio::task::yield_now().await;
    }
    let stats = layer.resource().stats();
    assert_eq!(stats.accepted, CAPACITY as u64);
    assert_eq!(stats.rejected, EXTRA as u64);
}
