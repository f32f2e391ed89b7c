//! A prioritized `ShedLayer` in an axum `Router`, served by hyper on
//! 127.0.0.1 (#38, 11): its service is `Clone` (axum and hyper clone it)
//! and `Debug` for any prioritizer. On 89ace99 this did not compile: `Clone`
//! and `Debug` were only for `Shed<S, Unprioritized>`.
#![cfg(feature = "http")]

use std::sync::Arc;

use crate::support;
use support::http::serve;

use axum::error_handling::HandleErrorLayer;
use axum::extract::Request;
use axum::routing::get;
use axum::Router;
use http::StatusCode;
use sidejob::tower::{BoxError, Shed, ShedLayer};
use sidejob::{Overload, Priority, Resource};
use tower::ServiceBuilder;

fn by_path(request: &Request) -> Priority {
    match request.uri().path() {
        "/health" => Priority::Critical,
        _ => Priority::Normal,
    }
}

#[tokio::test]
async fn a_prioritized_layer_serves_an_axum_router() {
    // ⌊0.5 × 1⌋ = 0 slots for normal requests; the one slot is critical's.
    let resource = Arc::new(
        Resource::builder()
            .capacity(1)
            .share(Priority::Normal, 0.5)
            .build()
            .unwrap(),
    );
    let shed = ShedLayer::new(Arc::clone(&resource)).priority(by_path);
    let router = Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/work", get(|| async { "done" }))
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(|error: BoxError| async move {
                    assert!(error.is::<Overload>());
                    StatusCode::SERVICE_UNAVAILABLE
                }))
                .layer(shed),
        );
    let served = serve(router).await;
    let (status, body) = served.get("/health").await;
    assert_eq!((status, &body[..]), (StatusCode::OK, &b"ok"[..]));
    assert_eq!(served.get("/work").await.0, StatusCode::SERVICE_UNAVAILABLE);
    let stats = resource.stats();
    assert_eq!((stats.accepted, stats.rejected), (1, 1));
}

#[test]
fn a_prioritized_service_is_clone_and_debug() {
    let resource = Arc::new(Resource::new(1));
    let service = Shed::with_priority("inner", resource, by_path);
    let clone = service.clone();
    assert_eq!(*clone.get_ref(), "inner");
    let shown = format!("{clone:?}");
    assert!(shown.starts_with("Shed {"), "{shown}");
}
