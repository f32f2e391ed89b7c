//! Priorities in front of a real HTTP server on 127.0.0.1 (axum), driven by
//! a real HTTP client (hyper-util's) (#28): with `/batch` sheddable (share
//! 0.5), `/work` normal (share 0.75) and `/health` critical, a capacity of
//! 4 lets batch fill 2 slots, work 3 in all, and health the last one; each
//! refusal is a 503 counted under its priority.
#![cfg(feature = "http")]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::support;
use support::http::serve;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use http::{Request, StatusCode};
use sidejob::tower::HttpShedLayer;
use sidejob::{Priority, Resource};
use tokio::sync::{mpsc, Semaphore};

/// What the handlers share with the test.
struct Handlers {
    /// A handler says it has started.
    entered: mpsc::UnboundedSender<()>,
    /// Handlers wait here until the test lets them finish.
    gate: Semaphore,
}

async fn hold(State(handlers): State<Arc<Handlers>>) -> &'static str {
    handlers.entered.send(()).unwrap();
    let _pass = handlers.gate.acquire().await.unwrap();
    "done"
}

/// `future`, or a failure naming `step` if it takes more than 20 s (a
/// request admitted that should have been refused waits on the gate).
async fn within<T>(step: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .unwrap_or_else(|_| panic!("{step}: no answer in 20 s"))
}

/// The priority of a request, by its path.
fn by_path<B>(request: &Request<B>) -> Priority {
    match request.uri().path() {
        "/health" => Priority::Critical,
        path if path.starts_with("/batch") => Priority::Sheddable,
        _ => Priority::Normal,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sheddable_routes_are_refused_first_and_critical_ones_get_the_last_slot() {
    let resource = Arc::new(
        Resource::builder()
            .capacity(4)
            .share(Priority::Normal, 0.75)
            .share(Priority::Sheddable, 0.5)
            .build()
            .unwrap(),
    );
    let layer = HttpShedLayer::new(Arc::clone(&resource)).priority(by_path);
    let (entered, mut starts) = mpsc::unbounded_channel();
    let handlers = Arc::new(Handlers {
        entered,
        gate: Semaphore::new(0),
    });
    let router = Router::new()
        .route("/batch", get(hold))
        .route("/work", get(hold))
        .route("/health", get(hold))
        .with_state(Arc::clone(&handlers))
        .layer(layer);
    let served = serve(router).await;
    let get = |path: &'static str| served.get(path);
    let mut held = Vec::new();
    // Admits `path` and waits until its handler runs.
    let mut admit = |path: &'static str| {
        held.push(tokio::spawn(get(path)));
    };

    // Batch fills its share: ⌊0.5 × 4⌋ = 2.
    admit("/batch");
    admit("/batch");
    for _ in 0..2 {
        within("two batches start", starts.recv()).await.unwrap();
    }
    let third = within("a third batch", get("/batch")).await;
    assert_eq!(
        third.0,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        resource.stats()
    );
    // Work gets one more: ⌊0.75 × 4⌋ = 3 in all.
    admit("/work");
    within("work starts", starts.recv()).await.unwrap();
    let work = within("a second work", get("/work")).await;
    assert_eq!(
        work.0,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        resource.stats()
    );
    let batch = within("a batch beside work", get("/batch")).await;
    assert_eq!(batch.0, StatusCode::SERVICE_UNAVAILABLE);
    // Health finds the slot the others had to leave.
    admit("/health");
    within("health starts", starts.recv()).await.unwrap();
    assert_eq!(resource.usage(), 4);
    let health = within("a second health", get("/health")).await;
    assert_eq!(health.0, StatusCode::SERVICE_UNAVAILABLE);

    let stats = resource.stats();
    let rejected = stats.rejected_by_priority;
    assert_eq!(
        (rejected.critical, rejected.normal, rejected.sheddable),
        (1, 1, 2)
    );
    assert_eq!(stats.rejected, 4);

    handlers.gate.add_permits(4);
    for request in held {
        let (status, body) = within("the held requests end", request).await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "done");
    }
}
