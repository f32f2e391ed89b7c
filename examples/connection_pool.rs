//! Connection-pool demo: a [`sidejob::ObjectPool`] of simulated database
//! connections shared by many client threads.
//!
//! * The [`Manager`] "connects" in 2 ms and fails `--connect-fail-pct`
//!   percent of connects; `check` retires a connection after 50 queries or
//!   when the server dropped it; `destroy` counts closes. It also tracks live
//!   connections (open or opening) and their peak.
//! * Each client loops for `--duration-ms`: `take(--timeout-ms)`, a 1 ms
//!   query, then drop to return the connection. One query in 100 errors: the
//!   client throws the connection away with `Pooled::fail`; one in 100 is
//!   dropped silently by the server, and `check` finds out on return. Every
//!   outcome is counted, by `TakeError` variant.
//!
//! Then it holds every connection to show `try_take` refused with `Overload`,
//! prints `status()`, `stats()` and the clients' counts, and checks what a
//! user relies on: live connections never exceeded `max_size`, none is in use
//! or leaked once the clients are done, and `close()` closes them all.
//!
//! ```text
//! cargo run --release --example connection_pool
//! cargo run --release --example connection_pool -- --clients 64 --max-size 4 --queue-max 8
//! cargo run --release --example connection_pool -- --help
//! ```

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use sidejob::{Manager, ObjectPool, Pooled, TakeError};

/// Share a sidejob::ObjectPool of simulated database connections between many clients.
#[derive(Debug, Parser)]
#[command(name = "connection_pool", long_about = None)]
struct Cli {
    /// Client threads running queries.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=4096))]
    clients: u16,
    /// How long the clients run, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    duration_ms: u64,
    /// Most connections open (or opening) at once.
    #[arg(long, default_value_t = 6)]
    max_size: usize,
    /// Connections opened before the pool is ready.
    #[arg(long, default_value_t = 2)]
    init_size: usize,
    /// Idle connections kept ready in the background.
    #[arg(long, default_value_t = 2)]
    min_idle: usize,
    /// Clients that may wait for a connection at once.
    #[arg(long, default_value_t = 6)]
    queue_max: usize,
    /// How long `take` waits for a connection, in milliseconds.
    #[arg(long, default_value_t = 2)]
    timeout_ms: u64,
    /// Percentage of connects that fail.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=50))]
    connect_fail_pct: u64,
}

/// Time to open a connection, and a query's time on it.
const CONNECT: Duration = Duration::from_millis(2);
const QUERY: Duration = Duration::from_millis(1);
/// Queries after which a connection is retired.
const MAX_USES: u32 = 50;
/// Percentage of queries that break their connection: half error out, half
/// are dropped silently by the server.
const BREAK_PCT: u64 = 2;

/// A simulated database connection.
#[derive(Debug, Default)]
struct Conn {
    uses: u32,
    broken: bool,
}

/// Opens, checks and closes connections, and counts what it did.
#[derive(Debug, Default)]
struct Db {
    connect_fail_pct: u64,
    rng: AtomicU64,
    /// Connections open or being opened, and the most there ever were.
    live: AtomicUsize,
    peak: AtomicUsize,
    opened: AtomicU64,
    closed: AtomicU64,
}

impl Db {
    /// True `percent`% of the time: xorshift64 over a shared atomic state.
    fn chance(&self, percent: u64) -> bool {
        let step = |mut x: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^ (x << 17)
        };
        let prev = self.rng.fetch_update(Relaxed, Relaxed, |x| Some(step(x)));
        step(prev.unwrap_or_default()) % 100 < percent
    }
}

impl Manager for Db {
    type Object = Conn;
    type Error = io::Error;

    fn create(&self) -> io::Result<Conn> {
        let live = self.live.fetch_add(1, Relaxed) + 1;
        self.peak.fetch_max(live, Relaxed);
        thread::sleep(CONNECT);
        if self.chance(self.connect_fail_pct) {
            self.live.fetch_sub(1, Relaxed);
            return Err(io::Error::new(io::ErrorKind::ConnectionRefused, "db down"));
        }
        self.opened.fetch_add(1, Relaxed);
        Ok(Conn::default())
    }

    fn check(&self, conn: &mut Conn) -> bool {
        !conn.broken && conn.uses < MAX_USES
    }

    fn destroy(&self, _conn: Conn) {
        self.closed.fetch_add(1, Relaxed);
        self.live.fetch_sub(1, Relaxed);
    }
}

/// What a take came to: a connection, or which `TakeError` (`take` waits
/// instead of answering `Overload`, so that one stays 0 here).
#[rustfmt::skip]
const OUTCOMES: [&str; 6] = ["ok", "Overload", "Timeout", "QueueFull", "Create", "Closed"];

/// One client: queries until `end`, counting each take's outcome.
fn client(pool: &ObjectPool<Db>, timeout: Duration, end: Instant) -> [u64; 6] {
    let mut counts = [0; 6];
    while Instant::now() < end {
        let outcome = match pool.take(timeout) {
            Ok(mut conn) => {
                conn.uses += 1;
                thread::sleep(QUERY);
                if pool.manager().chance(BREAK_PCT) {
                    conn.broken = true;
                    if pool.manager().chance(50) {
                        Pooled::fail(conn); // the query errored: throw it away
                    } // else the server dropped it silently: `check` finds out
                }
                0
            }
            Err(error) => {
                thread::sleep(Duration::from_millis(1)); // back off
                match error {
                    TakeError::Overload => 1,
                    TakeError::Timeout => 2,
                    TakeError::QueueFull => 3,
                    TakeError::Create(_) | TakeError::Tag(_) => 4,
                    TakeError::Closed => 5,
                }
            }
        };
        counts[outcome] += 1;
    }
    counts
}

/// Prints a check and asserts it.
macro_rules! check {
    ($holds:expr, $($what:tt)+) => {{
        let (holds, what): (bool, String) = ($holds, format!($($what)+));
        println!("  [{}] {what}", if holds { "ok" } else { "FAILED" });
        assert!(holds, "invariant broken: {what}");
    }};
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let max = cli.max_size;
    let rng = AtomicU64::new(0x2545_F491_4F6C_DD1D); // xorshift: any seed but 0
    let db = Db {
        connect_fail_pct: cli.connect_fail_pct,
        rng,
        ..Db::default()
    };
    let pool = ObjectPool::builder(db)
        .max_size(max)
        .init_size(cli.init_size)
        .min_idle(cli.min_idle)
        .queue_max(cli.queue_max)
        .name("db")
        .build()?;
    println!("{} clients, {} ms: {pool:?}", cli.clients, cli.duration_ms);

    let timeout = Duration::from_millis(cli.timeout_ms);
    let end = Instant::now() + Duration::from_millis(cli.duration_ms);
    let mut counts = [0; 6];
    thread::scope(|scope| {
        let clients: Vec<_> = (0..cli.clients)
            .map(|_| scope.spawn(|| client(&pool, timeout, end)))
            .collect();
        for client in clients {
            let mine = client.join().expect("client thread panicked");
            counts.iter_mut().zip(mine).for_each(|(sum, n)| *sum += n);
        }
    });

    // The maintainer may still be topping up `min_idle`: let it finish.
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut status = pool.status();
    while (status.creating > 0 || status.idle < cli.min_idle) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
        status = pool.status();
    }
    let db = pool.manager();
    let live = db.live.load(Relaxed);

    // Hold every connection (retrying failed connects): `try_take` is refused.
    let mut held = Vec::new();
    for _ in 0..max * 10 {
        if held.len() < max {
            held.extend(pool.take(Duration::from_secs(1)).ok());
        }
    }
    let (refused, n) = (pool.try_take().err(), held.len());
    println!("\nholding all {n} connections, try_take: {refused:?}");
    let overloaded = n == max && matches!(refused, Some(TakeError::Overload));
    drop(held);

    println!("\n== clients ==");
    for (name, n) in OUTCOMES.iter().zip(counts) {
        println!("  {name:<10} {n}");
    }
    let s = pool.stats();
    println!("\n== pool ==\n  status after the run: {status:?}");
    let (takes, waits, timeouts, rejected) = (s.takes, s.waits, s.timeouts, s.rejected);
    println!("  stats: takes {takes}, waits {waits}, timeouts {timeouts}, rejected {rejected},");
    let (creates, failures, destroyed) = (s.creates, s.create_failures, s.destroyed);
    println!("         creates {creates}, create failures {failures}, destroyed {destroyed}");
    println!("  wait: {}", s.wait);

    pool.close();
    let opened = db.opened.load(Relaxed);
    let peak = db.peak.load(Relaxed);
    println!("\n== checks ==");
    check!(peak <= max, "peak live {peak} <= max_size {max}");
    let (in_use, size) = (status.in_use, status.size);
    check!(in_use == 0, "in use after the run: {in_use}");
    check!(size == live, "pool size {size} == live {live}");
    check!(overloaded, "try_take on a fully held pool: Overload");
    check!(opened == creates, "opened {opened} == creates {creates}");
    let (closed, destroyed) = (db.closed.load(Relaxed), pool.stats().destroyed);
    check!(
        closed == destroyed,
        "closed {closed} == destroyed {destroyed}"
    );
    let live = db.live.load(Relaxed);
    check!(live == 0, "live after close(): {live}");
    Ok(())
}
