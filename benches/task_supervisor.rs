//! The cost of a bounded, tracked task spawn: `try_spawn` + await of a
//! trivial task on a tokio runtime, against bare `tokio::spawn` + await and
//! against tokio's `Semaphore::try_acquire_owned` + tokio-util's
//! `TaskTracker`, the usual hand-made bound.
//!
//! With `w` runtime workers, `w` driver tasks each spawn and await `iters`
//! tasks one after another; time is **nanoseconds per spawn + await per
//! driver**, as the other benches report per thread.
//!
//! ```text
//! cargo bench --bench task_supervisor --features tokio
//! ```

mod common;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::thread_counts;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

/// The bound every limited contender has: more than the drivers hold.
const CAPACITY: usize = 1024;

/// Runs `drivers` tasks on `runtime`, each doing `iters` rounds of `round`;
/// returns the wall time.
fn drive<F, Fut>(
    runtime: &tokio::runtime::Runtime,
    drivers: usize,
    iters: u64,
    round: F,
) -> Duration
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    runtime.block_on(async move {
        let start = Instant::now();
        let tasks: Vec<_> = (0..drivers)
            .map(|_| {
                let round = round.clone();
                tokio::spawn(async move {
                    for _ in 0..iters {
                        round().await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        start.elapsed()
    })
}

fn contender<F, Fut>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    runtime: &tokio::runtime::Runtime,
    drivers: usize,
    round: F,
) where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    group.bench_function(name, |b| {
        b.iter_custom(|iters| drive(runtime, drivers, iters, round.clone()));
    });
}

fn task_supervisor(c: &mut Criterion) {
    for workers in thread_counts() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .build()
            .unwrap();
        let unit = if workers == 1 { "worker" } else { "workers" };
        let mut group = c.benchmark_group(format!("task_supervisor/{workers}-{unit}"));
        group.throughput(Throughput::Elements(workers as u64));

        contender(&mut group, "tokio-spawn", &runtime, workers, || async {
            tokio::spawn(async { std::hint::black_box(1) })
                .await
                .unwrap();
        });

        let supervisor = sidejob::TaskSupervisor::new(CAPACITY);
        contender(
            &mut group,
            "sidejob-try-spawn",
            &runtime,
            workers,
            move || {
                let handle = supervisor
                    .try_spawn(|_| async { std::hint::black_box(1) })
                    .unwrap_or_else(|_| panic!("refused"));
                async move {
                    handle.await.unwrap();
                }
            },
        );

        let semaphore = Arc::new(Semaphore::new(CAPACITY));
        let tracker = TaskTracker::new();
        contender(
            &mut group,
            "semaphore-tracker",
            &runtime,
            workers,
            move || {
                let permit = Arc::clone(&semaphore).try_acquire_owned().unwrap();
                let handle = tracker.spawn(async move {
                    let _permit = permit;
                    std::hint::black_box(1)
                });
                async move {
                    handle.await.unwrap();
                }
            },
        );
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = task_supervisor
}
criterion_main!(benches);
