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
//! A second part, "lifecycle", runs on fresh pools whose connects never fail:
//!
//! 1. `reconfigure` lowers `max_size` while `--clients` threads query, then
//!    raises it again: once the connections in use drained, the pool stays
//!    within the new size, and grows back after the raise.
//! 2. `retire_all`, as a reload does, while two connections are held: idle
//!    ones close at once, the held ones are `stale_count` until returned.
//! 3. Built with `soft_limit` and a short `idle_timeout`, the pool shrinks
//!    back to the soft limit once the load stops, and stays there.
//! 4. The manager is also a `TaggedManager` (tag: database, design document)
//!    whose `tag` hook records what a connection has loaded: `take_tagged`
//!    finds a connection again by its exact tag, and reuses it for another
//!    design document of the same database.
//! 5. A `PoolGroup` of two replicas: `try_take` spreads over both, and
//!    `remove_pool(.., Removal::Graceful)` lets one go, its held connections
//!    closing as they come back.
//!
//! ```text
//! cargo run --release --example connection_pool
//! cargo run --release --example connection_pool -- --clients 64 --max-size 4 --queue-max 8
//! cargo run --release --example connection_pool -- --help
//! ```

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use sidejob::{Manager, ObjectPool, PoolGroup, Pooled, Removal, TaggedManager, TakeError};

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
    /// Its number, in the order connections were opened (from 1).
    id: u64,
    uses: u32,
    broken: bool,
    /// The design documents it has loaded, as "database/_design/name".
    loaded: Vec<String>,
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
    /// Calls of the `tag` hook.
    tags: AtomicU64,
}

impl Db {
    fn new(connect_fail_pct: u64) -> Db {
        let rng = AtomicU64::new(0x2545_F491_4F6C_DD1D); // xorshift: any seed but 0
        Db {
            connect_fail_pct,
            rng,
            ..Db::default()
        }
    }

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
        let id = self.opened.fetch_add(1, Relaxed) + 1;
        Ok(Conn {
            id,
            ..Conn::default()
        })
    }

    fn check(&self, conn: &mut Conn) -> bool {
        !conn.broken && conn.uses < MAX_USES
    }

    fn destroy(&self, _conn: Conn) {
        self.closed.fetch_add(1, Relaxed);
        self.live.fetch_sub(1, Relaxed);
    }
}

impl TaggedManager for Db {
    /// (database, design document).
    type Tag = (String, String);

    /// "Loads" the design document: the connection remembers it.
    fn tag(&self, conn: &mut Conn, (db, doc): &Self::Tag) -> io::Result<()> {
        self.tags.fetch_add(1, Relaxed);
        conn.loaded.push(format!("{db}/{doc}"));
        Ok(())
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
                    TakeError::Closed => 5,
                    // A failed `create` or `tag`, or a kind of error added
                    // later: `TakeError` is non-exhaustive.
                    _ => 4,
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
    let pool = ObjectPool::builder(Db::new(cli.connect_fail_pct))
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

    println!("\n== lifecycle ==");
    lifecycle(max, cli.clients)
}

type Fallible = Result<(), Box<dyn std::error::Error>>;
const SECOND: Duration = Duration::from_secs(1);
/// The reaping pool's `idle_timeout`.
const IDLE: Duration = Duration::from_millis(50);

/// Polls `done` every millisecond for up to `limit`: whether it came true.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Runs `f` while `clients` threads take connections for 1 ms queries, then
/// stops them (also when a check in `f` fails, so the scope can end).
fn under_load<R>(pool: &ObjectPool<Db>, clients: u16, f: impl FnOnce() -> R) -> R {
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Relaxed);
        }
    }
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        let _stop = StopOnDrop(&stop);
        for _ in 0..clients {
            scope.spawn(|| {
                while !stop.load(Relaxed) {
                    match pool.take(Duration::from_millis(5)) {
                        Ok(_conn) => thread::sleep(QUERY),
                        Err(_) => thread::yield_now(),
                    }
                }
            });
        }
        f()
    })
}

/// The second part: reconfiguration, reload, reaping, tags and groups.
fn lifecycle(max: usize, clients: u16) -> Fallible {
    // Connects never fail here (`Db::new(0)`). At least 4 connections: the
    // reload below holds two and takes a third.
    let max = max.max(4);

    // 1. Live reconfiguration: down to `small`, then back up to `max`.
    let pool = ObjectPool::builder(Db::new(0)).max_size(max).build()?;
    let (small, busy) = (max.div_ceil(2), max.min(clients.into()));
    let full = || pool.status().size >= busy;
    under_load(&pool, clients, || {
        wait_until(SECOND, full);
        pool.reconfigure(|c| c.max_size = small)?;
        let started = Instant::now();
        let drained = wait_until(SECOND, || pool.status().size <= small);
        let drain = started.elapsed();
        // Watch for 50 ms, clients still running: nothing grows past `small`.
        let (mut most, until) = (0, Instant::now() + Duration::from_millis(50));
        while Instant::now() < until {
            let live = pool.manager().live.load(Relaxed);
            most = most.max(pool.status().size).max(live);
        }
        println!(
            "  max_size {max} -> {small}, {clients} clients: drained in {drain:?}, then <= {most}"
        );
        check!(drained && most <= small, "drained: size, live <= {small}");
        pool.reconfigure(|c| c.max_size = max)?;
        let (grew, size) = (wait_until(SECOND, full), pool.status().size);
        println!("  max_size {small} -> {max}: size {size}");
        check!(grew && size <= max, "grew back to {size} <= {max}");
        Fallible::Ok(())
    })?;

    // 2. A reload: retire everything while two connections are held.
    let held = [pool.take(SECOND)?, pool.take(SECOND)?];
    let idle = pool.status().idle;
    pool.retire_all();
    let (stale, idle_now) = (pool.stale_count(), pool.status().idle);
    println!("  retire_all, 2 held and {idle} idle: stale {stale}, idle {idle_now}");
    check!(
        stale == 2 && idle_now == 0,
        "held ones stale, idle ones closed"
    );
    let fresh = pool.take(SECOND)?;
    let new = held.iter().all(|conn| conn.id < fresh.id);
    check!(new, "then a new connection: #{}", fresh.id);
    drop(held);
    let (stale, size) = (pool.stale_count(), pool.status().size);
    check!(
        stale == 0 && size == 1,
        "returned: stale {stale}, size {size}"
    );
    drop(fresh);

    // 3. Idle reaping down to the soft limit once the load stops.
    let soft = 2;
    let pool = ObjectPool::builder(Db::new(0))
        .max_size(max)
        .soft_limit(soft)
        .idle_timeout(IDLE)
        .build()?;
    let full = || pool.status().size >= busy;
    under_load(&pool, clients, || wait_until(SECOND, full));
    let (peak, stopped, kept) = (pool.status().size, Instant::now(), soft.min(busy));
    let shrunk = wait_until(3 * SECOND, || pool.status().size <= soft);
    let (size, took) = (pool.status().size, stopped.elapsed());
    let (reaped, destroyed) = (pool.stats().reaped, pool.stats().destroyed);
    println!("  soft_limit {soft}, idle_timeout {IDLE:?}: size {peak} -> {size} in {took:?}");
    check!(shrunk && size == kept, "shrank to the soft limit: {size}");
    check!(reaped == destroyed, "every close a reap: {reaped}");
    thread::sleep(4 * IDLE);
    let size = pool.status().size;
    check!(size == kept, "still {size} after 4 idle timeouts");

    // 4. Tags: (database, design document).
    let pool = ObjectPool::builder(Db::new(0)).max_size(4).build()?;
    let tag = |db: &str, doc: &str| (db.to_owned(), format!("_design/{doc}"));
    let (reports, users) = (tag("accounts", "reports"), tag("accounts", "users"));
    let first = pool.take_tagged(&reports, SECOND)?.id;
    let again = pool.take_tagged(&reports, SECOND)?;
    let (id, loaded) = (again.id, &again.loaded);
    println!("  take_tagged {reports:?}: #{first}, again #{id}, loaded {loaded:?}");
    check!(
        id == first && loaded.len() == 1,
        "exact tag: #{id} again, as is"
    );
    drop(again);
    let same_group = pool.take_tagged(&users, SECOND)?;
    let (id, loaded) = (same_group.id, &same_group.loaded);
    println!("  take_tagged {users:?}: #{id}, loaded {loaded:?}");
    let now = same_group.tag() == Some(&users);
    check!(id == first && now, "same database: #{id} reused, retagged");
    drop(same_group);
    let other = pool.take_tagged(&tag("orders", "totals"), SECOND)?.id;
    check!(
        other != first,
        "another database: a new connection #{other}"
    );
    let (tags, idle) = (pool.manager().tags.load(Relaxed), pool.status().tagged);
    check!(
        tags == 3 && idle == 2,
        "tag calls {tags} == 3, idle tagged {idle}"
    );

    // 5. A group of two replicas.
    let group = PoolGroup::new();
    for key in ["replica-1", "replica-2"] {
        group.add_pool(key, ObjectPool::builder(Db::new(0)).max_size(3).build()?)?;
    }
    for _ in 0..200 {
        drop(group.try_take()?);
    }
    let stats = |key| group.pool(&key).map(|pool| pool.stats().takes);
    let takes = [stats("replica-1"), stats("replica-2")].map(Option::unwrap_or_default);
    println!("  200 group try_takes, one at a time: {takes:?} per replica");
    check!(takes.iter().all(|&n| n >= 50), "try_take spreads over both");
    let held: Vec<_> = (0..6).map_while(|_| group.try_take().ok()).collect();
    let refused = matches!(group.try_take(), Err(TakeError::Overload));
    check!(
        held.len() == 6 && refused,
        "6 held over both, then Overload"
    );
    let removed = group.remove_pool(&"replica-1", Removal::Graceful);
    let removed = removed.ok_or("no replica-1")?;
    let (keys, stale) = (group.keys(), removed.stale_count());
    println!("  remove_pool(replica-1, Graceful), 6 held: keys {keys:?}, its stale {stale}");
    check!(
        keys == ["replica-2"] && stale == 3,
        "replica-1 left, 3 stale"
    );
    drop(held);
    let takes = removed.stats().takes;
    drop(group.try_take()?);
    let (size, db) = (removed.status().size, removed.manager());
    let (opened, closed) = (db.opened.load(Relaxed), db.closed.load(Relaxed));
    check!(
        size == 0 && opened == closed,
        "replica-1 closed all {closed}"
    );
    check!(removed.stats().takes == takes, "new takes go to replica-2");
    Ok(())
}
