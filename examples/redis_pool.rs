//! Redis demo: an [`AsyncObjectPool`] of real Redis connections (the
//! `redis` crate's tokio connections) against a `redis-server` the demo
//! starts on 127.0.0.1, on a free port.
//!
//! 1. `--tasks` tasks run SET/GET round trips through a pool of
//!    `--max-size` connections: more tasks than connections, so takers
//!    wait in the FIFO queue; every value read back is checked.
//! 2. The server is killed (`SIGKILL`) and restarted on the same port. The
//!    idle connections are now broken: with `check_on_take` the next takes
//!    find them dead (a `PING` fails), destroy them and connect anew, and
//!    the second wave runs with no failed command.
//! 3. The pool is dropped and the server stopped.
//!
//! It ends with the pool's counts and self-checks; it exits non-zero if one
//! fails (`tests/async_object_pool/redis.rs` runs it).
//!
//! ```text
//! cargo run --release --example redis_pool --features tokio
//! cargo run --release --example redis_pool --features tokio -- --tasks 64 --max-size 8
//! ```

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use sidejob::{AsyncManager, AsyncObjectPool, AsyncPooled};

#[allow(dead_code)]
#[path = "../tests/support/redis_server.rs"]
mod redis_server;

#[derive(Debug, Parser)]
struct Args {
    /// Tasks running round trips at once.
    #[arg(long, default_value_t = 32)]
    tasks: usize,
    /// Connections in the pool.
    #[arg(long, default_value_t = 4)]
    max_size: usize,
    /// Round trips per task per wave.
    #[arg(long, default_value_t = 50)]
    rounds: usize,
}

/// Makes Redis connections and checks them with `PING`.
#[derive(Debug)]
struct RedisManager {
    client: redis::Client,
}

impl AsyncManager for RedisManager {
    type Object = MultiplexedConnection;
    type Error = redis::RedisError;

    async fn create(&self) -> redis::RedisResult<MultiplexedConnection> {
        self.client.get_multiplexed_async_connection().await
    }

    async fn check(&self, connection: &mut MultiplexedConnection) -> bool {
        let pong: redis::RedisResult<String> = redis::cmd("PING").query_async(connection).await;
        matches!(pong.as_deref(), Ok("PONG"))
    }
}

#[derive(Debug, Default)]
struct Wave {
    ok: AtomicU64,
    failed: AtomicU64,
    timeouts: AtomicU64,
}

/// Every task runs `rounds` SET/GET round trips through the pool.
async fn wave(pool: &Arc<AsyncObjectPool<RedisManager>>, args: &Args, name: &str) -> Arc<Wave> {
    let tally = Arc::new(Wave::default());
    let tasks: Vec<_> = (0..args.tasks)
        .map(|task| {
            let (pool, tally) = (Arc::clone(pool), Arc::clone(&tally));
            let rounds = args.rounds;
            let name = name.to_owned();
            tokio::spawn(async move {
                for round in 0..rounds {
                    let mut connection = match pool.take(Duration::from_secs(5)).await {
                        Ok(connection) => connection,
                        Err(_) => {
                            tally.timeouts.fetch_add(1, Relaxed);
                            continue;
                        }
                    };
                    let key = format!("{name}:{task}:{round}");
                    let value = format!("value {task} {round}");
                    let set: redis::RedisResult<()> = connection.set(&key, &value).await;
                    let got: redis::RedisResult<String> = connection.get(&key).await;
                    match (set, got) {
                        (Ok(()), Ok(got)) if got == value => {
                            tally.ok.fetch_add(1, Relaxed);
                        }
                        _ => {
                            tally.failed.fetch_add(1, Relaxed);
                            // Broken: not back into the pool.
                            AsyncPooled::fail(connection);
                        }
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a task panicked");
    }
    tally
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    let mut server = redis_server::RedisServer::start();
    println!("redis-server on 127.0.0.1:{}", server.port);

    let manager = RedisManager {
        client: redis::Client::open(server.url()).expect("a valid URL"),
    };
    let pool = Arc::new(
        AsyncObjectPool::builder(manager)
            .max_size(args.max_size)
            .init_size(args.max_size)
            .check_on_take(true)
            .create_timeout(Duration::from_secs(2))
            .build()
            .await
            .expect("the pool builds"),
    );
    let mut failures = Vec::new();
    let mut check = |ok: bool, what: &str| {
        println!("{} {what}", if ok { "ok:" } else { "FAILED:" });
        if !ok {
            failures.push(what.to_owned());
        }
    };

    let expected = (args.tasks * args.rounds) as u64;
    let started = Instant::now();
    let first = wave(&pool, &args, "first").await;
    let elapsed = started.elapsed();
    let ok = first.ok.load(Relaxed);
    println!(
        "first wave: {ok} round trips in {elapsed:.2?} ({:.0}/s) by {} tasks over {} connections",
        ok as f64 / elapsed.as_secs_f64(),
        args.tasks,
        args.max_size
    );
    check(
        ok == expected,
        "every round trip of the first wave succeeded",
    );
    let status = pool.status();
    check(
        status.size <= args.max_size,
        "the pool never went above max_size",
    );
    check(
        pool.stats().waits > 0,
        "tasks beyond max_size waited their turn",
    );

    server.restart_empty();
    println!("redis-server killed and restarted on the same port");

    let checks_before = pool.stats().failed_take_checks;
    let second = wave(&pool, &args, "second").await;
    let stats = pool.stats();
    let replaced = stats.failed_take_checks - checks_before;
    println!(
        "second wave: {} round trips; {replaced} broken connections found by check_on_take",
        second.ok.load(Relaxed)
    );
    check(
        replaced >= 1,
        "check_on_take found the broken connections and destroyed them",
    );
    check(
        second.ok.load(Relaxed) == expected,
        "every round trip of the second wave succeeded on new connections",
    );
    check(
        second.failed.load(Relaxed) == 0,
        "no caller was handed a broken connection",
    );

    let status = pool.status();
    println!("status: {status:?}");
    println!(
        "stats: takes {} creates {} destroyed {} waits {} timeouts {} failed_take_checks {} cancelled {}",
        stats.takes, stats.creates, stats.destroyed, stats.waits, stats.timeouts, stats.failed_take_checks, stats.cancelled
    );
    check(
        status.size == status.idle + status.in_use,
        "size is idle plus in use at rest",
    );
    check(
        stats.creates - stats.destroyed == status.size as u64,
        "every connection made is in the pool or destroyed",
    );
    drop(pool);
    drop(server);
    if failures.is_empty() {
        println!("all checks passed");
    } else {
        println!("{} checks FAILED", failures.len());
        std::process::exit(1);
    }
}
