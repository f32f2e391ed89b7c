//! A real HTTP server on 127.0.0.1 (axum) and a real client (hyper-util's)
//! for the tower tests: serve a router, then `GET` paths on it.

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    Served {
        address,
        client: Client::builder(TokioExecutor::new()).build_http(),
        server,
    }
}

impl Served {
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
