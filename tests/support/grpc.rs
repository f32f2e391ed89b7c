//! A real gRPC server (tonic, on a free port of 127.0.0.1) and a real client
//! (a tonic `Channel`) for the gRPC layer's tests and example. The messages
//! are hand-written `prost` structs (no `protoc` here); the service is what
//! tonic's code generator would write for it, by hand: a router over the
//! method paths, each method a `tonic::server::Grpc` call.
//!
//! ```proto
//! service Demo {
//!   rpc Unary(Ask) returns (Answer);   // also Bulk and Check
//!   rpc Stream(Ask) returns (stream Answer);
//! }
//! ```

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::uri::PathAndQuery;
use sidejob::tower::{GrpcShedLayer, Prioritize};
use tokio::sync::{mpsc, Mutex, Semaphore};
use tokio::task::JoinHandle;
use tonic::body::Body;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::codegen::BoxFuture;
use tonic::server::NamedService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Status, Streaming};
use tonic_prost::ProstCodec;
use tower::{service_fn, Service};

/// A call's request: how the handler is to answer it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Ask {
    /// The status the handler answers with (`0`: the answer).
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// Whether the handler takes a permit of the backend's gate before it
    /// answers (unary) or before each message (a stream).
    #[prost(bool, tag = "2")]
    pub gated: bool,
    /// The messages a stream sends.
    #[prost(uint32, tag = "3")]
    pub count: u32,
    /// The handler's work before it answers, or before each message, in
    /// milliseconds.
    #[prost(uint32, tag = "4")]
    pub work_ms: u32,
}

/// A call's answer, or one message of a stream.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Answer {
    /// The message's place in its stream.
    #[prost(uint32, tag = "1")]
    pub index: u32,
}

/// The unary method every caller uses.
pub const UNARY: &str = "/demo.Demo/Unary";
/// A unary method a prioritized layer sheds first.
pub const BULK: &str = "/demo.Demo/Bulk";
/// A unary method a prioritized layer lets through: a health check.
pub const CHECK: &str = "/demo.Demo/Check";
/// The server-streaming method.
pub const STREAM: &str = "/demo.Demo/Stream";

/// What the handlers share with the test.
struct Backend {
    gate: Semaphore,
    entered: mpsc::UnboundedSender<&'static str>,
}

/// The demo service, routing on the method's path.
#[derive(Clone)]
struct Demo(Arc<Backend>);

impl NamedService for Demo {
    const NAME: &'static str = "demo.Demo";
}

impl Service<http::Request<Body>> for Demo {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let backend = Arc::clone(&self.0);
        Box::pin(async move {
            let method = match request.uri().path() {
                UNARY => UNARY,
                BULK => BULK,
                CHECK => CHECK,
                STREAM => STREAM,
                _ => return Ok(Status::unimplemented("no such method").into_http()),
            };
            let mut grpc = tonic::server::Grpc::new(ProstCodec::<Answer, Ask>::default());
            if method == STREAM {
                let handler = service_fn(move |call: tonic::Request<Ask>| {
                    let backend = Arc::clone(&backend);
                    async move { stream(backend, call.into_inner()) }
                });
                Ok(grpc.server_streaming(handler, request).await)
            } else {
                let handler = service_fn(move |call: tonic::Request<Ask>| {
                    let backend = Arc::clone(&backend);
                    async move { unary(backend, method, call.into_inner()).await }
                });
                Ok(grpc.unary(handler, request).await)
            }
        })
    }
}

async fn unary(
    backend: Arc<Backend>,
    method: &'static str,
    ask: Ask,
) -> Result<tonic::Response<Answer>, Status> {
    let _ = backend.entered.send(method);
    if ask.gated {
        backend.gate.acquire().await.unwrap().forget();
    }
    work(ask.work_ms).await;
    match ask.code {
        0 => Ok(tonic::Response::new(Answer { index: 0 })),
        code => Err(Status::new(Code::from_i32(code), "asked to fail")),
    }
}

async fn work(ms: u32) {
    if ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(u64::from(ms))).await;
    }
}

fn stream(
    backend: Arc<Backend>,
    ask: Ask,
) -> Result<tonic::Response<ReceiverStream<Result<Answer, Status>>>, Status> {
    let _ = backend.entered.send(STREAM);
    let (sender, receiver) = mpsc::channel(1);
    tokio::spawn(async move {
        for index in 0..ask.count {
            if ask.gated {
                backend.gate.acquire().await.unwrap().forget();
            }
            work(ask.work_ms).await;
            if sender.send(Ok(Answer { index })).await.is_err() {
                return; // the call is gone
            }
        }
        if ask.code != 0 {
            // The status after the messages: in the trailers.
            let status = Status::new(Code::from_i32(ask.code), "asked to fail");
            let _ = sender.send(Err(status)).await;
        }
    });
    Ok(tonic::Response::new(ReceiverStream::new(receiver)))
}

/// The demo service behind a layer on a free port of 127.0.0.1. The server
/// stops when this is dropped.
pub struct GrpcServed {
    /// Where it listens.
    pub address: SocketAddr,
    backend: Arc<Backend>,
    entered: Mutex<mpsc::UnboundedReceiver<&'static str>>,
    server: JoinHandle<()>,
}

/// Serves the demo service behind `layer` (a server-side gRPC layer).
pub async fn serve<P>(layer: GrpcShedLayer<P>) -> GrpcServed
where
    P: Prioritize<http::Request<Body>> + Clone + Send + Sync + 'static,
{
    GrpcServed::start(|backend, incoming| {
        Server::builder()
            .layer(layer)
            .add_service(Demo(backend))
            .serve_with_incoming(incoming)
    })
    .await
}

/// Serves the demo service with no layer: for the client-side tests.
pub async fn serve_bare() -> GrpcServed {
    GrpcServed::start(|backend, incoming| {
        Server::builder()
            .add_service(Demo(backend))
            .serve_with_incoming(incoming)
    })
    .await
}

impl GrpcServed {
    /// Binds a free port of 127.0.0.1 and spawns the server `serve` makes
    /// for the backend on it.
    async fn start<F, Fut>(serve: F) -> GrpcServed
    where
        F: FnOnce(Arc<Backend>, TcpIncoming) -> Fut,
        Fut: std::future::Future<Output = Result<(), tonic::transport::Error>> + Send + 'static,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (entered_sender, entered) = mpsc::unbounded_channel();
        let backend = Arc::new(Backend {
            gate: Semaphore::new(0),
            entered: entered_sender,
        });
        let server = serve(Arc::clone(&backend), TcpIncoming::from(listener));
        let server = tokio::spawn(async move { server.await.unwrap() });
        GrpcServed {
            address,
            backend,
            entered: Mutex::new(entered),
            server,
        }
    }

    /// Lets `permits` gated handler steps go on (an answer, or a message).
    pub fn open(&self, permits: usize) {
        self.backend.gate.add_permits(permits);
    }

    /// Waits for the next call to enter a handler; its method's path.
    pub async fn entered(&self) -> &'static str {
        self.entered.lock().await.recv().await.unwrap()
    }

    /// Forgets the calls that entered a handler so far.
    pub fn forget_entered(&self) {
        let mut entered = self.entered.try_lock().unwrap();
        while entered.try_recv().is_ok() {}
    }

    /// A channel to the server: one HTTP/2 connection.
    pub async fn channel(&self) -> Channel {
        Endpoint::from_shared(format!("http://{}", self.address))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }
}

impl Drop for GrpcServed {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// A unary call of `path` through `service` (a channel, bare or layered).
pub async fn call<T>(service: T, path: &'static str, ask: Ask) -> Result<Answer, Status>
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<tonic::codegen::StdError>,
    T::Error: Into<tonic::codegen::StdError>,
{
    let mut client = ready(tonic::client::Grpc::new(service)).await?;
    let codec = ProstCodec::<Ask, Answer>::default();
    let request = tonic::Request::new(ask);
    let answer = client
        .unary(request, PathAndQuery::from_static(path), codec)
        .await?;
    Ok(answer.into_inner())
}

/// A unary call of `path` through `service` to `origin`: tonic's
/// `Grpc::with_origin`, for a service that is no channel (a hyper client).
pub async fn call_at<T>(
    service: T,
    origin: http::Uri,
    path: &'static str,
    ask: Ask,
) -> Result<Answer, Status>
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<tonic::codegen::StdError>,
    T::Error: Into<tonic::codegen::StdError>,
{
    let mut client = ready(tonic::client::Grpc::with_origin(service, origin)).await?;
    let codec = ProstCodec::<Ask, Answer>::default();
    let request = tonic::Request::new(ask);
    let answer = client
        .unary(request, PathAndQuery::from_static(path), codec)
        .await?;
    Ok(answer.into_inner())
}

/// A server-streaming call through `service`: its messages, to read one by
/// one.
pub async fn open_stream<T>(service: T, ask: Ask) -> Result<Streaming<Answer>, Status>
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<tonic::codegen::StdError>,
    T::Error: Into<tonic::codegen::StdError>,
{
    let mut client = ready(tonic::client::Grpc::new(service)).await?;
    let codec = ProstCodec::<Ask, Answer>::default();
    let request = tonic::Request::new(ask);
    let stream = client
        .server_streaming(request, PathAndQuery::from_static(STREAM), codec)
        .await?;
    Ok(stream.into_inner())
}

/// `client` once its service is ready; the service's error as a status.
async fn ready<T>(mut client: tonic::client::Grpc<T>) -> Result<tonic::client::Grpc<T>, Status>
where
    T: tonic::client::GrpcService<Body>,
    T::Error: Into<tonic::codegen::StdError>,
{
    client
        .ready()
        .await
        .map_err(|error| Status::from_error(error.into()))?;
    Ok(client)
}

/// Asks for an answer (or the status `code`, when not `OK`).
pub fn ask(code: Code) -> Ask {
    Ask {
        code: code as i32,
        gated: false,
        count: 0,
        work_ms: 0,
    }
}

/// Asks for an answer once the gate lets it.
pub fn gated() -> Ask {
    Ask {
        code: 0,
        gated: true,
        count: 0,
        work_ms: 0,
    }
}

/// Asks for a stream of `count` messages, each once the gate lets it.
pub fn gated_stream(count: u32) -> Ask {
    Ask {
        code: 0,
        gated: true,
        count,
        work_ms: 0,
    }
}

/// Waits (polling every 5 ms, up to 10 s) until `done`; panics naming
/// `what` if it never is. For what happens on the server after a client
/// lets go (a cancelled call's reset reaching it).
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
