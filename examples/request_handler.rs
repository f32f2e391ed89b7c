//! Request-handler demo: a [`sidejob::WorkerPool`] serving a simulated
//! key-value lookup service to many client threads, far past its capacity.
//!
//! * Each shard's worker owns a small cache, with no lock: a hit is answered
//!   at once, a miss pays `--work-us` of simulated backend latency (slept).
//! * Clients send `call`s, and some fire-and-forget `cast`s that warm the
//!   caches, as fast as they can. When every mailbox is full the pool refuses
//!   at once with `Overload` (handing the request back) and the client backs
//!   off briefly: excess load is shed, not queued.
//! * One call in `--panic-every` is a poison pill that panics its handler:
//!   that caller gets `WorkerPanicked`, the worker is rebuilt by the factory
//!   (with an empty cache) and nothing queued behind it is lost.
//!
//! After `--duration` the pool is shut down while the clients are still
//! sending: everything it admitted is drained, later requests get `Closed`,
//! and each client stops at its first one. Then it prints the clients'
//! outcomes and end-to-end latency, the pool's `stats()` (counters, queue-wait
//! and handling percentiles, one row per shard), and checks the bookkeeping:
//! `accepted == handled + skipped`, every call got exactly one outcome, and
//! the pool's counts agree with the clients'.
//!
//! ```text
//! cargo run --release --example request_handler
//! cargo run --release --example request_handler -- --clients 4 --capacity 2 --duration 1
//! cargo run --release --example request_handler -- --call-timeout-ms 1 --work-us 500
//! cargo run --release --example request_handler -- --help
//! ```
//!
//! The third run's timeout is shorter than a full mailbox takes to drain, to
//! show `Timeout`s and the `skipped` messages they leave behind.

use std::process::ExitCode;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use clap::error::ErrorKind;
use clap::{value_parser, CommandFactory, Parser};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use sidejob::{CallError, CastError, LatencyStats, Worker, WorkerPool, WorkerPoolStats};

/// Drive a sidejob::WorkerPool of key-value lookups past its capacity.
#[derive(Debug, Parser)]
#[command(name = "request_handler", long_about = None)]
struct Cli {
    /// Messages (queued and in progress) the pool admits at once.
    #[arg(long, default_value_t = 16, value_parser = value_parser!(u32).range(1..=100_000))]
    capacity: u32,
    /// Shards, i.e. worker threads [default: the number of CPUs].
    #[arg(long)]
    shards: Option<usize>,
    /// Client threads sending requests as fast as they can.
    #[arg(long, default_value_t = 32, value_parser = value_parser!(u16).range(1..=4096))]
    clients: u16,
    /// How long the clients run, in seconds.
    #[arg(long, default_value_t = 3, value_parser = value_parser!(u64).range(1..=3600))]
    duration: u64,
    /// Simulated backend latency of a cache miss, in microseconds.
    #[arg(long, default_value_t = 200, value_parser = value_parser!(u64).range(0..=1_000_000))]
    work_us: u64,
    /// One call in N is a poison pill that panics its handler (0: never).
    #[arg(long, default_value_t = 2000)]
    panic_every: u64,
    /// How long a call waits for its reply, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    call_timeout_ms: u64,
    /// Percentage of requests sent as casts instead of calls.
    #[arg(long, default_value_t = 20, value_parser = value_parser!(u64).range(0..=100))]
    cast_percent: u64,
    /// A client's pause after an overload refusal, in microseconds (0: yield).
    #[arg(long, default_value_t = 50, value_parser = value_parser!(u64).range(0..=1_000_000))]
    backoff_us: u64,
}

// ------------------------------------------------------------------ the service

/// Keys are drawn from `0..KEYS`, small ones far more often (hot keys).
const KEYS: u64 = 1024;
/// Slots in each shard's direct-mapped cache.
const CACHE_SLOTS: usize = 256;
/// How a deliberate panic's message starts; the quiet panic hook looks for it.
const POISON: &str = "poison pill";

/// One lookup. `poison` makes the handler panic, to show recovery.
#[derive(Debug)]
struct Lookup {
    key: u32,
    poison: bool,
}

/// The "backend": the value stored under `key` (clients check replies with it).
fn backend_value(key: u32) -> u64 {
    u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// One shard's handler. Its cache and counters are its own: only its worker
/// thread ever touches them, so they need no lock.
#[derive(Debug)]
struct KvShard {
    shard: usize,
    miss_cost: Duration,
    cache: Vec<Option<(u32, u64)>>,
    hits: u64,
    misses: u64,
    /// Where `terminate` reports `(shard, hits, misses)` at shutdown.
    reports: mpsc::Sender<(usize, u64, u64)>,
}

impl Worker for KvShard {
    type Request = Lookup;
    type Reply = u64;

    fn handle_call(&mut self, request: Lookup) -> u64 {
        if request.poison {
            panic!("{POISON} for key {}", request.key);
        }
        let slot = &mut self.cache[request.key as usize % CACHE_SLOTS];
        match *slot {
            Some((key, value)) if key == request.key => {
                self.hits += 1;
                value
            }
            _ => {
                self.misses += 1;
                thread::sleep(self.miss_cost);
                let value = backend_value(request.key);
                *slot = Some((request.key, value));
                value
            }
        }
    }

    // `handle_cast` keeps its default: run `handle_call` (warming the cache)
    // and drop the reply.

    fn terminate(&mut self) {
        let _ = self.reports.send((self.shard, self.hits, self.misses));
    }
}

/// Keeps the default panic message for real bugs, but not for poison pills
/// (the pool catches those; printing each would drown the output).
fn quiet_poison_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let text = (payload.downcast_ref::<String>().map(String::as_str))
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !text.starts_with(POISON) {
            default(info);
        }
    }));
}

// ------------------------------------------------------------------ the clients

/// What the clients saw: requests sent, and the outcome of each.
#[derive(Debug, Default)]
struct Counts {
    calls: u64,
    ok: u64,
    overload: u64,
    timeout: u64,
    panicked: u64,
    closed: u64,
    casts: u64,
    cast_accepted: u64,
    cast_overload: u64,
    cast_closed: u64,
    /// Replies that did not match their key (should stay 0).
    wrong_replies: u64,
    /// `WorkerPanicked` for a call that was not a poison pill (should stay 0).
    stray_panics: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.calls += other.calls;
        self.ok += other.ok;
        self.overload += other.overload;
        self.timeout += other.timeout;
        self.panicked += other.panicked;
        self.closed += other.closed;
        self.casts += other.casts;
        self.cast_accepted += other.cast_accepted;
        self.cast_overload += other.cast_overload;
        self.cast_closed += other.cast_closed;
        self.wrong_replies += other.wrong_replies;
        self.stray_panics += other.stray_panics;
    }
}

/// An empty latency histogram (3 significant figures) that grows as needed.
fn histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant figures is a valid precision")
}

/// A tiny xorshift generator, so the demo needs no `rand`.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// One client thread: sends requests until the pool says `Closed`, counting
/// every outcome and timing the successful calls (nanoseconds).
fn client(pool: &WorkerPool<KvShard>, cli: &Cli, id: u64) -> (Counts, Histogram<u64>) {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ (id + 1).wrapping_mul(0x9E37_79B9));
    let (mut n, mut latency) = (Counts::default(), histogram());
    let backoff = Duration::from_micros(cli.backoff_us);
    let back_off = || {
        if backoff.is_zero() {
            thread::yield_now();
        } else {
            thread::sleep(backoff);
        }
    };
    loop {
        let bound = 1 + rng.below(KEYS); // skewed: small keys are hot
        let key = rng.below(bound) as u32;
        if rng.below(100) < cli.cast_percent {
            n.casts += 1;
            match pool.cast(Lookup { key, poison: false }) {
                Ok(()) => n.cast_accepted += 1,
                Err(CastError::Overload(_)) => {
                    n.cast_overload += 1;
                    back_off();
                }
                // Closed (the error is non-exhaustive: anything else
                // stops this client too).
                Err(_) => {
                    n.cast_closed += 1;
                    break;
                }
            }
            continue;
        }
        let poison = cli.panic_every != 0 && rng.below(cli.panic_every) == 0;
        n.calls += 1;
        let start = Instant::now();
        match pool.call(Lookup { key, poison }) {
            Ok(value) => {
                n.ok += 1;
                n.wrong_replies += u64::from(value != backend_value(key));
                let _ = latency.record(start.elapsed().as_nanos() as u64);
            }
            Err(CallError::Overload(_)) => {
                n.overload += 1;
                back_off();
            }
            Err(CallError::Timeout) => n.timeout += 1,
            Err(CallError::WorkerPanicked) => {
                n.panicked += 1;
                n.stray_panics += u64::from(!poison);
            }
            // Closed, or an error added later: this client stops.
            Err(_) => {
                n.closed += 1;
                break;
            }
        }
    }
    (n, latency)
}

/// Runs the clients for `--duration` with a live progress line polled from
/// `stats()`, then shuts the pool down under their feet: what it admitted is
/// drained, and each client stops at its first `Closed`. Returns what the
/// clients counted, their latency histogram, how long they ran, and the
/// pool's stats just before shutdown.
fn drive(
    pool: &WorkerPool<KvShard>,
    cli: &Cli,
) -> (Counts, Histogram<u64>, Duration, WorkerPoolStats) {
    let duration = Duration::from_secs(cli.duration);
    let progress = ProgressBar::new(duration.as_millis() as u64);
    let style = ProgressStyle::with_template("[{bar:20.cyan/blue}] {elapsed:>3} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    progress.set_style(style.progress_chars("=> "));
    let start = Instant::now();
    let (results, before_shutdown): (Vec<_>, _) = thread::scope(|scope| {
        let clients: Vec<_> = (0..u64::from(cli.clients))
            .map(|id| scope.spawn(move || client(pool, cli, id)))
            .collect();
        while start.elapsed() < duration {
            let stats = pool.stats();
            progress.set_position(start.elapsed().as_millis() as u64);
            progress.set_message(format!(
                "in use {:>3}/{}  accepted {}  rejected {}  panics {}",
                stats.usage, stats.capacity, stats.accepted, stats.rejected, stats.panics
            ));
            thread::sleep(Duration::from_millis(100).min(duration.saturating_sub(start.elapsed())));
        }
        let before_shutdown = pool.stats();
        pool.shutdown(); // drains every admitted message, then joins the workers
        let results = clients
            .into_iter()
            .map(|client| client.join().expect("client thread panicked"))
            .collect();
        (results, before_shutdown)
    });
    progress.finish_and_clear();
    let (mut counts, mut latency) = (Counts::default(), histogram());
    for (client_counts, client_latency) in &results {
        counts.add(client_counts);
        let _ = latency.add(client_latency); // auto-resizing histograms: cannot fail
    }
    (counts, latency, start.elapsed(), before_shutdown)
}

// ------------------------------------------------------------------ the report

/// Builds the pool from the flags; a setting the builder refuses exits with
/// a message naming the flag (in clap's style, exit code 2).
fn build_pool(cli: &Cli, reports: mpsc::Sender<(usize, u64, u64)>) -> WorkerPool<KvShard> {
    let miss_cost = Duration::from_micros(cli.work_us);
    let mut builder = WorkerPool::builder()
        .capacity(cli.capacity as usize)
        .call_timeout(Duration::from_millis(cli.call_timeout_ms))
        .name("kv")
        .pin_workers(false)
        // Handlers here take hundreds of microseconds, so timing every
        // message (two clock reads, tens of nanoseconds) costs nothing worth
        // saving; the default times one in 16.
        .latency_sample_every(1)
        // Poison pills are part of this demo's load, one in `panic_every`
        // calls, for as long as it runs: each kills a worker, which is
        // rebuilt. A shard whose worker dies more than `max_restarts` times
        // in `restart_window` (10 in 10 s by default, as OTP's) would stay
        // down for good, so a server that expects handlers to panic on bad
        // input raises the intensity.
        .max_restarts(u32::MAX);
    if let Some(shards) = cli.shards {
        builder = builder.shards(shards);
    }
    // The factory builds each shard's worker, and rebuilds one after a panic.
    let built = builder.build(move |shard| KvShard {
        shard,
        miss_cost,
        cache: vec![None; CACHE_SLOTS],
        hits: 0,
        misses: 0,
        reports: reports.clone(),
    });
    built.unwrap_or_else(|err| {
        let flag = match err.setting() {
            "call_timeout" => "--call-timeout-ms".to_string(),
            setting => format!("--{setting}"),
        };
        let message = format!("invalid value for `{flag}`: {}", err.reason());
        Cli::command()
            .error(ErrorKind::ValueValidation, message)
            .exit()
    })
}

/// One line of percentiles: p50, p90, p99, p99.9 and max, then the count.
fn percentiles(values: [Duration; 5], count: u64) -> String {
    let [p50, p90, p99, p999, max] = values.map(|value| {
        let micros = value.as_secs_f64() * 1e6;
        if micros < 1000.0 {
            format!("{micros:.1} µs")
        } else {
            format!("{:.2} ms", micros / 1000.0)
        }
    });
    format!("p50 {p50:>9}  p90 {p90:>9}  p99 {p99:>9}  p999 {p999:>9}  max {max:>9}  n={count}")
}

/// The same, from the pool's [`LatencyStats`].
fn latency_line(stats: &LatencyStats) -> String {
    percentiles(
        [stats.p50, stats.p90, stats.p99, stats.p999, stats.max],
        stats.count,
    )
}

/// Prints `[ok]` or `[FAILED]` before `what`; returns whether it held.
fn check(holds: bool, what: String) -> bool {
    println!("  [{}] {what}", if holds { "ok" } else { "FAILED" });
    holds
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    quiet_poison_panics();
    let (reports, reported) = mpsc::channel();
    let pool = build_pool(&cli, reports);
    println!(
        "request_handler: {} clients, capacity {} over {} shards, {} µs per cache miss, \
         {}% casts, poison 1 in {}, call timeout {} ms, {} s, {} CPUs\n",
        cli.clients,
        pool.capacity(),
        pool.shard_count(),
        cli.work_us,
        cli.cast_percent,
        cli.panic_every,
        cli.call_timeout_ms,
        cli.duration,
        num_cpus::get(),
    );

    // `before` is taken just before shutdown: what was still queued then.
    let (c, latency, elapsed, before) = drive(&pool, &cli);
    let stats = pool.stats();

    let secs = elapsed.as_secs_f64();
    let refused = c.overload + c.cast_overload;
    println!("== clients ({secs:.2} s) ==");
    println!(
        "  calls {:>9} sent: ok {}, overload {}, timeout {}, worker-panicked {}, closed {}",
        c.calls, c.ok, c.overload, c.timeout, c.panicked, c.closed
    );
    println!(
        "  casts {:>9} sent: accepted {}, overload {}, closed {}",
        c.casts, c.cast_accepted, c.cast_overload, c.cast_closed
    );
    println!(
        "  rate  {:>9.0} ok calls/s, {:.0} messages handled/s, {:.1}% of requests refused",
        c.ok as f64 / secs,
        stats.handled as f64 / secs,
        100.0 * refused as f64 / (c.calls + c.casts).max(1) as f64
    );
    let at = |quantile| Duration::from_nanos(latency.value_at_quantile(quantile));
    let ends = [at(0.5), at(0.9), at(0.99), at(0.999), at(1.0)];
    println!(
        "  ok calls, end to end  {}",
        percentiles(ends, latency.len())
    );

    println!("\n== pool stats(), after shutdown ==");
    println!(
        "  accepted {}, rejected {}, handled {}, skipped {}, panics {}, restarts {}",
        stats.accepted, stats.rejected, stats.handled, stats.skipped, stats.panics, stats.restarts
    );
    println!(
        "  at shutdown {} messages were queued or in progress; it drained {} before stopping",
        before.usage,
        (stats.handled + stats.skipped) - (before.handled + before.skipped),
    );
    println!("  queue wait  {}", latency_line(&stats.queue_wait));
    println!("  handling    {}", latency_line(&stats.handling));

    let mut caches: Vec<(usize, u64, u64)> = reported.try_iter().collect();
    caches.sort_unstable();
    println!("\n  shard  limit   handled  restarts  cache hits/misses*");
    const ROWS: usize = 16;
    for (index, now) in stats.shards.iter().enumerate().take(ROWS) {
        let cache = caches.iter().find(|report| report.0 == index);
        let cache = cache.map_or("-".into(), |&(_, hits, misses)| format!("{hits}/{misses}"));
        let (limit, handled, restarts) = (now.limit, now.handled, now.restarts);
        println!("  {index:>5} {limit:>6} {handled:>9} {restarts:>9}  {cache:>18}");
    }
    if stats.shards.len() > ROWS {
        println!("    ... and {} more shards", stats.shards.len() - ROWS);
    }
    println!("  * each worker's own cache, since its last restart (a rebuilt worker starts empty)");

    println!("\n== checks ==");
    let outcomes = c.ok + c.overload + c.timeout + c.panicked + c.closed;
    let admitted = c.ok + c.timeout + c.panicked + c.cast_accepted;
    let closed = c.closed + c.cast_closed;
    let (accepted, handled, skipped) = (stats.accepted, stats.handled, stats.skipped);
    let checks = [
        check(
            accepted == handled + skipped,
            format!("accepted == handled + skipped: {accepted} == {handled} + {skipped}"),
        ),
        check(
            c.calls == outcomes,
            format!(
                "every call got one outcome: {} calls, {outcomes} outcomes",
                c.calls
            ),
        ),
        check(
            accepted == admitted && stats.rejected == refused && stats.closed == closed,
            format!("the pool agrees: {admitted} in, {refused} overload + {closed} closed out"),
        ),
        check(
            closed == u64::from(cli.clients),
            format!(
                "each of the {} clients stopped at its first `Closed`",
                cli.clients
            ),
        ),
        check(
            c.stray_panics == 0 && stats.restarts == stats.panics,
            format!(
                "only poison pills panicked, each restarting its worker ({})",
                stats.panics
            ),
        ),
        check(
            c.wrong_replies == 0,
            "every reply matched its request".into(),
        ),
        check(
            stats.usage == 0 && caches.len() == stats.shards.len(),
            "shutdown drained every mailbox and terminated every worker".into(),
        ),
    ];
    if checks.iter().all(|&held| held) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
