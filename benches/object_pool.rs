//! Object-pool cost: take one idle object without waiting, touch it, give it
//! back, for `sidejob::ObjectPool` and the usual alternatives, on 1 and N
//! threads.
//!
//! # Contenders
//!
//! | name                 | what one operation is                                                  |
//! |----------------------|------------------------------------------------------------------------|
//! | `sidejob`            | `ObjectPool::try_take` (one shard per CPU) + drop of the `Pooled`      |
//! | `deadpool-unmanaged` | `deadpool::unmanaged::Pool::try_get` + drop of the `Object`            |
//! | `r2d2`               | `r2d2::Pool::try_get` (no check on check-out) + drop of the connection |
//! | `object-pool`        | `object_pool::Pool::try_pull` + drop of the `Reusable`                 |
//! | `mutex-vec`          | `Mutex<Vec<u64>>`: lock, pop, unlock; touch; lock, push, unlock        |
//!
//! What each does inside, as of the versions in `Cargo.lock`:
//!
//! * `sidejob` pops the caller's home shard's idle stack (one `Mutex` per
//!   shard), and the drop pushes onto the returner's home stack after reading
//!   the pool's gate under that lock.
//! * `deadpool-unmanaged` takes a permit from a `tokio` semaphore, then pops a
//!   `std::sync::Mutex<Vec<T>>`; the drop pushes, bumps a counter and adds the
//!   permit back.
//! * `r2d2` pops under one `parking_lot` mutex and stamps the check-out time;
//!   the drop asks `has_broken`, stamps the idle time, pushes under the same
//!   mutex and signals a condition variable.
//! * `object-pool` pops and pushes a `parking_lot::Mutex<Vec<T>>`.
//! * `mutex-vec` is the baseline: the same stack behind a
//!   `std::sync::Mutex`, with nothing else, what a pool costs when all it
//!   keeps is a list of idle objects.
//!
//! Every pool holds at most 64 objects ([`MAX_SIZE`]), more than the threads
//! ever hold at once, and is warmed before it is measured: all 64 objects are
//! taken at once and given back, so that they exist (`sidejob` makes its
//! objects on demand) and no measured take has to make one. An object is a
//! `u64` counter that each operation increments through `black_box`.
//!
//! In such a roomy pool every take should find an object. A take that finds
//! none still counts as one operation; if any did, the share is printed to
//! stderr after the contender, as a warning.
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
//! do the same. Total throughput is `t / time`: e.g. 20 ns on 2 threads is
//! 2 / 20 ns = 100 M ops/s. Each group declares `Throughput::Elements(t)`,
//! so criterion's `thrpt` line already shows that total.
//!
//! Benchmark ids are `object_pool/<t>-thread[s]/<contender>`.
//!
//! # Running
//!
//! ```text
//! cargo bench --bench object_pool
//! SIDEJOB_BENCH_THREADS=1,2,4,8,16 cargo bench --bench object_pool
//! cargo bench --bench object_pool -- 'object_pool/2-threads'
//! ```
//!
//! The thread counts default to 1 and the number of CPUs. Criterion settings
//! (1 s warm-up, 3 s measurement, 30 samples) can be overridden on the command
//! line as usual, e.g. `-- --measurement-time 10`.

mod common;

use std::convert::Infallible;
use std::hint::black_box;
use std::ops::DerefMut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use common::{run_threads, thread_counts};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};

/// Every pool's size limit: more objects than any thread count will hold.
const MAX_SIZE: usize = 64;

/// A pool of `u64` counters that can hand one out without waiting.
trait Pool: Sync {
    /// A taken object; dropping it gives it back.
    type Guard<'a>: DerefMut<Target = u64>
    where
        Self: 'a;

    /// Takes an idle object, or `None` without waiting.
    fn try_take(&self) -> Option<Self::Guard<'_>>;
}

/// `sidejob`'s manager: makes counters.
struct Counter;

impl sidejob::Manager for Counter {
    type Object = u64;
    type Error = Infallible;

    fn create(&self) -> Result<u64, Self::Error> {
        Ok(0)
    }
}

impl Pool for sidejob::ObjectPool<Counter> {
    type Guard<'a> = sidejob::Pooled<'a, Counter>;

    #[inline]
    fn try_take(&self) -> Option<Self::Guard<'_>> {
        sidejob::ObjectPool::try_take(self).ok()
    }
}

impl Pool for deadpool::unmanaged::Pool<u64> {
    type Guard<'a> = deadpool::unmanaged::Object<u64>;

    #[inline]
    fn try_take(&self) -> Option<Self::Guard<'_>> {
        self.try_get().ok()
    }
}

/// `r2d2`'s manager: "connects" counters that never break.
struct Connector;

impl r2d2::ManageConnection for Connector {
    type Connection = u64;
    type Error = Infallible;

    fn connect(&self) -> Result<u64, Self::Error> {
        Ok(0)
    }

    fn is_valid(&self, _conn: &mut u64) -> Result<(), Self::Error> {
        Ok(())
    }

    fn has_broken(&self, _conn: &mut u64) -> bool {
        false
    }
}

impl Pool for r2d2::Pool<Connector> {
    type Guard<'a> = r2d2::PooledConnection<Connector>;

    #[inline]
    fn try_take(&self) -> Option<Self::Guard<'_>> {
        self.try_get()
    }
}

impl Pool for object_pool::Pool<u64> {
    type Guard<'a> = object_pool::Reusable<'a, u64>;

    #[inline]
    fn try_take(&self) -> Option<Self::Guard<'_>> {
        self.try_pull()
    }
}

/// The baseline: idle objects on a stack behind a `std::sync::Mutex`.
struct MutexVec {
    idle: Mutex<Vec<u64>>,
}

impl MutexVec {
    fn new(size: usize) -> Self {
        MutexVec {
            idle: Mutex::new(vec![0; size]),
        }
    }
}

/// An object taken from a [`MutexVec`]; pushed back when dropped.
struct MutexVecGuard<'a> {
    pool: &'a MutexVec,
    object: u64,
}

impl std::ops::Deref for MutexVecGuard<'_> {
    type Target = u64;

    fn deref(&self) -> &u64 {
        &self.object
    }
}

impl DerefMut for MutexVecGuard<'_> {
    fn deref_mut(&mut self) -> &mut u64 {
        &mut self.object
    }
}

impl Drop for MutexVecGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.pool.idle.lock().unwrap().push(self.object);
    }
}

impl Pool for MutexVec {
    type Guard<'a> = MutexVecGuard<'a>;

    #[inline]
    fn try_take(&self) -> Option<Self::Guard<'_>> {
        let object = self.idle.lock().unwrap().pop()?;
        Some(MutexVecGuard { pool: self, object })
    }
}

/// Increments a taken counter where the compiler cannot see it.
#[inline]
fn touch(object: &mut u64) {
    let object = black_box(object);
    *object = object.wrapping_add(1);
}

/// One operation: take, touch, give back. Returns whether an object was had.
#[inline]
fn cycle<P: Pool>(pool: &P) -> bool {
    match pool.try_take() {
        Some(mut object) => {
            touch(&mut object);
            true
        }
        None => false,
    }
}

/// Takes all [`MAX_SIZE`] objects at once and gives them back, so that they
/// exist before timing starts.
fn warm<P: Pool>(name: &str, pool: &P) {
    let mut held = Vec::with_capacity(MAX_SIZE);
    while held.len() < MAX_SIZE {
        match pool.try_take() {
            Some(object) => held.push(object),
            None => break,
        }
    }
    assert_eq!(
        held.len(),
        MAX_SIZE,
        "{name}: could take only {} of {MAX_SIZE} objects at once",
        held.len()
    );
    for object in &mut held {
        touch(object);
    }
    drop(held);
}

/// Takes and the takes that found no object, across the current benchmark's runs.
static ATTEMPTS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);

/// `iters` operations on the calling thread; returns how many found no object.
#[inline(never)]
fn run_loop<P: Pool>(pool: &P, iters: u64) -> u64 {
    let mut misses = 0;
    for _ in 0..iters {
        misses += u64::from(!cycle(pool));
    }
    misses
}

/// Runs `iters` operations on each of `threads` threads; returns the wall
/// time from the first thread starting to the last finishing.
fn timed<P: Pool>(pool: &P, threads: usize, iters: u64) -> Duration {
    let (elapsed, misses) = run_threads(threads, |_| run_loop(pool, iters));
    ATTEMPTS.fetch_add(iters * threads as u64, Ordering::Relaxed);
    MISSES.fetch_add(misses, Ordering::Relaxed);
    elapsed
}

/// Warms and benchmarks one contender; warns if any take found no object.
fn contender<P: Pool>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    threads: usize,
    pool: &P,
) {
    warm(name, pool);
    ATTEMPTS.store(0, Ordering::Relaxed);
    MISSES.store(0, Ordering::Relaxed);
    group.bench_function(name, |b| {
        b.iter_custom(|iters| timed(pool, threads, iters));
    });
    let attempts = ATTEMPTS.load(Ordering::Relaxed);
    let misses = MISSES.load(Ordering::Relaxed);
    if misses > 0 {
        eprintln!(
            "{name:>24}: WARNING: {misses} of {attempts} takes ({:.3}%) found no object",
            100.0 * misses as f64 / attempts as f64
        );
    }
}

fn group_name(threads: usize) -> String {
    let unit = if threads == 1 { "thread" } else { "threads" };
    format!("object_pool/{threads}-{unit}")
}

fn object_pool(c: &mut Criterion) {
    for threads in thread_counts() {
        let mut group = c.benchmark_group(group_name(threads));
        group.throughput(Throughput::Elements(threads as u64));

        let pool = sidejob::ObjectPool::builder(Counter)
            .max_size(MAX_SIZE)
            .build()
            .expect("sidejob pool");
        contender(&mut group, "sidejob", threads, &pool);
        drop(pool);

        let pool = deadpool::unmanaged::Pool::<u64>::from(vec![0; MAX_SIZE]);
        contender(&mut group, "deadpool-unmanaged", threads, &pool);
        drop(pool);

        let pool = r2d2::Pool::builder()
            .max_size(MAX_SIZE as u32)
            .min_idle(Some(MAX_SIZE as u32))
            .test_on_check_out(false)
            .max_lifetime(None)
            .idle_timeout(None)
            .build(Connector)
            .expect("r2d2 pool");
        contender(&mut group, "r2d2", threads, &pool);
        drop(pool);

        let pool = object_pool::Pool::new(MAX_SIZE, || 0u64);
        contender(&mut group, "object-pool", threads, &pool);
        drop(pool);

        let pool = MutexVec::new(MAX_SIZE);
        contender(&mut group, "mutex-vec", threads, &pool);
        drop(pool);

        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = object_pool
}
criterion_main!(benches);
