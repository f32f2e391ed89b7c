//! Overload demo: a simulated request handler guarded by a [`sidejob::Resource`].
//!
//! Many client threads fire requests at a downstream that serves `capacity`
//! requests at a time: each takes `--work-us`, and with more in flight than
//! its capacity every one slows in proportion (a processor shared `n` ways
//! runs each job `n / capacity` times slower). Each request asks for a
//! permit with `try_acquire`: if admitted it does its work and drops the
//! permit; if refused it gets [`sidejob::Overload`] back at once, counts a
//! rejection and moves on. The demo shows that
//!
//! * concurrency never exceeds the capacity (checked with a separate holder
//!   counter), while excess load is shed instead of queued;
//! * admitted requests keep a flat latency, and a refusal costs nanoseconds;
//! * where the capacity is, shard by shard and in the reserve (`stats()`).
//!
//! The same load then runs against the alternatives, through the same
//! client and measurement code: two other fail-fast limiters (one shared
//! counter, tokio's `Semaphore::try_acquire`), and the two things a service
//! does without one: a limit that *queues* (`Semaphore::acquire().await`,
//! what tower's `ConcurrencyLimit` does), whose admitted latency grows with
//! the clients waiting in line, and *no guard* at all, where every request
//! reaches the downstream and all of them slow down. The comparison shows
//! goodput per core (admitted requests per second over the CPUs the run
//! had) and the admitted latency of each. (The work is a sleep, which
//! overshoots by tens of µs: a run whose requests sleep longer, as with no
//! guard, loses less of its throughput to that. Compare the latencies.)
//!
//! Run it with the defaults (16 clients, capacity 8, 200 µs of work, 3 s
//! per run), or with four clients per CPU on a many-core machine:
//!
//! ```text
//! cargo run --release --example overload
//! cargo run --release --example overload -- --clients-per-cpu 4
//! cargo run --release --example overload -- --threads 4 --capacity 2 --duration 1
//! cargo run --release --example overload -- --help
//! ```

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use sidejob::{Permit, Resource};

/// Command-line settings of the demo.
#[derive(Debug, Parser)]
#[command(
    name = "overload",
    about = "Drive a sidejob::Resource far past its capacity, then compare it with a single shared counter",
    long_about = None
)]
struct Cli {
    /// Requests admitted at once (the resource's capacity).
    #[arg(long, default_value_t = 8, value_name = "N")]
    capacity: usize,

    /// Client threads sending requests as fast as they can.
    #[arg(
        long,
        default_value_t = 16,
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..=4096)
    )]
    threads: u16,

    /// Client threads per CPU, instead of `--threads` (4 shows a many-core
    /// machine's scaling edge).
    #[arg(
        long = "clients-per-cpu",
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..=64)
    )]
    clients_per_cpu: Option<u16>,

    /// How long each run lasts: seconds (`3`, `1.5`) or with a unit (`500ms`, `2s`, `1m`).
    #[arg(long, default_value = "3", value_name = "SECONDS", value_parser = parse_duration)]
    duration: Duration,

    /// Shards of the resource [default: the number of CPUs].
    #[arg(long, value_name = "N")]
    shards: Option<usize>,

    /// Simulated work per admitted request, in microseconds (slept, not spun).
    #[arg(
        long = "work-us",
        default_value_t = 200,
        value_name = "MICROS",
        value_parser = clap::value_parser!(u64).range(0..=1_000_000)
    )]
    work_us: u64,

    /// Pause after a refusal, in microseconds, so refused clients do not spin
    /// a core at 100% (0: just yield).
    #[arg(
        long = "backoff-us",
        default_value_t = 20,
        value_name = "MICROS",
        value_parser = clap::value_parser!(u64).range(0..=1_000_000)
    )]
    backoff_us: u64,
}

/// Parses `--duration`: plain seconds or a number with an `ms`, `s` or `m` unit.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let (number, scale) = if let Some(number) = trimmed.strip_suffix("ms") {
        (number, 1e-3)
    } else if let Some(number) = trimmed.strip_suffix('s') {
        (number, 1.0)
    } else if let Some(number) = trimmed.strip_suffix('m') {
        (number, 60.0)
    } else {
        (trimmed, 1.0)
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        "expected seconds such as `3` or `1.5`, or a number with a unit: `500ms`, `2s`, `1m`"
            .to_string()
    })?;
    let seconds = value * scale;
    if seconds.is_nan() || seconds <= 0.0 {
        return Err("the duration must be greater than zero".into());
    }
    match Duration::try_from_secs_f64(seconds) {
        Ok(duration) if duration.is_zero() => Err("the duration must be greater than zero".into()),
        Ok(duration) if duration > Duration::from_secs(24 * 3600) => {
            Err("the duration must be at most a day".into())
        }
        Ok(duration) => Ok(duration),
        Err(_) => Err("the duration is too long".into()),
    }
}

/// A concurrency limiter as the clients see it: admit or refuse, at once.
trait Limiter: Sync {
    /// Proof of admission; dropping it gives the slot back.
    type Guard<'a>
    where
        Self: 'a;

    /// Admits one request, or refuses it (`None`) without waiting.
    fn try_enter(&self) -> Option<Self::Guard<'_>>;

    /// Requests admitted right now.
    fn usage(&self) -> usize;

    /// The most requests admitted at once.
    fn capacity(&self) -> usize;
}

impl Limiter for Resource {
    type Guard<'a> = Permit<'a>;

    #[inline]
    fn try_enter(&self) -> Option<Permit<'_>> {
        self.try_acquire().ok()
    }

    fn usage(&self) -> usize {
        Resource::usage(self)
    }

    fn capacity(&self) -> usize {
        Resource::capacity(self)
    }
}

/// The naive alternative: one shared counter that every client updates.
#[derive(Debug)]
struct SingleCounter {
    /// The most requests admitted at once.
    capacity: usize,
    /// Requests admitted right now, on its own cache line.
    usage: CachePadded<AtomicUsize>,
}

impl SingleCounter {
    /// A counter admitting at most `capacity` requests at once.
    fn new(capacity: usize) -> Self {
        SingleCounter {
            capacity,
            usage: CachePadded::new(AtomicUsize::new(0)),
        }
    }
}

/// A slot of a [`SingleCounter`], given back on drop.
#[derive(Debug)]
struct SingleGuard<'a>(&'a SingleCounter);

impl Drop for SingleGuard<'_> {
    fn drop(&mut self) {
        self.0.usage.fetch_sub(1, Ordering::Release);
    }
}

impl Limiter for SingleCounter {
    type Guard<'a> = SingleGuard<'a>;

    #[inline]
    fn try_enter(&self) -> Option<SingleGuard<'_>> {
        let mut current = self.usage.load(Ordering::Relaxed);
        loop {
            if current >= self.capacity {
                return None;
            }
            match self.usage.compare_exchange_weak(
                current,
                current + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(SingleGuard(self)),
                Err(actual) => current = actual,
            }
        }
    }

    fn usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }

    fn capacity(&self) -> usize {
        self.capacity
    }
}

impl Limiter for tokio::sync::Semaphore {
    type Guard<'a> = tokio::sync::SemaphorePermit<'a>;

    #[inline]
    fn try_enter(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.try_acquire().ok()
    }

    fn usage(&self) -> usize {
        // Only for the report: the permits not available right now.
        TOKIO_CAPACITY.load(Ordering::Relaxed) - self.available_permits()
    }

    fn capacity(&self) -> usize {
        TOKIO_CAPACITY.load(Ordering::Relaxed)
    }
}

/// The capacity tokio's semaphore was made with (it does not keep it).
static TOKIO_CAPACITY: AtomicUsize = AtomicUsize::new(0);

/// A limit that queues: `Semaphore::acquire().await`, as tower's
/// `ConcurrencyLimit` does. A client waits in line for its slot, however
/// long the line.
#[derive(Debug)]
struct Queueing {
    semaphore: tokio::sync::Semaphore,
    capacity: usize,
}

thread_local! {
    /// Each client thread's runtime, to await the semaphore on.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
}

impl Limiter for Queueing {
    type Guard<'a> = tokio::sync::SemaphorePermit<'a>;

    fn try_enter(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        RUNTIME.with(|runtime| runtime.block_on(self.semaphore.acquire()).ok())
    }

    fn usage(&self) -> usize {
        self.capacity - self.semaphore.available_permits()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }
}

/// No guard at all: every request goes straight to the downstream.
#[derive(Debug)]
struct Unguarded {
    /// Requests in flight right now.
    in_flight: AtomicUsize,
    /// The downstream's capacity, for the report (nothing enforces it).
    capacity: usize,
}

/// A request in flight with no guard.
#[derive(Debug)]
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Limiter for Unguarded {
    type Guard<'a> = InFlight<'a>;

    fn try_enter(&self) -> Option<InFlight<'_>> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        Some(InFlight(&self.in_flight))
    }

    fn usage(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    fn capacity(&self) -> usize {
        self.capacity
    }
}

/// The name of the run with no guard, whose peak may pass the capacity.
const UNGUARDED: &str = "no guard";

/// How each run drives its limiter.
#[derive(Debug, Clone, Copy)]
struct Load {
    /// Client threads.
    threads: usize,
    /// Length of the run.
    duration: Duration,
    /// Simulated work per admitted request, with at most `capacity` in
    /// flight.
    work: Duration,
    /// Requests the downstream serves at full speed; past it, each slows in
    /// proportion.
    capacity: usize,
    /// Pause after a refusal.
    backoff: Duration,
}

/// One client's live counts, written only by that client (for the progress bar).
#[derive(Debug, Default)]
struct LiveCounts {
    /// Requests admitted so far.
    accepted: AtomicU64,
    /// Requests refused so far.
    rejected: AtomicU64,
}

/// What one client measured.
#[derive(Debug)]
struct ClientResult {
    /// End-to-end latency of admitted requests, in nanoseconds.
    admitted: Histogram<u64>,
    /// Latency of refusals (how fast `Overload` came back), in nanoseconds.
    refused: Histogram<u64>,
}

/// What one run measured.
#[derive(Debug)]
struct RunResult {
    /// The limiter's name in the report.
    name: &'static str,
    /// The limiter's capacity.
    capacity: usize,
    /// From the start barrier until every client stopped.
    elapsed: Duration,
    /// End-to-end latency of admitted requests, in nanoseconds.
    admitted: Histogram<u64>,
    /// Latency of refusals, in nanoseconds.
    refused: Histogram<u64>,
    /// The most requests seen holding a slot at once.
    peak: usize,
}

impl RunResult {
    /// Admitted requests.
    fn accepted(&self) -> u64 {
        self.admitted.len()
    }

    /// Refused requests.
    fn rejected(&self) -> u64 {
        self.refused.len()
    }

    /// Refusals as a fraction of all requests.
    fn rejection_rate(&self) -> f64 {
        let total = self.accepted() + self.rejected();
        if total == 0 {
            0.0
        } else {
            self.rejected() as f64 / total as f64
        }
    }

    /// Admitted requests per second.
    fn throughput(&self) -> f64 {
        self.accepted() as f64 / self.elapsed.as_secs_f64()
    }
}

/// An empty latency histogram that grows as needed.
fn histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant figures is a valid histogram precision")
}

/// Records the time since `start` into `histogram`, in nanoseconds.
fn record_since(histogram: &mut Histogram<u64>, start: Instant) {
    let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    // The histogram resizes itself to fit, so every latency is kept exactly
    // (to 3 significant figures); `saturating_record` would clamp instead.
    histogram
        .record(nanos)
        .expect("an auto-resizing histogram records any latency");
}

/// Runs `load` against `limiter` with a live progress bar; returns the measurements.
fn run<L: Limiter>(name: &'static str, limiter: &L, load: Load) -> RunResult {
    let barrier = Barrier::new(load.threads + 1);
    let stop = AtomicBool::new(false);
    // Incremented right after admission and decremented right before release,
    // so it never exceeds what the limiter has admitted: its peak is a lower
    // bound witness that the limiter kept usage within capacity.
    let holders = AtomicUsize::new(0);
    let peak = AtomicUsize::new(0);
    let live: Vec<CachePadded<LiveCounts>> =
        (0..load.threads).map(|_| Default::default()).collect();

    let progress = ProgressBar::new(load.duration.as_millis().max(1) as u64);
    let style = ProgressStyle::with_template("{prefix} [{bar:16.cyan/blue}] {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    progress.set_style(style.progress_chars("=> "));
    progress.set_prefix(name);

    let (elapsed, results) = thread::scope(|scope| {
        let handles: Vec<_> = live
            .iter()
            .map(|counts| {
                let (barrier, stop, holders, peak) = (&barrier, &stop, &holders, &peak);
                scope.spawn(move || client(limiter, load, barrier, stop, holders, peak, counts))
            })
            .collect();

        barrier.wait();
        let start = Instant::now();
        loop {
            let elapsed = start.elapsed();
            let accepted: u64 = live
                .iter()
                .map(|c| c.accepted.load(Ordering::Relaxed))
                .sum();
            let rejected: u64 = live
                .iter()
                .map(|c| c.rejected.load(Ordering::Relaxed))
                .sum();
            progress.set_position(elapsed.as_millis() as u64);
            progress.set_message(format!(
                "{:.1}/{:.1}s accepted {accepted} rejected {rejected} in use {}/{}",
                elapsed.as_secs_f64(),
                load.duration.as_secs_f64(),
                limiter.usage(),
                limiter.capacity(),
            ));
            if elapsed >= load.duration {
                break;
            }
            thread::sleep((load.duration - elapsed).min(Duration::from_millis(100)));
        }
        stop.store(true, Ordering::Relaxed);
        let results: Vec<ClientResult> = handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        (start.elapsed(), results)
    });
    progress.finish_and_clear();

    let mut admitted = histogram();
    let mut refused = histogram();
    for result in &results {
        admitted
            .add(&result.admitted)
            .expect("auto-resizing histograms merge");
        refused
            .add(&result.refused)
            .expect("auto-resizing histograms merge");
    }
    RunResult {
        name,
        capacity: limiter.capacity(),
        elapsed,
        admitted,
        refused,
        peak: peak.load(Ordering::Relaxed),
    }
}

/// One client thread: sends requests until `stop`, timing each one.
fn client<L: Limiter>(
    limiter: &L,
    load: Load,
    barrier: &Barrier,
    stop: &AtomicBool,
    holders: &AtomicUsize,
    peak: &AtomicUsize,
    live: &LiveCounts,
) -> ClientResult {
    let mut admitted = histogram();
    let mut refused = histogram();
    let (mut accepted, mut rejected) = (0u64, 0u64);
    barrier.wait();
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        match limiter.try_enter() {
            Some(guard) => {
                let held = holders.fetch_add(1, Ordering::Relaxed) + 1;
                peak.fetch_max(held, Ordering::Relaxed);
                if !load.work.is_zero() {
                    // Shared `held` ways: past the capacity, each request
                    // runs `held / capacity` times slower.
                    let share = held as f64 / load.capacity.max(1) as f64;
                    thread::sleep(load.work.mul_f64(share.max(1.0)));
                }
                holders.fetch_sub(1, Ordering::Relaxed);
                drop(guard);
                record_since(&mut admitted, start);
                accepted += 1;
                live.accepted.store(accepted, Ordering::Relaxed);
            }
            None => {
                record_since(&mut refused, start);
                rejected += 1;
                live.rejected.store(rejected, Ordering::Relaxed);
                if load.backoff.is_zero() {
                    thread::yield_now();
                } else {
                    thread::sleep(load.backoff);
                }
            }
        }
    }
    ClientResult { admitted, refused }
}

/// A latency in nanoseconds, in a readable unit.
fn fmt_ns(nanos: u64) -> String {
    let value = nanos as f64;
    if nanos < 1_000 {
        format!("{nanos} ns")
    } else if nanos < 1_000_000 {
        format!("{:.1} µs", value / 1e3)
    } else if nanos < 1_000_000_000 {
        format!("{:.2} ms", value / 1e6)
    } else {
        format!("{:.2} s", value / 1e9)
    }
}

/// The value at `quantile`, or `-` for an empty histogram.
fn quantile(histogram: &Histogram<u64>, quantile: f64) -> String {
    if histogram.is_empty() {
        "-".into()
    } else {
        fmt_ns(histogram.value_at_quantile(quantile))
    }
}

/// Prints one run's report.
fn report(result: &RunResult) {
    let mut out = String::new();
    let _ = writeln!(out, "== {} ==", result.name);
    let _ = writeln!(
        out,
        "  requests      accepted {}, rejected {} ({:.1}% rejected) in {:.2} s",
        result.accepted(),
        result.rejected(),
        100.0 * result.rejection_rate(),
        result.elapsed.as_secs_f64(),
    );
    let _ = writeln!(
        out,
        "  throughput    {:.0} admitted requests/s",
        result.throughput()
    );
    let a = &result.admitted;
    let _ = writeln!(
        out,
        "  admitted      p50 {}  p90 {}  p99 {}  p999 {}  max {}   (end to end)",
        quantile(a, 0.5),
        quantile(a, 0.9),
        quantile(a, 0.99),
        quantile(a, 0.999),
        if a.is_empty() {
            "-".into()
        } else {
            fmt_ns(a.max())
        },
    );
    let _ = writeln!(
        out,
        "  refused       p50 {}  p99 {}   (time for the refusal to come back)",
        quantile(&result.refused, 0.5),
        quantile(&result.refused, 0.99),
    );
    let verdict = if result.peak <= result.capacity {
        "never exceeded"
    } else if result.name == UNGUARDED {
        "no limit: every request reached the downstream"
    } else {
        "EXCEEDED"
    };
    let _ = writeln!(
        out,
        "  peak in use   {} of capacity {} ({verdict})",
        result.peak, result.capacity
    );
    print!("{out}");
}

/// Prints where the resource's capacity is, from `stats()`: each shard's
/// lease (`limit`) and what it holds, and the reserve no shard leases.
fn report_shards(resource: &Resource, result: &RunResult) {
    let stats = resource.stats();
    println!("  per shard     (from Resource::stats: where the capacity is)");
    println!(
        "    {:>7} {:>6} {:>6} {:>12} {:>12}",
        "shard", "limit", "held", "accepted", "rejected"
    );
    for (index, shard) in stats.shards.iter().enumerate() {
        println!(
            "    {index:>7} {:>6} {:>6} {:>12} {:>12}",
            shard.limit, shard.usage, shard.accepted, shard.rejected
        );
    }
    println!(
        "    {:>7} {:>6} {:>6} {:>12} {:>12}",
        "reserve", stats.reserve, "", "", ""
    );
    println!(
        "    {:>7} {:>6} {:>6} {:>12} {:>12}",
        "total", stats.capacity, stats.usage, stats.accepted, stats.rejected
    );
    let leased: usize = stats.shards.iter().map(|shard| shard.limit).sum();
    if leased == 0 && stats.reserve > 0 {
        println!(
            "    capacity is scarce: every free slot waits in the reserve, so a refusal reads one word"
        );
    }
    if (stats.accepted, stats.rejected) != (result.accepted(), result.rejected()) {
        println!(
            "    note: stats() counted {}/{} but the clients {}/{}",
            stats.accepted,
            stats.rejected,
            result.accepted(),
            result.rejected()
        );
    }
}

/// Prints the side-by-side comparison table.
fn compare(results: &[&RunResult]) {
    println!("== comparison ==");
    println!(
        "  {:<18} {:>10} {:>10} {:>9} {:>13} {:>13} {:>11} {:>11} {:>11} {:>11}",
        "limiter",
        "accepted",
        "rejected",
        "rejected%",
        "admitted/s",
        "per core/s",
        "admit p50",
        "admit p99",
        "refusal p50",
        "refusal p99"
    );
    let cores = num_cpus::get() as f64;
    for result in results {
        println!(
            "  {:<18} {:>10} {:>10} {:>8.1}% {:>13.0} {:>13.0} {:>11} {:>11} {:>11} {:>11}",
            result.name,
            result.accepted(),
            result.rejected(),
            100.0 * result.rejection_rate(),
            result.throughput(),
            result.throughput() / cores,
            quantile(&result.admitted, 0.5),
            quantile(&result.admitted, 0.99),
            quantile(&result.refused, 0.5),
            quantile(&result.refused, 0.99),
        );
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut builder = Resource::builder().capacity(cli.capacity);
    if let Some(shards) = cli.shards {
        builder = builder.shards(shards);
    }
    let resource = match builder.build() {
        Ok(resource) => resource,
        Err(err) => Cli::command()
            .error(
                ErrorKind::ValueValidation,
                format!("invalid value for `--{}`: {}", err.setting(), err.reason()),
            )
            .exit(),
    };
    let threads = match cli.clients_per_cpu {
        Some(per_cpu) => num_cpus::get() * usize::from(per_cpu),
        None => usize::from(cli.threads),
    };
    let load = Load {
        threads,
        duration: cli.duration,
        work: Duration::from_micros(cli.work_us),
        capacity: cli.capacity,
        backoff: Duration::from_micros(cli.backoff_us),
    };

    println!(
        "sidejob overload demo: {} client threads, capacity {}, {} shards, {} µs of work, \
         {} µs backoff after a refusal, {:.1} s per run, {} CPUs",
        load.threads,
        resource.capacity(),
        resource.shard_count(),
        cli.work_us,
        cli.backoff_us,
        load.duration.as_secs_f64(),
        num_cpus::get(),
    );
    println!();

    let sharded = run("sidejob", &resource, load);
    report(&sharded);
    report_shards(&resource, &sharded);
    println!();

    let single = SingleCounter::new(cli.capacity);
    let naive = run("single counter", &single, load);
    report(&naive);
    println!();

    TOKIO_CAPACITY.store(cli.capacity, Ordering::Relaxed);
    let semaphore = tokio::sync::Semaphore::new(cli.capacity);
    let tokio = run("tokio try_acquire", &semaphore, load);
    report(&tokio);
    println!();

    let queueing = Queueing {
        semaphore: tokio::sync::Semaphore::new(cli.capacity),
        capacity: cli.capacity,
    };
    let queued = run("tokio acquire (queues)", &queueing, load);
    report(&queued);
    println!();

    let unguarded = Unguarded {
        in_flight: AtomicUsize::new(0),
        capacity: cli.capacity,
    };
    let open = run(UNGUARDED, &unguarded, load);
    report(&open);
    println!();

    compare(&[&sharded, &naive, &tokio, &queued, &open]);
    println!(
        "  fail-fast limiters keep the admitted latency at the work ({} µs) and refuse the rest in \
         nanoseconds; a queueing limit makes every admitted request wait its turn, and no guard \
         slows every request down",
        cli.work_us
    );

    if [&sharded, &naive, &tokio, &queued]
        .iter()
        .any(|result| result.peak > result.capacity)
    {
        eprintln!("error: a limiter admitted more requests than its capacity");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
