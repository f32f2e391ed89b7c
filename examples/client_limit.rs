//! A client that limits its own outbound calls and learns the limit from
//! its dependency's refusals, as Netflix's concurrency-limits began.
//!
//! The dependency is a real axum server on 127.0.0.1 behind
//! `sidejob::tower::HttpShedLayer`: each request to `/work` takes
//! `--work-ms` × a uniform draw in [0.5, 1.5], and beyond its capacity `K`
//! the server answers `503` at once. `K` is 16, then 6, then 24, `--phase-secs` each. `--clients` tasks
//! call it in a closed loop through a real hyper client; each waits 2 ms
//! after a refusal before it tries again.
//!
//! Two runs:
//!
//! * `client limit`: the hyper client behind `sidejob::tower::ShedLayer`
//!   over an adaptive resource (AIMD, 100 ms windows, at most `--clients`),
//!   with `drop_on_response(is_overload_response)`: the server's `503`s are
//!   drops, so the client's limit backs off to what the server takes, and
//!   the calls beyond it are refused in the client, in nanoseconds, without
//!   a round trip;
//! * `no client limit`: the same client bare: every call beyond `K` travels
//!   to the server to be told `503`.
//!
//! Each run prints, per phase, the calls served, the server's `503`s, the
//! refusals in the client, the client's limit (mean over the phase's second
//! half) and the median time a refused call took to learn it. The
//! `report:` line holds the figures for scripts. `--svg` writes the
//! client's limit over time against the server's `K`
//! (`docs/img/client_limit.svg`).
//!
//! ```text
//! cargo run --release --features http --example client_limit
//! cargo run --release --features http --example client_limit -- --svg docs/img/client_limit.svg
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use clap::Parser;
use hdrhistogram::Histogram;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sidejob::adaptive::Adaptive;
use sidejob::tower::{is_overload_response, BoxError, HttpShedLayer, ShedLayer};
use sidejob::{Overload, Resource};
use tower::util::BoxCloneSyncService;
use tower::{Layer, ServiceExt};

#[path = "../tests/support/line_chart.rs"]
mod line_chart;

use line_chart::LineChart;

#[derive(Debug, Parser)]
#[command(about = "A client's adaptive limit following its dependency's capacity")]
struct Args {
    /// Seconds each server capacity lasts.
    #[arg(long, default_value_t = 4)]
    phase_secs: u64,
    /// Client tasks calling in a closed loop.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// The server's time per request, in milliseconds.
    #[arg(long, default_value_t = 20)]
    work_ms: u64,
    /// Write the client's limit over time, against the server's capacity,
    /// as SVG here.
    #[arg(long)]
    svg: Option<String>,
}

/// The server's capacity in each phase.
const PHASES: [usize; 3] = [16, 6, 24];

/// The client's adaptive window.
const WINDOW: Duration = Duration::from_millis(100);

/// How long a client waits after a refusal before it tries again.
const BACKOFF: Duration = Duration::from_millis(2);

type Service = BoxCloneSyncService<Request<Empty<Bytes>>, Response<Incoming>, BoxError>;

/// What one phase of a run counted.
#[derive(Default)]
struct PhaseCount {
    served: AtomicU64,
    server_refused: AtomicU64,
    client_refused: AtomicU64,
}

/// A run's figures.
struct Run {
    name: &'static str,
    phases: Vec<PhaseFigures>,
    refusal: Histogram<u64>,
    /// The client's limit over time: (seconds, limit).
    trace: Vec<(f64, usize)>,
}

struct PhaseFigures {
    served: u64,
    server_refused: u64,
    client_refused: u64,
    /// The client's mean limit over the phase's second half.
    limit: Option<f64>,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let server = Arc::new(Resource::builder().capacity(PHASES[0]).build().unwrap());
    let work = Duration::from_millis(args.work_ms);
    let draws = Arc::new(AtomicU64::new(0));
    let router = Router::new()
        .route(
            "/work",
            get(move || {
                // Each request's work × U[0.5, 1.5]: jitter, not a metronome.
                let factor = 0.5 + unit(draws.fetch_add(1, Ordering::Relaxed));
                async move {
                    tokio::time::sleep(work.mul_f64(factor)).await;
                    "done"
                }
            }),
        )
        .layer(HttpShedLayer::new(Arc::clone(&server)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let uri = format!("http://{address}/work");

    println!(
        "client_limit: {} clients, server capacity {:?} for {} s each, {} ms x U[0.5, 1.5] a request",
        args.clients, PHASES, args.phase_secs, args.work_ms
    );
    let mut runs = Vec::new();
    for limited in [true, false] {
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(args.clients)
            .build_http::<Empty<Bytes>>();
        let (service, limit) = if limited {
            let resource = Arc::new(
                Resource::builder()
                    .capacity(args.clients)
                    .adaptive(Adaptive::aimd().window(WINDOW))
                    .build()
                    .unwrap(),
            );
            let layer =
                ShedLayer::new(Arc::clone(&resource)).drop_on_response(is_overload_response);
            (Service::new(layer.layer(client)), Some(resource))
        } else {
            (Service::new(client.map_err(BoxError::from)), None)
        };
        let name = if limited {
            "client limit"
        } else {
            "no client limit"
        };
        let run = drive(name, &args, &server, &uri, service, limit).await;
        print_run(&run);
        runs.push(run);
    }

    let (with, without) = (&runs[0], &runs[1]);
    let total =
        |run: &Run, count: fn(&PhaseFigures) -> u64| -> u64 { run.phases.iter().map(count).sum() };
    let followed = with.phases.iter().zip(PHASES).all(|(phase, k)| {
        phase
            .limit
            .is_some_and(|limit| limit >= k as f64 * 0.5 && limit <= k as f64 * 2.0 + 2.0)
    });
    println!(
        "\nthe client's limit {} the server's capacity; {} calls reached the server to be refused with it, {} without",
        if followed { "followed" } else { "FAILED to follow" },
        total(with, |phase| phase.server_refused),
        total(without, |phase| phase.server_refused),
    );
    println!(
        "report: served_limited={} served_unlimited={} server_503_limited={} server_503_unlimited={} client_refused={} refusal_p50_ns_limited={} refusal_p50_ns_unlimited={} limits={}",
        total(with, |phase| phase.served),
        total(without, |phase| phase.served),
        total(with, |phase| phase.server_refused),
        total(without, |phase| phase.server_refused),
        total(with, |phase| phase.client_refused),
        with.refusal.value_at_quantile(0.5),
        without.refusal.value_at_quantile(0.5),
        with.phases
            .iter()
            .map(|phase| format!("{:.1}", phase.limit.unwrap_or(f64::NAN)))
            .collect::<Vec<_>>()
            .join("/"),
    );
    if let Some(path) = &args.svg {
        std::fs::write(path, svg(&with.trace, args.phase_secs)).expect("the SVG is written");
        println!("wrote {path}");
    }
}

/// One run: the clients call through `service` while the server's capacity
/// goes through the phases.
async fn drive(
    name: &'static str,
    args: &Args,
    server: &Arc<Resource>,
    uri: &str,
    service: Service,
    limit: Option<Arc<Resource>>,
) -> Run {
    server.set_capacity(PHASES[0]).unwrap();
    let counts: Arc<Vec<PhaseCount>> =
        Arc::new(PHASES.iter().map(|_| PhaseCount::default()).collect());
    let refusal = Arc::new(Mutex::new(histogram()));
    let phase_length = Duration::from_secs(args.phase_secs);
    let start = Instant::now();
    let end = start + phase_length * PHASES.len() as u32;
    let clients: Vec<_> = (0..args.clients)
        .map(|_| {
            let (service, counts, refusal) =
                (service.clone(), Arc::clone(&counts), Arc::clone(&refusal));
            let uri = uri.to_owned();
            tokio::spawn(async move {
                let mut refusals = histogram();
                while Instant::now() < end {
                    let phase = phase_of(start.elapsed(), phase_length);
                    let request = Request::get(&uri).body(Empty::new()).unwrap();
                    let began = Instant::now();
                    match service.clone().oneshot(request).await {
                        Ok(response) if response.status() == StatusCode::OK => {
                            let _ = response.into_body().collect().await;
                            counts[phase].served.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(response) => {
                            let _ = response.into_body().collect().await;
                            refusals.saturating_record(began.elapsed().as_nanos() as u64);
                            counts[phase].server_refused.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(BACKOFF).await;
                        }
                        Err(error) if error.is::<Overload>() => {
                            refusals.saturating_record(began.elapsed().as_nanos() as u64);
                            counts[phase].client_refused.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(BACKOFF).await;
                        }
                        Err(error) => panic!("the call failed: {error}"),
                    }
                }
                refusal.lock().unwrap().add(&refusals).unwrap();
            })
        })
        .collect();

    // The phases, and the client's limit sampled every 50 ms.
    let mut trace = Vec::new();
    let mut phase = 0;
    while Instant::now() < end {
        let now = phase_of(start.elapsed(), phase_length);
        if now != phase {
            phase = now;
            server.set_capacity(PHASES[phase]).unwrap();
        }
        if let Some(limit) = &limit {
            trace.push((start.elapsed().as_secs_f64(), limit.capacity()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for client in clients {
        client.await.unwrap();
    }
    let phases = counts
        .iter()
        .enumerate()
        .map(|(index, count)| {
            let (from, to) = (
                (index as f64 + 0.5) * args.phase_secs as f64,
                (index + 1) as f64 * args.phase_secs as f64,
            );
            let late: Vec<f64> = trace
                .iter()
                .filter(|(t, _)| *t >= from && *t < to)
                .map(|&(_, limit)| limit as f64)
                .collect();
            PhaseFigures {
                served: count.served.load(Ordering::Relaxed),
                server_refused: count.server_refused.load(Ordering::Relaxed),
                client_refused: count.client_refused.load(Ordering::Relaxed),
                limit: (!late.is_empty()).then(|| late.iter().sum::<f64>() / late.len() as f64),
            }
        })
        .collect();
    let refusal = Arc::try_unwrap(refusal).unwrap().into_inner().unwrap();
    Run {
        name,
        phases,
        refusal,
        trace,
    }
}

/// A uniform draw in [0, 1) from the `n`th number of a sequence
/// (splitmix64), so every request draws its own without a lock.
fn unit(n: u64) -> f64 {
    let mut z = n.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Nanoseconds from 1 to a minute, to 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap()
}

fn phase_of(elapsed: Duration, phase_length: Duration) -> usize {
    ((elapsed.as_nanos() / phase_length.as_nanos()) as usize).min(PHASES.len() - 1)
}

fn print_run(run: &Run) {
    println!("\n{}", run.name);
    println!(
        "{:>8} {:>10} {:>12} {:>17} {:>13}",
        "server K", "served", "server 503s", "refused in client", "client limit"
    );
    for (phase, k) in run.phases.iter().zip(PHASES) {
        let limit = phase
            .limit
            .map_or_else(|| "-".to_owned(), |limit| format!("{limit:.1}"));
        println!(
            "{:>8} {:>10} {:>12} {:>17} {:>13}",
            k, phase.served, phase.server_refused, phase.client_refused, limit
        );
    }
    println!(
        "a refused call learned it in {} (median), {} (p99)",
        duration(run.refusal.value_at_quantile(0.5)),
        duration(run.refusal.value_at_quantile(0.99)),
    );
}

fn duration(nanos: u64) -> String {
    match nanos {
        0..=9_999 => format!("{nanos} ns"),
        10_000..=9_999_999 => format!("{:.1} µs", nanos as f64 / 1e3),
        _ => format!("{:.1} ms", nanos as f64 / 1e6),
    }
}

/// The client's limit over time against the server's capacity, as an SVG
/// line chart (as `docs/img/adaptive.svg`).
fn svg(trace: &[(f64, usize)], phase_secs: u64) -> String {
    let seconds = (phase_secs * PHASES.len() as u64) as f64;
    let mut chart = LineChart::new(
        "sidejob on the client side: the client's adaptive limit against the server's capacity",
        seconds,
        64.0,
        &[0, 16, 32, 48, 64],
    );
    for (phase, &k) in PHASES.iter().enumerate() {
        let (from, to) = (
            chart.x((phase as u64 * phase_secs) as f64),
            chart.x(((phase + 1) as u64 * phase_secs) as f64),
        );
        let level = chart.y(k as f64);
        chart.draw(&format!(
            r#"<line x1="{from}" x2="{to}" y1="{level}" y2="{level}" stroke="black" stroke-width="2"/>"#
        ));
    }
    chart.line("#1f77b4", trace.iter().map(|&(t, limit)| (t, limit as f64)));
    chart.legend(
        0.55,
        40.0,
        [
            ("the server's capacity K", "black"),
            ("the client's limit (AIMD on the server's 503s)", "#1f77b4"),
        ],
    );
    chart.finish()
}
