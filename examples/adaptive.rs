//! Adaptive limits against a downstream whose concurrency nobody told them,
//! under the traffic real services see.
//!
//! A simulated downstream (tokio tasks) serves `K` requests at once in
//! `--base-ms`; beyond `K` it slows down for everyone (each request takes
//! `base × in flight / K`), so its goodput stays `K / base` and only its
//! latency grows. Clients arrive open-loop at 4 × the downstream's capacity
//! and go through one limiter each run. Each scenario is three phases of
//! `--phase-secs`:
//!
//! * `knee`: `K` is 16, then 6, then 24; every request takes exactly its
//!   latency;
//! * `jitter`: the same, each request's latency × a uniform draw in
//!   [0.5, 1.5];
//! * `bimodal`: the same, each request ×0.1 or ×1.9 at random (a mix of
//!   cheap and dear requests, 2 ms and 38 ms at 20 ms: no queue);
//! * `step`: `K` stays 16; from the second phase on, every request takes
//!   ten times as long, for good;
//! * `timeouts`: `K` as in `knee`; clients give up after 3 × base (a
//!   permit released as [`cancelled`](sidejob::Permit::cancelled); tower's
//!   `Timeout` around tower-acc; congestion-limiter told `Overload`).
//!
//! The limiters:
//!
//! * `fixed-4`, `fixed-16`, `fixed-64` (`knee` only): a fixed limit too
//!   low, right for the first phase, too high (a `Resource` that never
//!   changes);
//! * `oracle`: a fixed limit set to `K` at every change, the best a fixed
//!   limit can do;
//! * `tower-concurrency-limit` (`knee` only): tower's `ConcurrencyLimit`
//!   at 16, which queues what it cannot admit;
//! * `tower-acc-vegas`: `tower-acc`'s `ConcurrencyLimit` with its default
//!   Vegas, behind tower's `LoadShed` so that it refuses rather than queues;
//! * `congestion-limiter-vegas`: `congestion-limiter`'s `DefaultLimiter`
//!   with its Vegas, starting at 16;
//! * `aimd`, `gradient`, `vegas`: an adaptive `Resource` starting at 16,
//!   each with its defaults (AIMD with a timeout of 1.4 × the slowest
//!   request unloaded: AIMD reads latency only against its timeout, so it
//!   needs the one its callers have).
//!
//! It prints, per scenario, goodput, p50/p99 of the admitted requests'
//! latency, and how many windows each adaptive limit took to settle into
//! [K, 1.5 K] after each change (`never` when it did not stay there to the
//! phase's end); `--svg` writes the `knee` scenario's limit over time (as in
//! `docs/img/adaptive.svg`).
//!
//! ```text
//! cargo run --release --example adaptive
//! cargo run --release --example adaptive -- --scenario bimodal --only gradient
//! cargo run --release --example adaptive -- --svg docs/img/adaptive.svg
//! ADAPTIVE_TRACE=1 cargo run --release --example adaptive -- --only vegas  # each limit traced to stderr
//! ADAPTIVE_TRACE=stats cargo run --release --example adaptive -- --only vegas  # each AdaptiveStats too
//! ```

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use congestion_limiter::limiter::Limiter as _;
use hdrhistogram::Histogram;
use sidejob::adaptive::{Adaptive, Aimd, DEFAULT_WINDOW};
use sidejob::Resource;
use tower::ServiceExt;

#[path = "../tests/support/line_chart.rs"]
mod line_chart;

use line_chart::LineChart;

#[derive(Debug, Parser)]
#[command(about = "Adaptive limits against a downstream whose limit changes")]
struct Args {
    /// Seconds each K lasts.
    #[arg(long, default_value_t = 5)]
    phase_secs: u64,
    /// The downstream's latency below its knee, in milliseconds.
    #[arg(long, default_value_t = 20)]
    base_ms: u64,
    /// Write the limit over time of the adaptive runs as SVG here.
    #[arg(long)]
    svg: Option<String>,
    /// Run only the limiters whose name contains this.
    #[arg(long)]
    only: Option<String>,
    /// Run only this scenario: knee, jitter, bimodal, step or timeouts.
    #[arg(long)]
    scenario: Option<String>,
}

/// What the traffic looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Knee,
    Jitter,
    Bimodal,
    Step,
    Timeouts,
}

impl Scenario {
    const ALL: [Scenario; 5] = [
        Scenario::Knee,
        Scenario::Jitter,
        Scenario::Bimodal,
        Scenario::Step,
        Scenario::Timeouts,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::Knee => "knee",
            Scenario::Jitter => "jitter",
            Scenario::Bimodal => "bimodal",
            Scenario::Step => "step",
            Scenario::Timeouts => "timeouts",
        }
    }

    /// `K` in each phase.
    fn phases(self) -> [usize; 3] {
        match self {
            Scenario::Step => [16, 16, 16],
            _ => PHASES,
        }
    }

    /// The latency's factor in phase `phase`, beside the shape's.
    fn stretch(self, phase: usize) -> u64 {
        match self {
            Scenario::Step if phase > 0 => 10,
            _ => 1,
        }
    }

    /// The slowest factor a request's shape gives it.
    fn slowest(self) -> f64 {
        match self {
            Scenario::Jitter => 1.5,
            Scenario::Bimodal => 1.9,
            _ => 1.0,
        }
    }

    /// A request's factor, from a uniform draw in [0, 1).
    fn factor(self, draw: f64) -> f64 {
        match self {
            Scenario::Jitter => 0.5 + draw,
            Scenario::Bimodal if draw < 0.5 => 0.1,
            Scenario::Bimodal => 1.9,
            _ => 1.0,
        }
    }

    /// How long clients wait before they give up, if they do.
    fn timeout(self, base: Duration) -> Option<Duration> {
        (self == Scenario::Timeouts).then_some(base * 3)
    }
}

/// K in each phase.
const PHASES: [usize; 3] = [16, 6, 24];
/// Clients arrive at this many times the downstream's capacity.
const OFFERED: f64 = 4.0;
/// How often the limit is recorded.
const TRACE_EVERY: Duration = Duration::from_millis(50);

/// The downstream: `K` at once at base latency, slower for all beyond.
struct Downstream {
    k: AtomicUsize,
    in_flight: AtomicUsize,
    base: Duration,
    /// The scenario's factor now (the step).
    stretch: AtomicU64,
    scenario: Scenario,
    /// A xorshift state for the requests' shapes.
    seed: AtomicU64,
}

impl Downstream {
    fn new(scenario: Scenario, base: Duration) -> Downstream {
        Downstream {
            k: AtomicUsize::new(scenario.phases()[0]),
            in_flight: AtomicUsize::new(0),
            base,
            stretch: AtomicU64::new(1),
            scenario,
            seed: AtomicU64::new(0x9E37_79B9_7F4A_7C15),
        }
    }

    /// A uniform draw in [0, 1).
    fn draw(&self) -> f64 {
        let mut x = self.seed.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed.store(x, Ordering::Relaxed);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    async fn serve(&self) {
        /// Leaves the downstream however the request ends (a client's
        /// timeout drops it mid-way).
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        let _leave = Leave(&self.in_flight);
        let k = self.k.load(Ordering::Relaxed);
        let queue = (now as f64 / k as f64).max(1.0);
        let factor =
            self.scenario.factor(self.draw()) * self.stretch.load(Ordering::Relaxed) as f64;
        tokio::time::sleep(self.base.mul_f64(queue * factor)).await;
    }
}

/// What a run measured.
struct Run {
    name: String,
    completed: u64,
    latency: Histogram<u64>,
    /// (seconds since start, limit, K)
    trace: Vec<(f64, usize, usize)>,
}

/// The downstream as a tower service.
type DownstreamService = tower::util::BoxCloneService<(), (), tower::BoxError>;

/// `congestion-limiter`'s limiter, with its Vegas.
type CongestionLimiter =
    congestion_limiter::limiter::DefaultLimiter<congestion_limiter::limits::Vegas>;

/// How a limiter admits one request and runs it.
#[derive(Clone)]
enum Limiter {
    Resource(Arc<Resource>),
    /// A tower service over the downstream; `Err` is a refusal.
    Tower(DownstreamService),
    Congestion(Arc<CongestionLimiter>),
}

/// The limit a limiter has now, if it tells (and is not probing: an
/// adaptive `Resource` halves it on purpose for two windows now and then).
fn limit_of(limiter: &Limiter) -> Option<usize> {
    match limiter {
        Limiter::Resource(resource) => match resource.adaptive_stats() {
            Some(stats) if stats.probing => None,
            _ => Some(resource.capacity()),
        },
        Limiter::Tower(_) => None,
        Limiter::Congestion(limiter) => Some(limiter.state().limit()),
    }
}

fn main() {
    let args = Args::parse();
    let base = Duration::from_millis(args.base_ms);
    let scenarios: Vec<Scenario> = Scenario::ALL
        .into_iter()
        .filter(|scenario| {
            args.scenario
                .as_deref()
                .is_none_or(|only| only == scenario.name())
        })
        .collect();
    assert!(
        !scenarios.is_empty(),
        "no scenario named {:?}",
        args.scenario
    );
    println!("== summary"); // what `benches/report.sh` puts on the results page
    for scenario in scenarios {
        let runs = run_scenario(scenario, base, &args);
        report(scenario, &runs, base, args.phase_secs);
        if let (Some(path), Scenario::Knee) = (&args.svg, scenario) {
            std::fs::write(path, svg(&runs, args.phase_secs)).expect("the SVG is written");
            eprintln!("wrote {path}");
        }
    }
}

/// Every limiter through `scenario`.
fn run_scenario(scenario: Scenario, base: Duration, args: &Args) -> Vec<Run> {
    let fixed = |limit: usize| Resource::builder().capacity(limit).build().unwrap();
    let adaptive = |adaptive: Adaptive| {
        Resource::builder()
            .capacity(16)
            .adaptive(adaptive)
            .build()
            .unwrap()
    };
    let aimd_timeout = base.mul_f64(1.4 * scenario.slowest());
    let first_k = scenario.phases()[0];
    type Make = Box<dyn Fn() -> Resource>;
    let knee_only = ["fixed-4", "fixed-16", "fixed-64", "tower-concurrency-limit"];
    let contenders: Vec<(&str, Option<Make>)> = vec![
        ("fixed-4", Some(Box::new(move || fixed(4)))),
        ("fixed-16", Some(Box::new(move || fixed(16)))),
        ("fixed-64", Some(Box::new(move || fixed(64)))),
        ("oracle", Some(Box::new(move || fixed(first_k)))),
        ("tower-concurrency-limit", None),
        ("tower-acc-vegas", None),
        ("congestion-limiter-vegas", None),
        (
            "aimd",
            Some(Box::new(move || {
                adaptive(Adaptive::from(Aimd::default().timeout(aimd_timeout)))
            })),
        ),
        (
            "gradient",
            Some(Box::new(move || adaptive(Adaptive::gradient()))),
        ),
        ("vegas", Some(Box::new(move || adaptive(Adaptive::vegas())))),
    ];
    let timeout = scenario.timeout(base);
    let mut runs = Vec::new();
    for (name, make) in contenders {
        if args
            .only
            .as_deref()
            .is_some_and(|only| !name.contains(only))
            || (scenario != Scenario::Knee && knee_only.contains(&name))
        {
            continue;
        }
        let downstream = Arc::new(Downstream::new(scenario, base));
        let served = Arc::clone(&downstream);
        let service = tower::service_fn(move |()| {
            let served = Arc::clone(&served);
            async move {
                served.serve().await;
                Ok::<_, tower::BoxError>(())
            }
        });
        let limiter = match (make, name) {
            (Some(make), _) => Limiter::Resource(Arc::new(make())),
            (None, "tower-concurrency-limit") => Limiter::Tower(DownstreamService::new(
                tower::limit::ConcurrencyLimit::new(service, first_k),
            )),
            (None, "tower-acc-vegas") => {
                // Its callers' timeout inside, where its limit sees it.
                let service =
                    tower::timeout::Timeout::new(service, timeout.unwrap_or(Duration::MAX));
                Limiter::Tower(DownstreamService::new(tower::load_shed::LoadShed::new(
                    tower_acc::ConcurrencyLimit::new(service, tower_acc::Vegas::default()),
                )))
            }
            (None, _) => Limiter::Congestion(Arc::new(CongestionLimiter::new(
                congestion_limiter::limits::Vegas::new_with_initial_limit(first_k),
            ))),
        };
        eprintln!("running {} / {name} ...", scenario.name());
        // A runtime per limiter, shut down after it: requests a queueing
        // limiter still holds must not run into the next limiter's time.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let run = runtime.block_on(run(scenario, name, limiter, downstream, args));
        runtime.shutdown_background();
        if std::env::var_os("ADAPTIVE_TRACE").is_some() {
            let limits: Vec<_> = run.trace.iter().map(|(_, limit, _)| *limit).collect();
            eprintln!("{} / {name}: {limits:?}", scenario.name());
        }
        runs.push(run);
    }
    runs
}

async fn run(
    scenario: Scenario,
    name: &str,
    limiter: Limiter,
    downstream: Arc<Downstream>,
    args: &Args,
) -> Run {
    let phases = scenario.phases();
    let timeout = scenario.timeout(downstream.base);
    let completed = Arc::new(AtomicU64::new(0));
    let latency = Arc::new(Mutex::new(
        Histogram::<u64>::new_with_bounds(1_000, 60_000_000_000, 2).unwrap(),
    ));
    let began = Instant::now();
    let phase = Duration::from_secs(args.phase_secs);
    let total = phase * phases.len() as u32;
    let mut trace = Vec::new();
    let mut next_trace = Duration::ZERO;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    let mut owed = 0.0;
    let mut phase_seen = 0;
    loop {
        tick.tick().await;
        let elapsed = began.elapsed();
        if elapsed >= total {
            break;
        }
        let index = ((elapsed.as_secs_f64() / phase.as_secs_f64()) as usize).min(phases.len() - 1);
        let k = phases[index];
        if index != phase_seen {
            phase_seen = index;
            downstream.k.store(k, Ordering::Relaxed);
            downstream
                .stretch
                .store(scenario.stretch(index), Ordering::Relaxed);
            if name == "oracle" {
                if let Limiter::Resource(resource) = &limiter {
                    resource.set_capacity(k).unwrap();
                }
            }
        }
        if elapsed >= next_trace {
            // A probe's two windows at half the limit are on purpose: not
            // in the trace, nor in how long the limit took to settle.
            if let Some(limit) = limit_of(&limiter) {
                trace.push((elapsed.as_secs_f64(), limit, k));
            }
            if std::env::var("ADAPTIVE_TRACE").is_ok_and(|trace| trace == "stats") {
                if let Limiter::Resource(resource) = &limiter {
                    if let Some(stats) = resource.adaptive_stats() {
                        eprintln!("{:.2}s K {k}: {stats:?}", elapsed.as_secs_f64());
                    }
                }
            }
            next_trace += TRACE_EVERY;
        }
        // Open-loop arrivals: OFFERED × K / base a second.
        owed += OFFERED * k as f64 / downstream.base.as_secs_f64() / 1000.0;
        while owed >= 1.0 {
            owed -= 1.0;
            let (limiter, downstream) = (limiter.clone(), Arc::clone(&downstream));
            let (completed, latency) = (Arc::clone(&completed), Arc::clone(&latency));
            tokio::spawn(async move {
                let arrived = Instant::now();
                // The downstream's answer, or none if the client gave up.
                let serve = || async {
                    match timeout {
                        Some(timeout) => tokio::time::timeout(timeout, downstream.serve())
                            .await
                            .is_ok(),
                        None => {
                            downstream.serve().await;
                            true
                        }
                    }
                };
                let served = match limiter {
                    Limiter::Resource(resource) => match resource.try_acquire_owned() {
                        Ok(permit) => {
                            let answered = serve().await;
                            if answered {
                                drop(permit); // a latency sample
                            } else {
                                permit.cancelled(); // a censored sample
                            }
                            answered
                        }
                        Err(_) => false, // refused at once
                    },
                    // Refused (`LoadShed`'s `Overloaded`), timed out or served.
                    Limiter::Tower(service) => service.oneshot(()).await.is_ok(),
                    Limiter::Congestion(limiter) => match limiter.try_acquire().await {
                        Some(token) => {
                            let answered = serve().await;
                            let outcome = if answered {
                                congestion_limiter::limiter::Outcome::Success
                            } else {
                                congestion_limiter::limiter::Outcome::Overload
                            };
                            limiter.release(token, Some(outcome)).await;
                            answered
                        }
                        None => false,
                    },
                };
                if served && arrived.elapsed() <= total {
                    completed.fetch_add(1, Ordering::Relaxed);
                    let nanos = arrived.elapsed().as_nanos() as u64;
                    latency.lock().unwrap().saturating_record(nanos);
                }
            });
        }
    }
    let latency = latency.lock().unwrap().clone();
    Run {
        name: name.to_owned(),
        completed: completed.load(Ordering::Relaxed),
        latency,
        trace,
    }
}

/// Windows after the change at `phase` until the limit stays within [K,
/// 1.5 K] to the phase's end, if it does.
fn settle_windows(
    trace: &[(f64, usize, usize)],
    phase: usize,
    phase_secs: u64,
    k: usize,
) -> Option<f64> {
    let (from, to) = (
        (phase as u64 * phase_secs) as f64,
        ((phase + 1) as u64 * phase_secs) as f64,
    );
    let in_phase: Vec<_> = trace
        .iter()
        .filter(|(t, ..)| *t >= from && *t < to)
        .collect();
    let within = |limit: usize| limit >= k && limit * 2 <= k * 3;
    let last_out = in_phase.iter().rposition(|(_, limit, _)| !within(*limit));
    let settled_at = match last_out {
        None => from,
        Some(i) if i + 1 < in_phase.len() => in_phase[i + 1].0,
        Some(_) => return None,
    };
    Some((settled_at - from) / DEFAULT_WINDOW.as_secs_f64())
}

fn report(scenario: Scenario, runs: &[Run], base: Duration, phase_secs: u64) {
    let phases = scenario.phases();
    let seconds = (phase_secs * phases.len() as u64) as f64;
    let best_fixed = runs
        .iter()
        .filter(|run| run.name.starts_with("fixed") || run.name == "oracle")
        .max_by_key(|run| run.completed);
    let oracle = runs.iter().find(|run| run.name == "oracle");
    let ideal: f64 = phases
        .iter()
        .enumerate()
        .map(|(phase, &k)| k as f64 / (base * scenario.stretch(phase) as u32).as_secs_f64())
        .sum::<f64>()
        / phases.len() as f64;
    let what = match scenario {
        Scenario::Knee => "exact latencies",
        Scenario::Jitter => "each request x U[0.5, 1.5]",
        Scenario::Bimodal => "each request x0.1 or x1.9",
        Scenario::Step => "every request x10 from the second phase on",
        Scenario::Timeouts => "clients give up after 3 x base",
    };
    println!();
    println!(
        "### {}: K = {phases:?}, {phase_secs} s each, base {} ms, {what}; ideal goodput {ideal:.0}/s",
        scenario.name(),
        base.as_millis()
    );
    println!();
    let changes = match scenario {
        Scenario::Step => "the start, the step, and on".to_owned(),
        _ => format!("K = {}", phases.map(|k| k.to_string()).join(", ")),
    };
    println!(
        "| limiter | goodput /s | vs best fixed | p50 ms | p99 ms | p99 vs oracle | windows to settle after {changes} |"
    );
    println!("|---|---|---|---|---|---|---|");
    for run in runs {
        let goodput = run.completed as f64 / seconds;
        let p = |q: f64| run.latency.value_at_quantile(q) as f64 / 1e6;
        let vs = best_fixed.map_or("-".into(), |best| {
            format!("{:.2}", run.completed as f64 / best.completed as f64)
        });
        let vs_p99 = oracle.map_or("-".into(), |oracle| {
            format!(
                "{:.2}",
                p(0.99) / (oracle.latency.value_at_quantile(0.99) as f64 / 1e6)
            )
        });
        let settle = if !run.trace.is_empty() && !run.name.starts_with("fixed") {
            (0..phases.len())
                .map(
                    |phase| match settle_windows(&run.trace, phase, phase_secs, phases[phase]) {
                        Some(windows) => format!("{windows:.0}"),
                        None => "never".to_owned(),
                    },
                )
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            "-".to_owned()
        };
        println!(
            "| {} | {goodput:.0} | {vs} | {:.1} | {:.1} | {vs_p99} | {settle} |",
            run.name,
            p(0.5),
            p(0.99),
        );
    }
    if let Some(best) = best_fixed {
        println!();
        println!("best fixed: {}", best.name);
    }
}

/// The limit of the adaptive runs over time, with K, as an SVG line chart.
fn svg(runs: &[Run], phase_secs: u64) -> String {
    let seconds = (phase_secs * PHASES.len() as u64) as f64;
    let mut chart = LineChart::new(
        "sidejob adaptive limits: the limit over time against the downstream's K",
        seconds,
        40.0,
        &[0, 10, 20, 30, 40],
    );
    let colours = [
        ("aimd", "#d62728"),
        ("gradient", "#1f77b4"),
        ("vegas", "#2ca02c"),
    ];
    // K, as a band [K, 1.5 K].
    for (phase, &k) in PHASES.iter().enumerate() {
        let (from, to) = (
            chart.x((phase as u64 * phase_secs) as f64),
            chart.x(((phase + 1) as u64 * phase_secs) as f64),
        );
        let (low, high) = (chart.y(k as f64), chart.y(k as f64 * 1.5));
        chart.draw(&format!(
            r##"<rect x="{from}" y="{high}" width="{}" height="{}" fill="#eee"/><line x1="{from}" x2="{to}" y1="{low}" y2="{low}" stroke="black" stroke-width="2"/>"##,
            to - from,
            low - high,
        ));
    }
    for (name, colour) in colours {
        let Some(run) = runs.iter().find(|run| run.name == name) else {
            continue;
        };
        chart.line(
            colour,
            run.trace.iter().map(|&(t, limit, _)| (t, limit as f64)),
        );
    }
    // The legend sits over the middle phase, whose limits are low.
    chart.legend(
        0.42,
        40.0,
        [("K (grey: [K, 1.5 K])", "black")]
            .into_iter()
            .chain(colours),
    );
    chart.finish()
}
