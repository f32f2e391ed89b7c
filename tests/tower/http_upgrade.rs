//! Upgraded connections are bounded through the request's `UpgradePermit`
//! (#38, 13): hyper's own server on 127.0.0.1 upgrades a request to a
//! made-up `echo` protocol (`hyper::upgrade::on`), and the handler takes
//! the permit into the task that serves the session. With capacity 1, a
//! live session holds the one slot (usage 1, a second request gets 503)
//! until it ends. On 89ace99 the 101's empty body released the permit while
//! the session worked on (and `UpgradePermit` did not exist). A permit
//! nobody takes is released once, with the response; one taken after the
//! response future was dropped is `None`.
#![cfg(feature = "http")]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::support;
use support::http::{read_some, serve_hyper, write_all};

use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::{Empty, Full};
use hyper::body::Incoming;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use sidejob::tower::{HttpShedLayer, UpgradePermit};
use sidejob::Resource;
use tokio::sync::mpsc;
use tower::{service_fn, Layer, Service, ServiceExt};

/// Serves the `echo` protocol on `io` until the client closes it.
async fn echo(mut io: TokioIo<Upgraded>) {
    let mut buffer = [0; 64];
    loop {
        let read = read_some(&mut io, &mut buffer).await;
        if read == 0 || write_all(&mut io, &buffer[..read]).await.is_err() {
            return;
        }
    }
}

/// `/echo` upgrades to the echo protocol, its session in a task of its own
/// (which takes the request's permit along when `take` says so, and says
/// on `ended` when it has let go of it); anything else is answered `200`.
fn handler(
    take: bool,
    ended: mpsc::UnboundedSender<()>,
) -> impl Fn(Request<Incoming>) -> std::future::Ready<Result<Response<Full<Bytes>>, Infallible>> + Clone
{
    move |mut request: Request<Incoming>| {
        if request.uri().path() != "/echo" {
            return std::future::ready(Ok(Response::new(Full::from("plain"))));
        }
        let handle = request.extensions().get::<UpgradePermit>().cloned();
        let permit = handle.filter(|_| take).map(|handle| handle.take().unwrap());
        let upgrade = hyper::upgrade::on(&mut request);
        let ended = ended.clone();
        tokio::spawn(async move {
            if let Ok(upgraded) = upgrade.await {
                echo(TokioIo::new(upgraded)).await;
            }
            drop(permit);
            let _ = ended.send(());
        });
        let response = Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header(header::CONNECTION, "upgrade")
            .header(header::UPGRADE, "echo")
            .body(Full::default())
            .unwrap();
        std::future::ready(Ok(response))
    }
}

/// A client's upgraded session: connects, asks for `echo`, and checks one
/// round trip.
async fn open_session(address: SocketAddr) -> TokioIo<Upgraded> {
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection.with_upgrades());
    let request = Request::get("/echo")
        .header(header::HOST, address.to_string())
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, "echo")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    let mut io = TokioIo::new(hyper::upgrade::on(response).await.unwrap());
    write_all(&mut io, b"ping").await.unwrap();
    let mut buffer = [0; 4];
    assert_eq!(read_some(&mut io, &mut buffer).await, 4);
    assert_eq!(&buffer, b"ping");
    io
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_upgraded_session_holds_its_permit() {
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let (ended, mut ends) = mpsc::unbounded_channel();
    let served = serve_hyper(layer.layer(service_fn(handler(true, ended)))).await;

    let session = open_session(served.address).await;
    assert_eq!(layer.resource().usage(), 1);
    assert_eq!(served.get("/").await.0, StatusCode::SERVICE_UNAVAILABLE);

    drop(session); // the client closes: the session's task ends
    ends.recv().await.unwrap();
    assert_eq!(layer.resource().usage(), 0);
    assert_eq!(served.get("/").await.0, StatusCode::OK);
    let stats = layer.resource().stats();
    assert_eq!((stats.accepted, stats.rejected), (2, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_nobody_takes_is_released_with_the_101() {
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let (ended, mut ends) = mpsc::unbounded_channel();
    let served = serve_hyper(layer.layer(service_fn(handler(false, ended)))).await;

    let session = open_session(served.address).await;
    // Not bounded: documented, the handler did not take it.
    assert_eq!(served.get("/").await.0, StatusCode::OK);
    drop(session);
    ends.recv().await.unwrap();
    assert_eq!(layer.resource().usage(), 0);
}

/// A service whose requests' handles come out on a channel, never taken;
/// it answers at once if `answers`, or never.
fn keeping(
    handles: mpsc::UnboundedSender<UpgradePermit>,
    answers: bool,
) -> impl Service<
    Request<()>,
    Response = Response<String>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<String>, Infallible>>,
> + Clone {
    service_fn(move |request: Request<()>| {
        let handle = request.extensions().get::<UpgradePermit>().unwrap();
        handles.send(handle.clone()).unwrap();
        async move {
            if !answers {
                std::future::pending::<()>().await;
            }
            Ok(Response::new(String::from("no upgrade")))
        }
    })
}

fn upgrade_request() -> Request<()> {
    Request::get("/")
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, "echo")
        .body(())
        .unwrap()
}

#[tokio::test]
async fn a_handle_taken_after_the_response_future_was_dropped_is_none() {
    let resource = Arc::new(Resource::new(1));
    let (handles, mut handed) = mpsc::unbounded_channel();
    let mut service = HttpShedLayer::new(Arc::clone(&resource)).layer(keeping(handles, false));
    let future = service.ready().await.unwrap().call(upgrade_request());
    let handle = handed.recv().await.unwrap();
    assert!(handle.holds());
    assert_eq!(resource.usage(), 1);
    drop(future); // cancelled: released, once
    assert_eq!(resource.usage(), 0);
    assert!(!handle.holds());
    assert!(handle.take().is_none());
    drop(handle);
    assert_eq!(resource.usage(), 0);
    assert!(resource.try_acquire().is_ok());
}

#[tokio::test]
async fn a_handle_never_taken_is_released_once_with_the_response() {
    let resource = Arc::new(Resource::new(1));
    let (handles, mut handed) = mpsc::unbounded_channel();
    let service = HttpShedLayer::new(Arc::clone(&resource)).layer(keeping(handles, true));
    let response = service.oneshot(upgrade_request()).await.unwrap();
    let handle = handed.recv().await.unwrap();
    // No upgrade: the permit went back to the response, and its body holds
    // it until it ends, as any response's.
    assert!(!handle.holds());
    assert!(response.body().holds_permit());
    assert!(handle.take().is_none());
    drop(response);
    assert_eq!(resource.usage(), 0);
    drop(handle);
    assert_eq!(resource.usage(), 0);
    assert!(resource.try_acquire().is_ok());
}

#[tokio::test]
async fn only_requests_that_ask_for_an_upgrade_carry_a_handle() {
    let layer = HttpShedLayer::with_capacity(1).unwrap();
    let service = layer.layer(service_fn(|request: Request<()>| async move {
        let carried = request.extensions().get::<UpgradePermit>().is_some();
        Ok::<_, Infallible>(Response::new(carried.to_string()))
    }));
    let plain = service.clone().oneshot(Request::new(())).await.unwrap();
    assert_eq!(plain.body().get_ref().map(String::as_str), Some("false"));
    drop(plain);
    let upgrade = service.oneshot(upgrade_request()).await.unwrap();
    assert_eq!(upgrade.body().get_ref().map(String::as_str), Some("true"));
}

#[tokio::test]
async fn a_taken_permit_is_no_latency_sample() {
    const WINDOW: std::time::Duration = std::time::Duration::from_millis(20);
    let resource = Arc::new(
        Resource::builder()
            .capacity(4)
            .adaptive(
                sidejob::adaptive::Adaptive::aimd()
                    .window(WINDOW)
                    .min_samples(1),
            )
            .build()
            .unwrap(),
    );
    let (permits, mut taken) = mpsc::unbounded_channel();
    let service =
        HttpShedLayer::new(Arc::clone(&resource)).layer(service_fn(move |request: Request<()>| {
            let handle = request.extensions().get::<UpgradePermit>().unwrap();
            permits.send(handle.take().unwrap()).unwrap();
            let mut response = Response::new(String::new());
            *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
            std::future::ready(Ok::<_, Infallible>(response))
        }));
    let response = service.oneshot(upgrade_request()).await.unwrap();
    assert!(!response.body().holds_permit());
    let session = taken.recv().await.unwrap();
    drop(session); // the session's end: no latency of the downstream
    assert_eq!(resource.usage(), 0);
    tokio::time::sleep(WINDOW * 2).await;
    drop(resource.try_acquire().unwrap()); // closes the window
    assert_eq!(resource.adaptive_stats().unwrap().samples, 1);
}
