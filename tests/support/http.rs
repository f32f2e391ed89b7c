//! A real HTTP server on 127.0.0.1 (axum, or hyper's own) and a real client
//! (hyper-util's) for the tower tests: serve a router or a service, then
//! send requests to it.

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Poll;

use axum::Router;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::task::JoinHandle;

/// A router served on a free port of 127.0.0.1, and a client for it. The
/// server stops when this is dropped.
pub struct Served {
    pub address: SocketAddr,
    client: Client<HttpConnector, Empty<Bytes>>,
    server: JoinHandle<std::io::Result<()>>,
}

/// Serves `router` on a free port of 127.0.0.1.
pub async fn serve(router: Router) -> Served {
    Served::run(|listener| async move { axum::serve(listener, router).await }).await
}

impl Served {
    /// Binds a free port of 127.0.0.1 and spawns `server` on it.
    async fn run<F, Fut>(server: F) -> Served
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut,
        Fut: Future<Output = std::io::Result<()>> + Send + 'static,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        Served {
            address,
            client: Client::builder(TokioExecutor::new()).build_http(),
            server: tokio::spawn(server(listener)),
        }
    }

    /// `GET path`: the status and the whole body. The future owns what it
    /// needs, so it can be spawned.
    pub fn get(&self, path: &'static str) -> impl Future<Output = (StatusCode, Bytes)> + Send {
        let client = self.client.clone();
        let address = self.address;
        async move {
            let request = Request::get(format!("http://{address}{path}"))
                .body(Empty::new())
                .unwrap();
            let response = client.request(request).await.unwrap();
            let status = response.status();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, body)
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Serves a tower `service` with hyper's own HTTP/1 server on a free port
/// of 127.0.0.1, upgrades on, and a client for it (its `get` and `send`).
pub async fn serve_hyper<S, B>(service: S) -> Served
where
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Served::run(|listener| async move {
        loop {
            let (stream, _) = listener.accept().await?;
            let service = service.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    tower::ServiceExt::oneshot(service.clone(), request)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades()
                    .await;
            });
        }
    })
    .await
}

impl Served {
    /// Sends `method path`: the status and the whole body.
    pub fn send(
        &self,
        method: Method,
        path: &'static str,
    ) -> impl Future<Output = (StatusCode, Bytes)> + Send {
        let client = self.client.clone();
        let address = self.address;
        async move {
            let request = Request::builder()
                .method(method)
                .uri(format!("http://{address}{path}"))
                .body(Empty::new())
                .unwrap();
            let response = client.request(request).await.unwrap();
            let status = response.status();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, body)
        }
    }
}

/// Reads what `io` has (0 at its end, or on an error).
pub async fn read_some<T: AsyncRead + Unpin>(io: &mut T, buffer: &mut [u8]) -> usize {
    poll_fn(|cx| {
        let mut read = ReadBuf::new(buffer);
        match Pin::new(&mut *io).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => Poll::Ready(read.filled().len()),
            Poll::Ready(Err(_)) => Poll::Ready(0),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Writes all of `bytes` to `io` and flushes it.
pub async fn write_all<T: AsyncWrite + Unpin>(io: &mut T, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let written = poll_fn(|cx| Pin::new(&mut *io).poll_write(cx, bytes)).await?;
        bytes = &bytes[written..];
    }
    poll_fn(|cx| Pin::new(&mut *io).poll_flush(cx)).await
}
