//! Admission cost: one `try_acquire` plus dropping what it returned, for
//! `sidejob::Resource` and the usual alternatives, on 1 and N threads.
//!
//! # Contenders
//!
//! | name                   | what one operation is                                            |
//! |------------------------|------------------------------------------------------------------|
//! | `sidejob`              | `Resource::try_acquire` (one shard per CPU) + drop of the permit  |
//! | `sidejob-owned`        | `Resource::try_acquire_owned` (a `'static` permit) + drop          |
//! | `sidejob-adaptive`     | `sidejob` with an adaptive limit on (AIMD): sampled permits time their hold |
//! | `sidejob-owned-adaptive` | `sidejob-owned` with the adaptive limit on                     |
//! | `sidejob-adaptive-every` | `sidejob-adaptive` with every permit timed (an hour-long window keeps the first stride, 1): the worst case |
//! | `sidejob-leased`       | `sidejob` with a capacity good until a deadline (`CapacityLease::set_until`, a fleet's grant): each acquire that could admit reads a clock (the kernel's coarse one while the deadline is far) |
//! | `atomic-cas`           | one shared `AtomicUsize`: load, check, CAS; `fetch_sub` to release |
//! | `mutex`                | `Mutex<usize>`: lock, check, inc; then lock, dec                 |
//! | `tokio-semaphore`      | `tokio::sync::Semaphore::try_acquire` + drop of the permit        |
//! | `tokio-semaphore-owned` | `Semaphore::try_acquire_owned` on an `Arc<Semaphore>` + drop     |
//! | `async-lock-semaphore` | `async_lock::Semaphore::try_acquire` + drop of the guard          |
//! | `floor`                | each thread its own `CachePadded<AtomicUsize>`: no sharing at all |
//!
//! The floor is the same load/check/CAS/`fetch_sub` as `atomic-cas`, but on a
//! cache line no other thread touches: what an admission counter costs when
//! sharding is perfect and free. It runs in the uncontended mode only; in the
//! overload mode a per-thread limit cannot express "capacity < threads", and
//! a slot that always refuses would measure one load.
//!
//! # Modes
//!
//! * `uncontended`: capacity 1024, more than the threads can ever hold, so no
//!   attempt is refused.
//! * `overload`: capacity `threads - 1` (0 with one thread, so every attempt
//!   is refused). An attempt that is refused counts as one operation just
//!   like one that is admitted and released; the admitted share of attempts is
//!   printed to stderr after each contender.
//!
//! # What the reported time means
//!
//! Every benchmark is `iter_custom`. With one thread the loop runs on the
//! bench thread itself. With `t > 1` threads, `t` scoped threads are spawned,
//! meet at a `Barrier`, and each runs `iters` operations; the time returned to
//! criterion is the wall time from the first thread leaving the barrier to
//! the last thread finishing (thread spawn and join are not timed).
//!
//! So criterion's `time` is **nanoseconds per operation per thread**: the
//! time one thread needs for one operation while the other `t - 1` threads
//! do the same. Total throughput is `t / time`: e.g. 5 ns on 2 threads is
//! 2 / 5 ns = 400 M ops/s. Each group declares `Throughput::Elements(t)`,
//! so criterion's `thrpt` line already shows that total.
//!
//! Benchmark ids are `admission/<mode>/<t>-thread[s]/<contender>`.
//!
//! # Modes beyond criterion
//!
//! * `SIDEJOB_BENCH_MODE=matrix`: goodput and refusal latency where capacity
//!   is tight, threads x capacity, against one shared counter and tokio's
//!   `Semaphore` (see `matrix.rs`).
//! * `SIDEJOB_BENCH_MODE=resize`: admissions while `set_capacity` runs every
//!   10 ms (see `resize.rs`).
//! * `SIDEJOB_BENCH_MODE=shards`: what a refusal costs at 2 to 256 shards,
//!   8 slots held on 8 shards and 2 threads contending for the ninth,
//!   beside one counter (see `shards.rs`).
//! * `SIDEJOB_BENCH_MODE=tight`: the roomy fast path timed over loops of
//!   millions of operations, beside the per-thread floor: what criterion's
//!   per-iteration cost hides (see `tight.rs`).
//!
//! # Running
//!
//! ```text
//! cargo bench --bench admission
//! SIDEJOB_BENCH_THREADS=1,2,4,8,16 cargo bench --bench admission
//! cargo bench --bench admission -- 'admission/overload/2-threads'
//! SIDEJOB_BENCH_MODE=matrix cargo bench --bench admission
//! SIDEJOB_BENCH_MODE=resize SIDEJOB_BENCH_SECONDS=1 cargo bench --bench admission
//! SIDEJOB_BENCH_MODE=shards cargo bench --bench admission
//! SIDEJOB_BENCH_MODE=tight cargo bench --bench admission
//! ```
//!
//! The thread counts default to 1 and the number of CPUs. Criterion settings
//! (1 s warm-up, 3 s measurement, 30 samples) can be overridden on the command
//! line as usual, e.g. `-- --measurement-time 10`.

#[path = "../common/mod.rs"]
mod common;
mod matrix;
mod resize;
mod shards;
mod tight;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{run_threads, thread_counts};
use criterion::{criterion_group, BenchmarkGroup, Criterion, Throughput};
use crossbeam_utils::CachePadded;

/// Capacity in the uncontended mode: more than any thread count will hold.
const ROOMY: usize = 1024;

/// Something that admits or refuses one unit, and gives it straight back.
trait Limiter: Sync {
    /// Tries to take one unit and, if admitted, releases it again.
    /// `thread` is the caller's index in `0..threads` (only the floor uses it).
    /// Returns whether the attempt was admitted.
    fn attempt(&self, thread: usize) -> bool;
}

impl Limiter for sidejob::Resource {
    #[inline]
    fn attempt(&self, _thread: usize) -> bool {
        let permit = black_box(self.try_acquire());
        permit.is_ok()
    }
}

/// `try_acquire_owned`: the `'static` permit async code and tower layers
/// need.
struct OwnedResource(Arc<sidejob::Resource>);

impl Limiter for OwnedResource {
    #[inline]
    fn attempt(&self, _thread: usize) -> bool {
        let permit = black_box(self.0.try_acquire_owned());
        permit.is_ok()
    }
}

/// tokio's owned permit, on an `Arc<Semaphore>`.
struct OwnedSemaphore(Arc<tokio::sync::Semaphore>);

impl Limiter for OwnedSemaphore {
    #[inline]
    fn attempt(&self, _thread: usize) -> bool {
        let permit = black_box(Arc::clone(&self.0).try_acquire_owned());
        permit.is_ok()
    }
}

/// One shared counter, the textbook CAS limiter.
struct AtomicCas {
    used: AtomicUsize,
    capacity: usize,
}

impl AtomicCas {
    fn new(capacity: usize) -> Self {
        AtomicCas {
            used: AtomicUsize::new(0),
            capacity,
        }
    }
}

/// Load, check against `capacity`, CAS in `used + 1`; `fetch_sub` releases.
#[inline]
fn cas_admit(used: &AtomicUsize, capacity: usize) -> bool {
    let mut current = used.load(Ordering::Relaxed);
    loop {
        if current >= capacity {
            return false;
        }
        match used.compare_exchange_weak(current, current + 1, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => return true,
            Err(actual) => current = actual,
        }
    }
}

impl Limiter for AtomicCas {
    #[inline]
    fn attempt(&self, _thread: usize) -> bool {
        let admitted = black_box(cas_admit(&self.used, self.capacity));
        if admitted {
            self.used.fetch_sub(1, Ordering::Release);
        }
        admitted
    }
}

/// A count behind a `std::sync::Mutex`.
struct MutexLimiter {
    used: Mutex<usize>,
    capacity: usize,
}

impl MutexLimiter {
    fn new(capacity: usize) -> Self {
        MutexLimiter {
            used: Mutex::new(0),
            capacity,
        }
    }
}

impl Limiter for MutexLimiter {
    #[inline]
    fn attempt(&self, _thread: usize) -> bool {
        let admitted = {
            let mut used = self.used.lock().unwrap();
            if *used < self.capacity {
                *used += 1;
                true
            } else {
                false
            }
        };
        if black_box(admitted) {
            *self.used.lock().unwrap() -= 1;
        }
        admitted
    }
}

impl Limiter for tokio::sync::Semaphore {
    #[inline]
    fn attempt(&self, _thread: usize) -> bool {
        let permit = black_box(self.try_acquire());
        permit.is_ok()
    }
}

impl Limiter for async_lock::Semaphore {
    #[inline]
    fn attempt(&self, _thread: usize) -> bool {
        let guard = black_box(self.try_acquire());
        guard.is_some()
    }
}

/// The floor: one padded counter per thread, each with the full capacity.
struct Floor {
    slots: Box<[CachePadded<AtomicUsize>]>,
    capacity: usize,
}

impl Floor {
    fn new(threads: usize, capacity: usize) -> Self {
        Floor {
            slots: (0..threads)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            capacity,
        }
    }
}

impl Limiter for Floor {
    #[inline]
    fn attempt(&self, thread: usize) -> bool {
        let slot = &self.slots[thread];
        let admitted = black_box(cas_admit(slot, self.capacity));
        if admitted {
            slot.fetch_sub(1, Ordering::Release);
        }
        admitted
    }
}

/// Attempts and admissions across the current benchmark's runs (overload mode).
static ATTEMPTS: AtomicU64 = AtomicU64::new(0);
static ADMITTED: AtomicU64 = AtomicU64::new(0);

/// `iters` attempts on the calling thread; returns how many were admitted.
#[inline(never)]
fn run_loop<L: Limiter>(limiter: &L, thread: usize, iters: u64) -> u64 {
    let mut admitted = 0;
    for _ in 0..iters {
        admitted += u64::from(limiter.attempt(thread));
    }
    admitted
}

/// Runs `iters` attempts on each of `threads` threads; returns the wall time
/// from the first thread starting to the last finishing.
fn timed<L: Limiter>(limiter: &L, threads: usize, iters: u64) -> Duration {
    let (elapsed, admitted) = run_threads(threads, |thread| run_loop(limiter, thread, iters));
    ATTEMPTS.fetch_add(iters * threads as u64, Ordering::Relaxed);
    ADMITTED.fetch_add(admitted, Ordering::Relaxed);
    elapsed
}

/// Benchmarks one contender; in the overload mode, reports its admitted share.
fn contender<L: Limiter>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    threads: usize,
    report_admitted: bool,
    limiter: &L,
) {
    ATTEMPTS.store(0, Ordering::Relaxed);
    ADMITTED.store(0, Ordering::Relaxed);
    group.bench_function(name, |b| {
        b.iter_custom(|iters| timed(limiter, threads, iters));
    });
    let attempts = ATTEMPTS.load(Ordering::Relaxed);
    if report_admitted && attempts > 0 {
        let admitted = ADMITTED.load(Ordering::Relaxed);
        eprintln!(
            "{name:>24}: admitted {:.1}% of {attempts} attempts",
            100.0 * admitted as f64 / attempts as f64
        );
    }
}

fn group_name(mode: &str, threads: usize) -> String {
    let unit = if threads == 1 { "thread" } else { "threads" };
    format!("admission/{mode}/{threads}-{unit}")
}

fn admission(c: &mut Criterion) {
    for threads in thread_counts() {
        for (mode, capacity) in [("uncontended", ROOMY), ("overload", threads - 1)] {
            let overload = mode == "overload";
            let mut group = c.benchmark_group(group_name(mode, threads));
            group.throughput(Throughput::Elements(threads as u64));

            let resource = sidejob::Resource::new(capacity);
            contender(&mut group, "sidejob", threads, overload, &resource);
            let owned = OwnedResource(Arc::new(sidejob::Resource::new(capacity)));
            contender(&mut group, "sidejob-owned", threads, overload, &owned);
            let leased = Arc::new(sidejob::Resource::new(capacity));
            let lease = std::time::Instant::now() + Duration::from_secs(24 * 3600);
            leased
                .lease_capacity()
                .and_then(|owner| owner.set_until(capacity, lease, 0))
                .expect("a valid capacity");
            contender(&mut group, "sidejob-leased", threads, overload, &*leased);
            if !overload {
                // AIMD: with no drops and holds far under its timeout, it
                // keeps the capacity, so the bench measures the sampling.
                let adaptive = |window: Duration| {
                    sidejob::Resource::builder()
                        .capacity(capacity)
                        .adaptive(
                            sidejob::adaptive::Adaptive::aimd()
                                .max_limit(capacity)
                                .window(window),
                        )
                        .build()
                        .expect("a valid adaptive resource")
                };
                let window = sidejob::adaptive::DEFAULT_WINDOW;
                let borrowed = adaptive(window);
                contender(&mut group, "sidejob-adaptive", threads, overload, &borrowed);
                let owned = OwnedResource(Arc::new(adaptive(window)));
                contender(
                    &mut group,
                    "sidejob-owned-adaptive",
                    threads,
                    overload,
                    &owned,
                );
                let every = adaptive(Duration::from_secs(3600));
                contender(
                    &mut group,
                    "sidejob-adaptive-every",
                    threads,
                    overload,
                    &every,
                );
            }
            let cas = AtomicCas::new(capacity);
            contender(&mut group, "atomic-cas", threads, overload, &cas);
            let mutex = MutexLimiter::new(capacity);
            contender(&mut group, "mutex", threads, overload, &mutex);
            let tokio = tokio::sync::Semaphore::new(capacity);
            contender(&mut group, "tokio-semaphore", threads, overload, &tokio);
            let tokio_owned = OwnedSemaphore(Arc::new(tokio::sync::Semaphore::new(capacity)));
            contender(
                &mut group,
                "tokio-semaphore-owned",
                threads,
                overload,
                &tokio_owned,
            );
            let async_lock = async_lock::Semaphore::new(capacity);
            contender(
                &mut group,
                "async-lock-semaphore",
                threads,
                overload,
                &async_lock,
            );
            if !overload {
                let floor = Floor::new(threads, capacity);
                contender(&mut group, "floor", threads, overload, &floor);
            }
            group.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = admission
}

/// `SIDEJOB_BENCH_MODE=matrix`, `resize`, `shards` or `tight` runs that mode and prints its
/// table; otherwise criterion runs the benches above.
fn main() {
    match std::env::var("SIDEJOB_BENCH_MODE").as_deref() {
        Ok("matrix") => matrix::run(),
        Ok("resize") => resize::run(),
        Ok("shards") => shards::run(),
        Ok("tight") => tight::run(),
        Ok(other) => {
            panic!("SIDEJOB_BENCH_MODE: `{other}` is not `matrix`, `resize`, `shards` or `tight`")
        }
        Err(_) => {
            benches();
            criterion::Criterion::default()
                .configure_from_args()
                .final_summary();
        }
    }
}
