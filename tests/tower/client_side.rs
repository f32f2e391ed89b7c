//! The layers on the client side (#43): around a real hyper client or a
//! real tonic channel, calling a real server on 127.0.0.1. A call past the
//! client's limit is refused in the client and never reaches the server;
//! an adaptive limit learns from the dependency's overload answers (`503`,
//! `429`, a gRPC `UNAVAILABLE`), which the client sees as `Ok` responses:
//! `ShedLayer::drop_on_response`, and `GrpcShedLayer`'s `grpc-status`.
#![cfg(feature = "grpc")]

use std::sync::Arc;

use crate::support;
use support::adaptive_window::{aimd_for_calls as adaptive, close_call_window as close};
use support::grpc::{ask, call, call_at, gated, serve_bare, CHECK, UNARY};
use support::http::serve;

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sidejob::tower::{is_overload_response, GrpcShedLayer, HttpShedLayer, ShedLayer};
use sidejob::Overload;
use tokio::sync::{mpsc, Semaphore};
use tonic::Code;
use tower::{Layer, ServiceExt};

/// An HTTP dependency: `/busy` is a 503, `/quota` a 429, `/missing` a 404,
/// `/held` waits for the gate (and tells it entered).
struct Dependency {
    served: support::http::Served,
    gate: Arc<Semaphore>,
    entered: mpsc::UnboundedReceiver<()>,
}

async fn dependency() -> Dependency {
    let gate = Arc::new(Semaphore::new(0));
    let (entered_sender, entered) = mpsc::unbounded_channel();
    let held = {
        let gate = Arc::clone(&gate);
        move || async move {
            let _ = entered_sender.send(());
            gate.acquire().await.unwrap().forget();
            "done"
        }
    };
    let router = Router::new()
        .route("/held", get(held))
        .route("/ok", get(|| async { "ok" }))
        .route(
            "/busy",
            get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "busy") }),
        )
        .route(
            "/quota",
            get(|| async { (StatusCode::TOO_MANY_REQUESTS, "quota") }),
        )
        .route("/missing", get(|| async { (StatusCode::NOT_FOUND, "no") }));
    Dependency {
        served: serve(router).await,
        gate,
        entered,
    }
}

impl Dependency {
    fn request(&self, path: &str) -> Request<Empty<Bytes>> {
        Request::get(format!("http://{}{path}", self.served.address))
            .body(Empty::new())
            .unwrap()
    }
}

#[tokio::test]
async fn an_http_client_past_its_limit_is_refused_in_the_client() {
    let mut dependency = dependency().await;
    let layer = ShedLayer::with_capacity(1).unwrap();
    let client = layer.layer(Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>());
    let held = tokio::spawn(client.clone().oneshot(dependency.request("/held")));
    dependency.entered.recv().await.unwrap();

    let refused = client
        .clone()
        .oneshot(dependency.request("/held"))
        .await
        .unwrap_err();
    assert!(refused.is::<Overload>(), "{refused}");
    assert_eq!(layer.resource().stats().rejected, 1);

    dependency.gate.add_permits(1);
    assert_eq!(held.await.unwrap().unwrap().status(), StatusCode::OK);
    let answered = client.oneshot(dependency.request("/ok")).await.unwrap();
    assert_eq!(answered.status(), StatusCode::OK);
    // The refused call never reached the dependency.
    assert!(dependency.entered.try_recv().is_err());
}

#[tokio::test]
async fn an_http_shed_layer_around_a_hyper_client_holds_the_permit_until_the_body_is_read() {
    // The client's own bodies (`Incoming`) have no `Default`, and need none.
    let mut dependency = dependency().await;
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let resource = Arc::clone(layer.resource());
    let client = layer.layer(Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>());
    let answer = client
        .clone()
        .oneshot(dependency.request("/ok"))
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    // The head is in; the body is not read yet: the call is in flight.
    assert_eq!(resource.usage(), 1);
    let refused = client
        .clone()
        .oneshot(dependency.request("/ok"))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE); // made in the client
    assert!(refused.body().get_ref().is_none());
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "ok");
    assert_eq!(resource.usage(), 0);

    // The dependency's own 503 is a drop for an adaptive client limit.
    let resource = adaptive(4);
    let client = HttpShedLayer::new(Arc::clone(&resource))
        .layer(Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>());
    close(&resource).await;
    let busy = client
        .clone()
        .oneshot(dependency.request("/busy"))
        .await
        .unwrap();
    assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(busy.body().get_ref().is_some()); // the dependency's
    drop(busy);
    close(&resource).await;
    assert_eq!(resource.adaptive_stats().unwrap().drops, 1);
    assert_eq!(resource.capacity(), 3);
    assert!(dependency.entered.try_recv().is_err()); // nothing reached /held
}

#[tokio::test]
async fn a_body_its_server_cut_off_is_no_latency_sample() {
    // Found by the review: the server declares 100 bytes, sends 10 and
    // closes; hyper's body yields the data, an error, then `None`.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789";
                let _ = stream.write_all(head).await;
            }); // dropped: the connection closes mid-body
        }
    });
    let resource = adaptive(8);
    let client = HttpShedLayer::new(Arc::clone(&resource))
        .layer(Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>());
    close(&resource).await;
    let before = resource.adaptive_stats().unwrap().samples;
    let request = Request::get(format!("http://{address}/"))
        .body(Empty::new())
        .unwrap();
    let mut body = client.oneshot(request).await.unwrap().into_body();
    let mut errors = 0;
    while let Some(frame) = body.frame().await {
        errors += usize::from(frame.is_err());
    }
    assert_eq!(errors, 1); // hyper's IncompleteMessage, then the end
    drop(body);
    assert_eq!(resource.usage(), 0);
    close(&resource).await;
    let stats = resource.adaptive_stats().unwrap();
    // Only the closing release: the cut-off body was no sample.
    assert_eq!(stats.samples - before, 1, "{stats:?}");
}

#[tokio::test]
async fn an_http_client_s_adaptive_limit_learns_from_503_and_429_answers() {
    let dependency = dependency().await;
    let resource = adaptive(4);
    let layer = ShedLayer::new(Arc::clone(&resource)).drop_on_response(is_overload_response);
    let client = layer.layer(Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>());
    close(&resource).await; // a fresh window for the calls

    for path in ["/busy", "/quota", "/busy"] {
        let answer = client
            .clone()
            .oneshot(dependency.request(path))
            .await
            .unwrap();
        assert_ne!(answer.status(), StatusCode::OK); // an answer, all the same
    }
    let missing = client
        .clone()
        .oneshot(dependency.request("/missing"))
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND); // not overload
    close(&resource).await;
    let stats = resource.adaptive_stats().unwrap();
    // Counted since the start: the first window's one sample, then the 404
    // and the closing release.
    assert_eq!((stats.drops, stats.samples), (3, 3), "{stats:?}");
    assert_eq!(resource.capacity(), 3); // 4 × 0.9: backed off

    // Without `drop_on_response`, the same answers are samples.
    let plain = adaptive(4);
    let client = ShedLayer::new(Arc::clone(&plain))
        .layer(Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>());
    close(&plain).await;
    for _ in 0..3 {
        client
            .clone()
            .oneshot(dependency.request("/busy"))
            .await
            .unwrap();
    }
    close(&plain).await;
    assert_eq!(plain.adaptive_stats().unwrap().drops, 0);
    assert_eq!(plain.capacity(), 4);
}

#[tokio::test]
async fn a_grpc_client_past_its_limit_is_refused_in_the_client() {
    let served = serve_bare().await;
    let layer = GrpcShedLayer::with_capacity(1).unwrap();
    let channel = layer.layer(served.channel().await);
    let held = tokio::spawn(call(channel.clone(), UNARY, gated()));
    assert_eq!(served.entered().await, UNARY);

    let refused = call(channel.clone(), UNARY, ask(Code::Ok))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(
        refused.metadata().get("grpc-retry-pushback-ms").unwrap(),
        "1000"
    );
    assert_eq!(layer.resource().stats().rejected, 1);

    served.open(1);
    held.await.unwrap().unwrap();
    assert_eq!(layer.resource().usage(), 0);
    call(channel, CHECK, ask(Code::Ok)).await.unwrap();
    // The refused call never reached the server: the next to enter is this.
    assert_eq!(served.entered().await, CHECK);
}

#[tokio::test]
async fn a_grpc_layer_wraps_a_hyper_client_under_tonic_s_grpc_client() {
    // tonic's alternative to a `Channel`: a hyper client given an origin.
    // Its body (`Incoming`) has no `Default`, and needs none.
    let served = serve_bare().await;
    let layer = GrpcShedLayer::with_capacity(1).unwrap();
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<tonic::body::Body>();
    let origin: http::Uri = format!("http://{}", served.address).parse().unwrap();
    let layered = layer.layer(client);
    let held = {
        let (layered, origin) = (layered.clone(), origin.clone());
        tokio::spawn(async move { call_at(layered, origin, UNARY, gated()).await })
    };
    assert_eq!(served.entered().await, UNARY);
    let refused = call_at(layered.clone(), origin.clone(), UNARY, ask(Code::Ok))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    served.open(1);
    held.await.unwrap().unwrap();
    call_at(layered, origin, UNARY, ask(Code::Ok))
        .await
        .unwrap();
    assert_eq!(layer.resource().usage(), 0);
}

#[tokio::test]
async fn a_grpc_client_s_adaptive_limit_learns_from_unavailable_answers() {
    let served = serve_bare().await;
    let channel = served.channel().await;

    // GrpcShedLayer reads the status in the answer's head (trailers-only).
    let resource = adaptive(4);
    let client = GrpcShedLayer::new(Arc::clone(&resource)).layer(channel.clone());
    close(&resource).await;
    for code in [Code::Unavailable, Code::ResourceExhausted, Code::NotFound] {
        assert_eq!(
            call(client.clone(), UNARY, ask(code))
                .await
                .unwrap_err()
                .code(),
            code
        );
    }
    call(client, UNARY, ask(Code::Ok)).await.unwrap();
    close(&resource).await;
    let stats = resource.adaptive_stats().unwrap();
    assert_eq!((stats.drops, stats.samples), (2, 4), "{stats:?}");
    assert_eq!(resource.capacity(), 3);

    // So does ShedLayer, told to with `is_overload_response`.
    let resource = adaptive(4);
    let client = ShedLayer::new(Arc::clone(&resource))
        .drop_on_response(is_overload_response)
        .layer(channel);
    close(&resource).await;
    for _ in 0..2 {
        let status = call(client.clone(), UNARY, ask(Code::Unavailable))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
    }
    close(&resource).await;
    assert_eq!(resource.adaptive_stats().unwrap().drops, 2);
    assert_eq!(resource.capacity(), 3);
}

#[test]
fn the_example_s_client_limit_follows_the_server_s_capacity() {
    support::examples::run_example(
        "client_limit",
        &["--phase-secs", "2", "--clients", "32"],
        &["the client's limit followed the server's capacity"],
    );
}
