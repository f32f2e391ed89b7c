//! Spawn cost: `sidejob::Supervisor::spawn` + `ChildHandle::join` of a
//! trivial child, against plain `std::thread::spawn` + `join` and against the
//! same thread guarded by the usual ad-hoc limiters.
//!
//! Every child returns a `u64` it got through `black_box`; the spawner
//! `black_box`es what `join` hands back. Nothing is refused: every limiter has
//! room for 1024 children, more than are ever alive (a refusal panics).
//!
//! # Contenders
//!
//! | name               | one spawn + join                                                          |
//! |--------------------|---------------------------------------------------------------------------|
//! | `sidejob`          | `Supervisor::spawn` (capacity 1024, one shard per CPU) + `join`            |
//! | `std-thread`       | `std::thread::spawn` + `join`: no limit, the cost of the thread itself     |
//! | `tokio-semaphore`  | `Arc<tokio::sync::Semaphore>::try_acquire_owned`, the permit moved into the thread (dropped when its body ends), `std::thread::spawn` + `join` |
//! | `atomic-usize`     | one shared `AtomicUsize`: load, check, CAS; `fetch_sub` at the end of the thread body; `std::thread::spawn` + `join` |
//! | `std-thread-named` | diagnostic, not a contender: `std::thread::Builder::new().name(format!(..))` + `join`, i.e. `std-thread` plus the thread name sidejob gives each child |
//!
//! # Groups
//!
//! * `supervisor/one-at-a-time`: the bench thread spawns one child, joins it,
//!   and repeats; at most one child is alive. Criterion's `time` is
//!   **microseconds per spawn + join**.
//! * `supervisor/batch-16`: the bench thread spawns 16 children, then joins
//!   all 16 in spawn order, so several child threads are alive at once (and
//!   on a 2-core machine, run while the bench thread is still spawning). One
//!   criterion iteration is one batch; the time returned to criterion is the
//!   batch's time divided by 16, so criterion's `time` is again
//!   **microseconds per child** (spawn + join).
//!
//! # Paired mode (`SIDEJOB_BENCH_PAIRED`)
//!
//! Thread creation on a shared VM drifts between speed levels for seconds at
//! a time, by far more than the few microseconds that separate the
//! contenders, and criterion measures the contenders one after the other.
//! With `SIDEJOB_BENCH_PAIRED=<rounds>` set, the bench skips criterion and
//! instead runs `<rounds>` rounds; in each round every contender in turn
//! (the starting one rotating from round to round) does 48 spawn + join in
//! each group's pattern (48 one at a time; 3 batches of 16). It prints, per
//! group and contender, the median and 10th percentile of the per-round
//! µs per child, and the median over rounds of the difference to
//! `std-thread` in the same round (in µs and in %). Neighbouring measurements
//! share the machine's state, so the paired difference is robust where the
//! criterion slopes are not.
//!
//! # Running
//!
//! ```text
//! cargo bench --bench supervisor
//! cargo bench --bench supervisor -- 'supervisor/batch-16'
//! cargo bench --bench supervisor -- --measurement-time 10
//! SIDEJOB_BENCH_PAIRED=400 cargo bench --bench supervisor
//! ```
//!
//! Criterion settings: 1 s warm-up, 3 s measurement, 30 samples; the whole
//! bench takes about 50 s. The paired mode with 400 rounds takes about 10 s.

mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use criterion::{criterion_group, BenchmarkGroup, Criterion};
use sidejob::{ChildHandle, ChildPanicked, Supervisor};

use common::{quantile, round_ratios};

/// Room in every limiter: more children than are ever alive at once.
const CAPACITY: usize = 1024;

/// Children per batch in `supervisor/batch-16`.
const BATCH: usize = 16;

/// What the trivial child computes: its input, through `black_box`.
#[inline]
fn child_work(value: u64) -> u64 {
    black_box(value)
}

/// A way to start a trivial child on its own thread and wait for it.
trait Spawner {
    /// What the spawner keeps to join the child.
    type Handle;

    /// Starts a child that returns `value` (panics if the limiter refuses).
    fn spawn(&self, value: u64) -> Self::Handle;

    /// Waits for the child and returns its value.
    fn join(handle: Self::Handle) -> u64;
}

impl Spawner for Supervisor {
    type Handle = ChildHandle<u64>;

    #[inline]
    fn spawn(&self, value: u64) -> Self::Handle {
        match Supervisor::spawn(self, move |_| child_work(value)) {
            Ok(handle) => handle,
            Err(err) => panic!("sidejob refused a child: {err}"),
        }
    }

    #[inline]
    fn join(handle: Self::Handle) -> u64 {
        let outcome: Result<u64, ChildPanicked> = handle.join();
        outcome.expect("the child does not panic")
    }
}

/// Plain `std::thread::spawn`: no limit at all.
struct StdThread;

impl Spawner for StdThread {
    type Handle = JoinHandle<u64>;

    #[inline]
    fn spawn(&self, value: u64) -> Self::Handle {
        std::thread::spawn(move || child_work(value))
    }

    #[inline]
    fn join(handle: Self::Handle) -> u64 {
        handle.join().expect("the child does not panic")
    }
}

/// `std::thread::Builder` with a fresh name per thread, as sidejob names its
/// children (`{name}-{id}`): isolates what the name costs.
struct StdThreadNamed {
    next: AtomicUsize,
}

impl Spawner for StdThreadNamed {
    type Handle = JoinHandle<u64>;

    #[inline]
    fn spawn(&self, value: u64) -> Self::Handle {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        std::thread::Builder::new()
            .name(format!("bench-child-{n}"))
            .spawn(move || child_work(value))
            .expect("the OS starts the thread")
    }

    #[inline]
    fn join(handle: Self::Handle) -> u64 {
        handle.join().expect("the child does not panic")
    }
}

/// A tokio semaphore: the owned permit travels into the thread.
struct TokioSemaphore {
    semaphore: Arc<tokio::sync::Semaphore>,
}

impl Spawner for TokioSemaphore {
    type Handle = JoinHandle<u64>;

    #[inline]
    fn spawn(&self, value: u64) -> Self::Handle {
        let permit = Arc::clone(&self.semaphore)
            .try_acquire_owned()
            .expect("the semaphore has room");
        std::thread::spawn(move || {
            let out = child_work(value);
            drop(permit);
            out
        })
    }

    #[inline]
    fn join(handle: Self::Handle) -> u64 {
        handle.join().expect("the child does not panic")
    }
}

/// One shared counter, taken with a CAS and given back at the end of the
/// thread body.
struct AtomicLimiter {
    used: Arc<AtomicUsize>,
    limit: usize,
}

impl AtomicLimiter {
    #[inline]
    fn admit(&self) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            if used >= self.limit {
                return false;
            }
            match self.used.compare_exchange_weak(
                used,
                used + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }
}

impl Spawner for AtomicLimiter {
    type Handle = JoinHandle<u64>;

    #[inline]
    fn spawn(&self, value: u64) -> Self::Handle {
        assert!(self.admit(), "the counter has room");
        let used = Arc::clone(&self.used);
        std::thread::spawn(move || {
            let out = child_work(value);
            used.fetch_sub(1, Ordering::Release);
            out
        })
    }

    #[inline]
    fn join(handle: Self::Handle) -> u64 {
        handle.join().expect("the child does not panic")
    }
}

/// Spawn one child, join it, repeat.
fn one_at_a_time<S: Spawner>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    spawner: &S,
) {
    let mut value = 0u64;
    group.bench_function(name, |b| {
        b.iter(|| {
            value = value.wrapping_add(1);
            let handle = spawner.spawn(value);
            black_box(S::join(handle))
        });
    });
}

/// Spawn `BATCH` children, then join them all; time per child.
fn batch<S: Spawner>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    spawner: &S,
) {
    let mut handles: Vec<S::Handle> = Vec::with_capacity(BATCH);
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                spawn_join_batch(spawner, BATCH, &mut handles);
            }
            start.elapsed() / BATCH as u32
        });
    });
}

/// Spawns `size` children into `handles` (empty on entry), then joins them
/// all in spawn order.
#[inline]
fn spawn_join_batch<S: Spawner>(spawner: &S, size: usize, handles: &mut Vec<S::Handle>) {
    for i in 0..size {
        handles.push(spawner.spawn(i as u64));
    }
    for handle in handles.drain(..) {
        black_box(S::join(handle));
    }
}

/// The contenders, built fresh for each group.
struct Contenders {
    sidejob: Supervisor,
    tokio: TokioSemaphore,
    atomic: AtomicLimiter,
    named: StdThreadNamed,
}

impl Contenders {
    fn new() -> Self {
        Contenders {
            sidejob: Supervisor::builder()
                .capacity(CAPACITY)
                .build()
                .expect("the supervisor builds"),
            tokio: TokioSemaphore {
                semaphore: Arc::new(tokio::sync::Semaphore::new(CAPACITY)),
            },
            atomic: AtomicLimiter {
                used: Arc::new(AtomicUsize::new(0)),
                limit: CAPACITY,
            },
            named: StdThreadNamed {
                next: AtomicUsize::new(0),
            },
        }
    }

    /// Checks that every child freed what it took.
    fn check_drained(&self) {
        assert_eq!(self.sidejob.count(), 0, "sidejob children left alive");
        let stats = self.sidejob.stats();
        assert_eq!(stats.spawned, stats.finished, "sidejob children unfinished");
        assert_eq!(
            self.tokio.semaphore.available_permits(),
            CAPACITY,
            "tokio permits not returned"
        );
        assert_eq!(
            self.atomic.used.load(Ordering::Relaxed),
            0,
            "atomic slots not returned"
        );
    }
}

fn supervisor(c: &mut Criterion) {
    {
        let contenders = Contenders::new();
        let mut group = c.benchmark_group("supervisor/one-at-a-time");
        one_at_a_time(&mut group, "sidejob", &contenders.sidejob);
        one_at_a_time(&mut group, "std-thread", &StdThread);
        one_at_a_time(&mut group, "tokio-semaphore", &contenders.tokio);
        one_at_a_time(&mut group, "atomic-usize", &contenders.atomic);
        one_at_a_time(&mut group, "std-thread-named", &contenders.named);
        group.finish();
        contenders.check_drained();
    }
    {
        let contenders = Contenders::new();
        let mut group = c.benchmark_group("supervisor/batch-16");
        batch(&mut group, "sidejob", &contenders.sidejob);
        batch(&mut group, "std-thread", &StdThread);
        batch(&mut group, "tokio-semaphore", &contenders.tokio);
        batch(&mut group, "atomic-usize", &contenders.atomic);
        batch(&mut group, "std-thread-named", &contenders.named);
        group.finish();
        contenders.check_drained();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = supervisor
}

/// Children per contender per round in the paired mode.
const PAIRED_CHILDREN: usize = 48;

/// Contender names in the order the paired mode indexes them.
const NAMES: [&str; 5] = [
    "sidejob",
    "std-thread",
    "tokio-semaphore",
    "atomic-usize",
    "std-thread-named",
];

/// Index of `std-thread` in [`NAMES`]: the baseline of the paired differences.
const BASELINE: usize = 1;

/// µs per child for `PAIRED_CHILDREN` children, in batches of `size`.
fn paired_round<S: Spawner>(spawner: &S, size: usize) -> f64 {
    let mut handles: Vec<S::Handle> = Vec::with_capacity(size);
    let start = Instant::now();
    for _ in 0..PAIRED_CHILDREN / size {
        spawn_join_batch(spawner, size, &mut handles);
    }
    start.elapsed().as_secs_f64() * 1e6 / PAIRED_CHILDREN as f64
}

/// The paired mode: see the module docs.
fn paired(rounds: usize) {
    for (group, size) in [("one-at-a-time", 1), ("batch-16", BATCH)] {
        let contenders = Contenders::new();
        let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); NAMES.len()];
        for round in 0..rounds {
            for k in 0..NAMES.len() {
                let which = (round + k) % NAMES.len();
                let time = match which {
                    0 => paired_round(&contenders.sidejob, size),
                    1 => paired_round(&StdThread, size),
                    2 => paired_round(&contenders.tokio, size),
                    3 => paired_round(&contenders.atomic, size),
                    _ => paired_round(&contenders.named, size),
                };
                times[which].push(time);
            }
        }
        contenders.check_drained();
        println!("supervisor/{group} (paired, {rounds} rounds of {PAIRED_CHILDREN} children)");
        println!(
            "  {:18} {:>9} {:>9} {:>14} {:>10}",
            "contender", "median µs", "p10 µs", "vs std-thread", "(%)"
        );
        for (which, name) in NAMES.iter().enumerate() {
            let diffs: Vec<f64> = times[which]
                .iter()
                .zip(&times[BASELINE])
                .map(|(t, base)| t - base)
                .collect();
            let ratios = round_ratios(&times[which], &times[BASELINE]);
            println!(
                "  {:18} {:9.2} {:9.2} {:+11.2} µs {:+9.1}%",
                name,
                quantile(&times[which], 0.5),
                quantile(&times[which], 0.1),
                quantile(&diffs, 0.5),
                (quantile(&ratios, 0.5) - 1.0) * 100.0,
            );
        }
    }
}

fn main() {
    common::paired_or_criterion(paired, benches);
}
