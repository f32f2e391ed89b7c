//! Async object-pool cost: take an idle object without waiting, touch it,
//! give it back, on a tokio runtime, for `sidejob::AsyncObjectPool` and the
//! async pools Rust servers use; then, with `SIDEJOB_BENCH_REDIS=1`, GET
//! round trips to a real `redis-server` through each pool.
//!
//! # Contenders (the micro benchmark)
//!
//! | name               | what one operation is                                             |
//! |--------------------|-------------------------------------------------------------------|
//! | `sidejob-async`    | `AsyncObjectPool::try_take().await` + drop of the `AsyncPooled`   |
//! | `deadpool-managed` | `deadpool::managed::Pool::get().await` + drop (`recycle` is `Ok`) |
//! | `bb8`              | `bb8::Pool::get().await` + drop, `test_on_check_out(false)`        |
//! | `sidejob-sync`     | `ObjectPool::try_take()` + drop, in the same task (a reference)   |
//!
//! No pool checks its object on take: sidejob's `check_on_take` is off,
//! bb8's `test_on_check_out` is off, and deadpool's `recycle`, which it
//! always awaits, answers `Ok` at once. Every pool holds at most 64 objects,
//! more than the drivers ever hold, and is warmed (all 64 made) first.
//!
//! On a current-thread runtime one driver task, and on a `w`-worker runtime
//! `w` driver tasks, each run `iters` operations; time is **nanoseconds per
//! operation per driver**, as the other benches report per thread.
//!
//! # The Redis comparison
//!
//! `SIDEJOB_BENCH_REDIS=1 cargo bench --bench async_object_pool --features tokio`
//! also starts `redis-server` on a free port and, for each pool (sidejob,
//! deadpool-redis, bb8-redis, each of 4 connections), runs GET round trips
//! from 4 and from 32 tasks (1x and 8x the connections) for 3 s each,
//! printing throughput and the p50/p99 of a take + GET + return.
//!
//! ```text
//! cargo bench --bench async_object_pool --features tokio
//! SIDEJOB_BENCH_REDIS=1 cargo bench --bench async_object_pool --features tokio -- redis
//! ```

mod common;

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::thread_counts;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// The most objects every pool holds.
const MAX_SIZE: usize = 64;

struct Counters;

impl sidejob::AsyncManager for Counters {
    type Object = u64;
    type Error = Infallible;

    async fn create(&self) -> Result<u64, Infallible> {
        Ok(0)
    }
}

impl sidejob::Manager for Counters {
    type Object = u64;
    type Error = Infallible;

    fn create(&self) -> Result<u64, Infallible> {
        Ok(0)
    }
}

struct DeadpoolCounters;

impl deadpool::managed::Manager for DeadpoolCounters {
    type Type = u64;
    type Error = Infallible;

    async fn create(&self) -> Result<u64, Infallible> {
        Ok(0)
    }

    async fn recycle(
        &self,
        _: &mut u64,
        _: &deadpool::managed::Metrics,
    ) -> deadpool::managed::RecycleResult<Infallible> {
        Ok(())
    }
}

struct Bb8Counters;

impl bb8::ManageConnection for Bb8Counters {
    type Connection = u64;
    type Error = Infallible;

    async fn connect(&self) -> Result<u64, Infallible> {
        Ok(0)
    }

    async fn is_valid(&self, _: &mut u64) -> Result<(), Infallible> {
        Ok(())
    }

    fn has_broken(&self, _: &mut u64) -> bool {
        false
    }
}

/// Benchmarks one contender: `drivers` tasks on `runtime`, each holding
/// its own clone of `$pool` (cloned once, outside the loop: a shared
/// reference count bumped per operation would be measured too), each
/// running `iters` times `$round` with `$p` bound to `&pool`.
macro_rules! contender {
    ($group:expr, $name:expr, $runtime:expr, $drivers:expr, $pool:expr, |$p:ident| $round:expr) => {{
        let pool = $pool;
        $group.bench_function($name, |b| {
            b.iter_custom(|iters| {
                $runtime.block_on(async {
                    let start = Instant::now();
                    let tasks: Vec<_> = (0..$drivers)
                        .map(|_| {
                            let pool = pool.clone();
                            tokio::spawn(async move {
                                let $p = &pool;
                                for _ in 0..iters {
                                    $round;
                                }
                            })
                        })
                        .collect();
                    for task in tasks {
                        task.await.unwrap();
                    }
                    start.elapsed()
                })
            });
        });
    }};
}

/// `(runtime, drivers, name)` for a current-thread runtime and each
/// multi-threaded worker count above 1.
fn runtimes() -> Vec<(tokio::runtime::Runtime, usize, String)> {
    let mut runtimes = vec![(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        1,
        "current-thread".to_owned(),
    )];
    for workers in thread_counts().into_iter().filter(|&workers| workers > 1) {
        runtimes.push((
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .build()
                .unwrap(),
            workers,
            format!("{workers}-workers"),
        ));
    }
    runtimes
}

fn async_object_pool(c: &mut Criterion) {
    for (runtime, drivers, name) in runtimes() {
        let mut group = c.benchmark_group(format!("async_object_pool/{name}"));
        group.throughput(Throughput::Elements(drivers as u64));

        let pool = runtime.block_on(async {
            let pool = sidejob::AsyncObjectPool::builder(Counters)
                .max_size(MAX_SIZE)
                .build()
                .await
                .unwrap();
            let warm: Vec<_> = futures_all(&pool).await;
            drop(warm);
            Arc::new(pool)
        });
        contender!(group, "sidejob-async", runtime, drivers, pool, |pool| {
            let mut object = pool.try_take().await.unwrap();
            *object = black_box(*object + 1);
        });

        let pool = runtime.block_on(async {
            let pool: deadpool::managed::Pool<DeadpoolCounters> =
                deadpool::managed::Pool::builder(DeadpoolCounters)
                    .max_size(MAX_SIZE)
                    .build()
                    .unwrap();
            let mut warm = Vec::new();
            for _ in 0..MAX_SIZE {
                warm.push(pool.get().await.unwrap());
            }
            drop(warm);
            pool
        });
        contender!(group, "deadpool-managed", runtime, drivers, pool, |pool| {
            let mut object = pool.get().await.unwrap();
            *object = black_box(*object + 1);
        });

        let pool = runtime.block_on(async {
            let pool = bb8::Pool::builder()
                .max_size(MAX_SIZE as u32)
                .test_on_check_out(false)
                .build(Bb8Counters)
                .await
                .unwrap();
            let mut warm: Vec<bb8::PooledConnection<'static, Bb8Counters>> = Vec::new();
            for _ in 0..MAX_SIZE {
                warm.push(pool.get_owned().await.unwrap());
            }
            drop(warm);
            pool
        });
        contender!(group, "bb8", runtime, drivers, pool, |pool| {
            let mut object = pool.get().await.unwrap();
            *object = black_box(*object + 1);
        });

        let pool = Arc::new(
            sidejob::ObjectPool::builder(Counters)
                .max_size(MAX_SIZE)
                .build()
                .unwrap(),
        );
        let warm: Vec<_> = (0..MAX_SIZE).map(|_| pool.try_take().unwrap()).collect();
        drop(warm);
        contender!(group, "sidejob-sync", runtime, drivers, pool, |pool| {
            let mut object = pool.try_take().unwrap();
            *object = black_box(*object + 1);
        });
        group.finish();
    }
}

async fn futures_all(
    pool: &sidejob::AsyncObjectPool<Counters>,
) -> Vec<sidejob::AsyncPooled<'_, Counters>> {
    let mut taken = Vec::new();
    for _ in 0..MAX_SIZE {
        taken.push(pool.try_take().await.unwrap());
    }
    taken
}

/// Makes and checks Redis connections for sidejob's pool, as
/// deadpool-redis and bb8-redis do theirs (multiplexed tokio connections).
struct RedisManager(redis::Client);

impl sidejob::AsyncManager for RedisManager {
    type Object = redis::aio::MultiplexedConnection;
    type Error = redis::RedisError;

    async fn create(&self) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        self.0.get_multiplexed_async_connection().await
    }

    async fn check(&self, connection: &mut redis::aio::MultiplexedConnection) -> bool {
        let pong: redis::RedisResult<String> = redis::cmd("PING").query_async(connection).await;
        matches!(pong.as_deref(), Ok("PONG"))
    }
}

/// Connections per pool in the Redis comparison.
const REDIS_CONNECTIONS: usize = 4;

/// One pool's GETs from `tasks` tasks for `duration`: GETs per second, and
/// the p50, p99 and max of take + GET + return.
async fn redis_load<F, Fut>(tasks: usize, duration: Duration, get: F) -> [f64; 4]
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (get, stop, done) = (get.clone(), Arc::clone(&stop), Arc::clone(&done));
            tokio::spawn(async move {
                let mut histogram = hdrhistogram::Histogram::<u64>::new(3).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    get().await;
                    histogram
                        .record(started.elapsed().as_nanos() as u64)
                        .unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
                histogram
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    for handle in handles {
        all.add(handle.await.unwrap()).unwrap();
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let micros = |nanos: u64| nanos as f64 / 1000.0;
    [
        rate,
        micros(all.value_at_quantile(0.5)),
        micros(all.value_at_quantile(0.99)),
        micros(all.max()),
    ]
}

fn redis_comparison(_: &mut Criterion) {
    if std::env::var_os("SIDEJOB_BENCH_REDIS").is_none() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = std::process::Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server runs");
    let url = format!("redis://127.0.0.1:{port}/");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = redis::Client::open(url.as_str()).unwrap();
        let started = Instant::now();
        loop {
            if let Ok(mut connection) = client.get_multiplexed_async_connection().await {
                let _: () = redis::cmd("SET")
                    .arg("key")
                    .arg("value")
                    .query_async(&mut connection)
                    .await
                    .unwrap();
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let sidejob_pool = |check: bool| {
            let client = client.clone();
            async move {
                Arc::new(
                    sidejob::AsyncObjectPool::builder(RedisManager(client))
                        .max_size(REDIS_CONNECTIONS)
                        .init_size(REDIS_CONNECTIONS)
                        .check_on_take(check)
                        .build()
                        .await
                        .unwrap(),
                )
            }
        };
        let bb8_pool = |check: bool| {
            let url = url.clone();
            async move {
                bb8::Pool::builder()
                    .max_size(REDIS_CONNECTIONS as u32)
                    .test_on_check_out(check)
                    .build(bb8_redis::RedisConnectionManager::new(url.as_str()).unwrap())
                    .await
                    .unwrap()
            }
        };
        let mut config = deadpool_redis::Config::from_url(url.as_str());
        config.pool = Some(deadpool_redis::PoolConfig::new(REDIS_CONNECTIONS));
        let deadpool_pool = config
            .create_pool(Some(deadpool_redis::Runtime::Tokio1))
            .unwrap();
        let duration = Duration::from_secs(3);
        println!(
            "redis GET round trips, {REDIS_CONNECTIONS} connections per pool, {} s per row, 2 tokio workers",
            duration.as_secs()
        );
        println!("| pool | check on take | tasks | GET/s | p50 µs | p99 µs | max µs |");
        println!("|---|---|---|---|---|---|---|");
        for tasks in [REDIS_CONNECTIONS, 8 * REDIS_CONNECTIONS] {
            let mut rows = Vec::new();
            for check in [true, false] {
                let pool = sidejob_pool(check).await;
                let figures = redis_load(tasks, duration, move || {
                    let pool = Arc::clone(&pool);
                    async move {
                        let mut connection = pool.take(Duration::from_secs(5)).await.unwrap();
                        let _: String = redis::cmd("GET")
                            .arg("key")
                            .query_async(&mut *connection)
                            .await
                            .unwrap();
                    }
                })
                .await;
                rows.push(("sidejob", if check { "PING" } else { "none" }, figures));
                let pool = bb8_pool(check).await;
                let figures = redis_load(tasks, duration, move || {
                    let pool = pool.clone();
                    async move {
                        let mut connection = pool.get().await.unwrap();
                        let _: String = redis::cmd("GET")
                            .arg("key")
                            .query_async(&mut *connection)
                            .await
                            .unwrap();
                    }
                })
                .await;
                rows.push(("bb8-redis", if check { "PING" } else { "none" }, figures));
            }
            let pool = deadpool_pool.clone();
            let figures = redis_load(tasks, duration, move || {
                let pool = pool.clone();
                async move {
                    let mut connection = pool.get().await.unwrap();
                    let _: String = redis::cmd("GET")
                        .arg("key")
                        .query_async(&mut *connection)
                        .await
                        .unwrap();
                }
            })
            .await;
            rows.push(("deadpool-redis", "UNWATCH+PING (always)", figures));
            for (name, check, [rate, p50, p99, max]) in rows {
                println!("| {name} | {check} | {tasks} | {rate:.0} | {p50:.0} | {p99:.0} | {max:.0} |");
            }
        }
    });
    let _ = server.kill();
    let _ = server.wait();
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = async_object_pool, redis_comparison
}
criterion_main!(benches);
