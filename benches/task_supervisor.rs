//! The cost of a bounded, tracked task spawn: `try_spawn` + await of a
//! trivial task on a tokio runtime, against bare `tokio::spawn` + await and
//! against tokio's `Semaphore::try_acquire_owned` + tokio-util's
//! `TaskTracker`, the usual hand-made bound.
//!
//! With `w` runtime workers, `w` driver tasks each spawn and await `iters`
//! tasks one after another; time is **nanoseconds per spawn + await per
//! driver**, as the other benches report per thread.
//!
//! `sidejob-try-spawn-on` is the same spawn given the runtime's handle, as
//! `TaskTracker::spawn_on` takes one: it shows what `try_spawn`'s lookup of
//! the current runtime costs. Tokio offers that lookup, without panicking
//! outside a runtime, only as a clone of the runtime's handle, whose
//! reference count every spawn on every worker also writes.
//! `semaphore-tracker-checked` pays the same lookup before the semaphore
//! and tracker, which is what they need to refuse rather than panic
//! outside a runtime as `try_spawn` does.
//!
//! The `task_supervisor_track` groups leave the executor out: each of `t`
//! threads admits a trivial task with `try_track` and polls it to the end,
//! against a semaphore permit moved into a `TaskTracker::track_future`
//! polled the same way: the bound and the tracking alone, without tokio's
//! own spawn costs around them.
//!
//! ```text
//! cargo bench --bench task_supervisor --features tokio
//! SIDEJOB_BENCH_PAIRED=40 cargo bench --bench task_supervisor --features tokio
//! ```
//!
//! # Paired mode (`SIDEJOB_BENCH_PAIRED`)
//!
//! Spawn costs drift on a shared VM by more than the gaps between the
//! contenders, and criterion measures one contender after the other. With
//! `SIDEJOB_BENCH_PAIRED=<rounds>` set, the bench skips criterion and runs
//! the contenders in rounds instead, each contender in turn (the first one
//! rotating) doing 20 000 spawns per driver, and prints per contender the
//! median and 10th percentile of ns per spawn + await and the median over
//! rounds of its ratio to bare `tokio::spawn` in the same round.

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use common::{quantile, round_ratios, run_threads, thread_counts};
use criterion::{criterion_group, Criterion, Throughput};
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

/// A contender: runs `drivers` driver tasks of `iters` rounds each on the
/// runtime and returns the wall time.
type Contender = Box<dyn Fn(&tokio::runtime::Runtime, usize, u64) -> Duration>;

fn contender<F, Fut>(round: F) -> Contender
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    Box::new(move |runtime, drivers, iters| drive(runtime, drivers, iters, round.clone()))
}

/// The contenders, by name; the first is the baseline of the paired mode.
fn contenders() -> Vec<(&'static str, Contender)> {
    let supervisor = sidejob::TaskSupervisor::new(CAPACITY);
    let supervisor_on = supervisor.clone();
    let semaphore = Arc::new(Semaphore::new(CAPACITY));
    let tracker = TaskTracker::new();
    let (semaphore_checked, tracker_checked) = (Arc::clone(&semaphore), tracker.clone());
    vec![
        (
            "tokio-spawn",
            contender(|| async {
                tokio::spawn(async { std::hint::black_box(1) })
                    .await
                    .unwrap();
            }),
        ),
        (
            "sidejob-try-spawn",
            contender(move || {
                let handle = supervisor
                    .try_spawn(|_| async { std::hint::black_box(1) })
                    .unwrap_or_else(|_| panic!("refused"));
                async move {
                    handle.await.unwrap();
                }
            }),
        ),
        ("sidejob-try-spawn-on", {
            let supervisor = supervisor_on;
            let runtime = Arc::new(std::sync::OnceLock::new());
            contender(move || {
                let runtime = runtime.get_or_init(tokio::runtime::Handle::current);
                let handle = supervisor
                    .try_spawn_on(runtime, |_| async { std::hint::black_box(1) })
                    .unwrap_or_else(|_| panic!("refused"));
                async move {
                    handle.await.unwrap();
                }
            })
        }),
        (
            "semaphore-tracker",
            contender(move || {
                let permit = Arc::clone(&semaphore).try_acquire_owned().unwrap();
                let handle = tracker.spawn(async move {
                    let _permit = permit;
                    std::hint::black_box(1)
                });
                async move {
                    handle.await.unwrap();
                }
            }),
        ),
        (
            "semaphore-tracker-checked",
            contender(move || {
                let runtime = tokio::runtime::Handle::try_current().expect("a runtime");
                let permit = Arc::clone(&semaphore_checked).try_acquire_owned().unwrap();
                let handle = tracker_checked.spawn_on(
                    async move {
                        let _permit = permit;
                        std::hint::black_box(1)
                    },
                    &runtime,
                );
                async move {
                    handle.await.unwrap();
                }
            }),
        ),
    ]
}

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .build()
        .unwrap()
}

fn task_supervisor(c: &mut Criterion) {
    for workers in thread_counts() {
        let runtime = runtime(workers);
        let unit = if workers == 1 { "worker" } else { "workers" };
        let mut group = c.benchmark_group(format!("task_supervisor/{workers}-{unit}"));
        group.throughput(Throughput::Elements(workers as u64));
        for (name, run) in contenders() {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| run(&runtime, workers, iters));
            });
        }
        group.finish();
    }
}

/// Spawns per driver in one round of the paired mode.
const PAIRED_SPAWNS: u64 = 20_000;

/// The paired mode: every contender in turn (the first one rotating) runs
/// [`PAIRED_SPAWNS`] spawns per driver, `rounds` times, on one runtime per
/// worker count; prints per contender the median and 10th percentile of ns
/// per spawn + await per driver, and the median of its per-round ratio to
/// bare `tokio::spawn`.
fn paired(rounds: usize) {
    for workers in thread_counts() {
        let runtime = runtime(workers);
        let contenders = contenders();
        let count = contenders.len();
        let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); count];
        // One round of warm-up, not recorded.
        for round in 0..=rounds {
            for k in 0..count {
                let which = (round + k) % count;
                let elapsed = (contenders[which].1)(&runtime, workers, PAIRED_SPAWNS);
                if round > 0 {
                    times[which].push(elapsed.as_nanos() as f64 / PAIRED_SPAWNS as f64);
                }
            }
        }
        println!(
            "task_supervisor/{workers} worker(s) (paired, {rounds} rounds of {PAIRED_SPAWNS} spawns per driver)"
        );
        println!(
            "  {:20} {:>9} {:>9} {:>13}",
            "contender", "median ns", "p10 ns", "vs tokio-spawn"
        );
        for (which, (name, _)) in contenders.iter().enumerate() {
            let ratios = round_ratios(&times[which], &times[0]);
            println!(
                "  {:20} {:9.1} {:9.1} {:12.2}x",
                name,
                quantile(&times[which], 0.5),
                quantile(&times[which], 0.1),
                quantile(&ratios, 0.5),
            );
        }
    }
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    pin!(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// Runs `iters` rounds of `round` on each of `threads` threads; returns the
/// wall time.
fn track_rounds(threads: usize, iters: u64, round: impl Fn() + Sync) -> Duration {
    run_threads(threads, |_| {
        for _ in 0..iters {
            round();
        }
        0
    })
    .0
}

fn track(c: &mut Criterion) {
    for threads in thread_counts() {
        let unit = if threads == 1 { "thread" } else { "threads" };
        let mut group = c.benchmark_group(format!("task_supervisor_track/{threads}-{unit}"));
        group.throughput(Throughput::Elements(threads as u64));
        let supervisor = sidejob::TaskSupervisor::new(CAPACITY);
        group.bench_function("sidejob-try-track", |b| {
            b.iter_custom(|iters| {
                track_rounds(threads, iters, || {
                    let tracked = supervisor
                        .try_track(|_| async { std::hint::black_box(1) })
                        .unwrap_or_else(|_| panic!("refused"));
                    assert!(poll_once(tracked).is_ready());
                })
            });
        });
        let semaphore = Arc::new(Semaphore::new(CAPACITY));
        let tracker = TaskTracker::new();
        group.bench_function("semaphore-tracker", |b| {
            b.iter_custom(|iters| {
                track_rounds(threads, iters, || {
                    let permit = Arc::clone(&semaphore).try_acquire_owned().unwrap();
                    let tracked = tracker.track_future(async move {
                        let _permit = permit;
                        std::hint::black_box(1)
                    });
                    assert!(poll_once(tracked).is_ready());
                })
            });
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = task_supervisor, track
}
fn main() {
    common::paired_or_criterion(paired, benches);
}
