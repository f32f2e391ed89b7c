//! An axum HTTP server whose handlers do real work, behind a choice of
//! concurrency limits, reporting what it admitted and refused.
//!
//! Each request to `/work` hashes a buffer on tokio's blocking pool for
//! `--work-ms` of CPU time (a stand-in for rendering or parsing); `/batch`
//! does the same work for bulk jobs, and `/health` answers at once. The
//! limiter in front of the router is one of:
//!
//! * `sidejob`: `sidejob::tower::HttpShedLayer` with `--capacity`: requests
//!   beyond it get `503` with `Retry-After` at once. Requests have
//!   priorities: `/health` is critical (it may take the last slot, so a
//!   load balancer's probe still gets through an overload), `/batch` is
//!   sheddable (it may fill half the capacity, and is refused first), and
//!   `/work` is normal (it may fill 90% of it);
//! * `tower-concurrency`: tower's `GlobalConcurrencyLimitLayer`, the same
//!   bound, but requests beyond it wait in its queue;
//! * `tower-loadshed`: tower's `LoadShed` over that limit, with axum's
//!   `HandleErrorLayer` turning its refusal into a `503`;
//! * `none`.
//!
//! An outermost middleware times every request from its arrival at the
//! router to its response, into one histogram for admitted requests and one
//! for refused ones (`503`). At the end (after `--duration` seconds, or on
//! Ctrl-C) the server prints its report: counts, latency percentiles, peak
//! in flight, and a `report:` line of `key=value` pairs for scripts
//! (`benches/http_load.sh` reads it).
//!
//! ```text
//! cargo run --release --features http,prometheus --example http_server -- --duration 3 --self-load 32
//! cargo run --release --features http,prometheus --example http_server -- --addr 127.0.0.1:3000 --limiter tower-concurrency
//! ```
//!
//! `--self-load N` drives the server from N client tasks of its own (a real
//! HTTP client over 127.0.0.1), so the example shows overload in a few
//! seconds without a load generator.
//!
//! `GET /metrics` answers in Prometheus' text format, outside the limiter
//! (a scrape is never shed): with the `sidejob` limiter, its resource
//! (named `http`) through `sidejob::prometheus::Collector`, e.g.
//!
//! ```text
//! curl -s http://127.0.0.1:3000/metrics | grep -E 'sidejob_resource_(usage|rejected_total|in_rate)'
//! ```

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use sidejob::prometheus::Collector;
use sidejob::tower::HttpShedLayer;
use sidejob::Priority;
use sidejob::Resource;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::ServiceBuilder;

/// Which limit guards the handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Limiter {
    Sidejob,
    TowerConcurrency,
    TowerLoadshed,
    None,
}

/// Command-line settings.
#[derive(Debug, Parser)]
#[command(about = "An axum server behind a concurrency limit, with its own report")]
struct Args {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:3000")]
    addr: SocketAddr,
    /// Requests in flight the limiter admits.
    #[arg(long, default_value_t = 4)]
    capacity: usize,
    /// CPU time each request's handler spends, in milliseconds.
    #[arg(long, default_value_t = 2.0)]
    work_ms: f64,
    /// The limiter in front of the handlers.
    #[arg(long, value_enum, default_value_t = Limiter::Sidejob)]
    limiter: Limiter,
    /// Serve this many seconds, then report and exit (default: until Ctrl-C).
    #[arg(long)]
    duration: Option<f64>,
    /// Drive the server from this many client tasks of its own.
    #[arg(long, default_value_t = 0)]
    self_load: usize,
}

/// What the handlers and the timing middleware record.
struct Report {
    admitted: Mutex<Histogram<u64>>,
    refused: Mutex<Histogram<u64>>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    first: Mutex<Option<Instant>>,
    last: Mutex<Option<Instant>>,
    handled: AtomicU64,
}

impl Report {
    fn new() -> Self {
        let histogram = || Mutex::new(Histogram::new_with_bounds(1, 60_000_000, 3).unwrap());
        Report {
            admitted: histogram(),
            refused: histogram(),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            first: Mutex::new(None),
            last: Mutex::new(None),
            handled: AtomicU64::new(0),
        }
    }
}

/// Shared with every request.
#[derive(Clone)]
struct App {
    report: Arc<Report>,
    work: Duration,
    /// What `/metrics` encodes.
    registry: Arc<Registry>,
}

/// `GET /metrics`: the registry in Prometheus' text format.
async fn metrics(State(app): State<App>) -> Response {
    let mut text = String::new();
    match encode(&mut text, &app.registry) {
        Ok(()) => (
            [(
                axum::http::header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The handler: `work` of CPU time on the blocking pool.
async fn work(State(app): State<App>) -> Response {
    let now = app.report.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    app.report.peak.fetch_max(now, Ordering::SeqCst);
    let budget = app.work;
    let digest = tokio::task::spawn_blocking(move || burn(budget))
        .await
        .unwrap_or_default();
    app.report.in_flight.fetch_sub(1, Ordering::SeqCst);
    app.report.handled.fetch_add(1, Ordering::Relaxed);
    format!("{digest:016x}\n").into_response()
}

/// `GET /health`: answers at once.
async fn health() -> &'static str {
    "ok\n"
}

/// A request's priority under the sidejob limiter, by its path.
fn priority(request: &Request) -> Priority {
    match request.uri().path() {
        "/health" => Priority::Critical,
        path if path.starts_with("/batch") => Priority::Sheddable,
        _ => Priority::Normal,
    }
}

/// Hashes until `budget` of time has passed; returns the hash.
fn burn(budget: Duration) -> u64 {
    let start = Instant::now();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    while start.elapsed() < budget {
        for byte in 0..=255u8 {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// Times each request, outermost: admitted and refused apart.
async fn timed(State(app): State<App>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    app.report.first.lock().unwrap().get_or_insert(started);
    let response = next.run(request).await;
    let micros = started.elapsed().as_micros().max(1) as u64;
    let histogram = if response.status() == StatusCode::SERVICE_UNAVAILABLE {
        &app.report.refused
    } else {
        &app.report.admitted
    };
    let _ = histogram.lock().unwrap().record(micros);
    *app.report.last.lock().unwrap() = Some(Instant::now());
    response
}

/// The router behind `limiter`, timed from outside; `/metrics` beside it.
/// The sidejob limiter's resource is `resource`.
fn router(args: &Args, app: App, resource: Arc<Resource>) -> Router {
    let routes = Router::new()
        .route("/work", get(work))
        .route("/batch", get(work))
        .route("/health", get(health));
    let limited = match args.limiter {
        Limiter::Sidejob => routes.layer(HttpShedLayer::new(resource).priority(priority)),
        Limiter::TowerConcurrency => routes.layer(GlobalConcurrencyLimitLayer::new(args.capacity)),
        Limiter::TowerLoadshed => routes.layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(|_: tower::BoxError| async {
                    StatusCode::SERVICE_UNAVAILABLE
                }))
                .load_shed()
                .layer(GlobalConcurrencyLimitLayer::new(args.capacity)),
        ),
        Limiter::None => routes,
    };
    limited
        .layer(middleware::from_fn_with_state(app.clone(), timed))
        .route("/metrics", get(metrics))
        .with_state(app)
}

/// Client tasks that request `/work` back to back until `stop`.
fn self_load(address: SocketAddr, clients: usize, stop: Arc<tokio::sync::Notify>) {
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    for _ in 0..clients {
        let (client, stop) = (client.clone(), Arc::clone(&stop));
        tokio::spawn(async move {
            let url: axum::http::Uri = format!("http://{address}/work").parse().unwrap();
            loop {
                let request = client.get(url.clone());
                tokio::select! {
                    _ = stop.notified() => return,
                    response = request => {
                        if let Ok(response) = response {
                            let _ = response.into_body().collect().await;
                        }
                    }
                }
            }
        });
    }
}

fn percentile(histogram: &Histogram<u64>, quantile: f64) -> f64 {
    histogram.value_at_quantile(quantile) as f64 / 1000.0
}

fn print_report(args: &Args, report: &Report) {
    let admitted = report.admitted.lock().unwrap();
    let refused = report.refused.lock().unwrap();
    let span = match (*report.first.lock().unwrap(), *report.last.lock().unwrap()) {
        (Some(first), Some(last)) => (last - first).as_secs_f64().max(1e-3),
        _ => 1e-3,
    };
    let total = admitted.len() + refused.len();
    let refused_share = if total == 0 {
        0.0
    } else {
        refused.len() as f64 / total as f64
    };
    println!(
        "limiter {:?}, capacity {}, {} ms of work per request, over {span:.1} s:",
        args.limiter, args.capacity, args.work_ms
    );
    println!(
        "  admitted {:>8}  ({:.0}/s)   p50 {:>8.2} ms  p99 {:>8.2} ms  p99.9 {:>8.2} ms",
        admitted.len(),
        admitted.len() as f64 / span,
        percentile(&admitted, 0.5),
        percentile(&admitted, 0.99),
        percentile(&admitted, 0.999),
    );
    println!(
        "  refused  {:>8}  ({:.1} %)   p50 {:>8.3} ms  p99 {:>8.3} ms",
        refused.len(),
        100.0 * refused_share,
        percentile(&refused, 0.5),
        percentile(&refused, 0.99),
    );
    println!(
        "  peak in flight {} (capacity {})",
        report.peak.load(Ordering::SeqCst),
        args.capacity
    );
    println!(
        "report: limiter={:?} capacity={} admitted={} admitted_per_s={:.1} admitted_p50_ms={:.3} \
         admitted_p99_ms={:.3} refused={} refused_share={:.4} refused_p50_ms={:.4} \
         refused_p99_ms={:.4} peak_in_flight={}",
        args.limiter,
        args.capacity,
        admitted.len(),
        admitted.len() as f64 / span,
        percentile(&admitted, 0.5),
        percentile(&admitted, 0.99),
        refused.len(),
        refused_share,
        percentile(&refused, 0.5),
        percentile(&refused, 0.99),
        report.peak.load(Ordering::SeqCst),
    );
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let report = Arc::new(Report::new());
    let resource = Arc::new(
        Resource::builder()
            .capacity(args.capacity)
            .share(Priority::Normal, 0.9)
            .share(Priority::Sheddable, 0.5)
            .name("http")
            .build()
            .expect("a valid capacity"),
    );
    let collector = Collector::new();
    if args.limiter == Limiter::Sidejob {
        collector.register(&resource);
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(collector));
    let app = App {
        report: Arc::clone(&report),
        work: Duration::from_secs_f64(args.work_ms / 1000.0),
        registry: Arc::new(registry),
    };
    let listener = tokio::net::TcpListener::bind(args.addr).await.unwrap();
    let address = listener.local_addr().unwrap();
    eprintln!("listening on http://{address}/work ({:?})", args.limiter);
    let serve = axum::serve(listener, router(&args, app, Arc::clone(&resource)));
    let server = tokio::spawn(async move { serve.await });
    let stop = Arc::new(tokio::sync::Notify::new());
    if args.self_load > 0 {
        self_load(address, args.self_load, Arc::clone(&stop));
    }
    match args.duration {
        Some(seconds) => tokio::time::sleep(Duration::from_secs_f64(seconds)).await,
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    stop.notify_waiters();
    server.abort();
    print_report(&args, &report);
    if args.limiter == Limiter::Sidejob || args.limiter == Limiter::TowerConcurrency {
        let peak = report.peak.load(Ordering::SeqCst);
        assert!(peak <= args.capacity, "peak {peak} above the capacity");
    }
}
