//! The matrix mode: goodput and refusal latency where capacity is tight.
//!
//! `SIDEJOB_BENCH_MODE=matrix`: for each thread count (1, 2, 4, 8 and the
//! number of CPUs, or `SIDEJOB_BENCH_THREADS`) and each capacity (threads/2,
//! threads, 4 x threads, 64 x threads), each thread attempts admissions as
//! fast as it can for `SIDEJOB_BENCH_SECONDS` (default 0.5) per contender;
//! an admitted permit is held for [`HOLD_SPINS`] spin-loop hints, then
//! released. Reported per contender (sidejob's `Resource`, one shared CAS
//! counter, tokio's `Semaphore`): goodput (admitted per second, millions)
//! and the median latency of a refused attempt (one attempt in
//! [`SAMPLE_EVERY`] is timed; the cost of reading the clock is measured and
//! taken off). Then the targets of issue #28 are checked and printed:
//! sidejob's goodput at least the best other's in every cell, at capacity
//! == threads at least 0.8 of its own at 64 x threads, and its refusal
//! median within 1.5 x the shared counter's.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::cas_admit;

/// Spin-loop hints an admitted permit is held for.
pub const HOLD_SPINS: u32 = 8;

/// One attempt in this many is timed.
const SAMPLE_EVERY: u64 = 16;

/// A limiter as the matrix drives it: try, and hold what was admitted.
pub trait Gate: Sync {
    /// Tries to admit one; if admitted, holds it for `HOLD_SPINS` hints
    /// and releases it. Returns whether it was admitted.
    fn attempt(&self) -> bool;
}

impl Gate for sidejob::Resource {
    #[inline]
    fn attempt(&self) -> bool {
        held(self.try_acquire())
    }
}

impl Gate for tokio::sync::Semaphore {
    #[inline]
    fn attempt(&self) -> bool {
        held(self.try_acquire())
    }
}

/// Holds an admitted permit for `HOLD_SPINS` hints and releases it;
/// whether one was admitted.
#[inline]
fn held<P, E>(attempt: Result<P, E>) -> bool {
    match attempt {
        Ok(permit) => {
            hold();
            drop(permit);
            true
        }
        Err(_) => false,
    }
}

/// One shared counter: load, check, CAS; `fetch_sub` to release.
pub struct SharedCounter {
    pub used: AtomicUsize,
    pub capacity: usize,
}

impl Gate for SharedCounter {
    #[inline]
    fn attempt(&self) -> bool {
        if cas_admit(&self.used, self.capacity) {
            hold();
            self.used.fetch_sub(1, Ordering::Release);
            true
        } else {
            false
        }
    }
}

#[inline]
fn hold() {
    for _ in 0..HOLD_SPINS {
        std::hint::spin_loop();
    }
}

/// What one contender did in one cell.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    /// Admitted per second, in millions.
    pub goodput: f64,
    /// Median refusal, in ns (`None` if nothing was refused).
    pub refusal_p50: Option<f64>,
    /// Attempts per second, admitted or refused, in millions.
    pub attempts: f64,
}

/// What reading the clock twice costs, in ns: taken off each timed refusal.
pub fn clock_cost() -> f64 {
    let mut samples: Vec<u64> = (0..10_000)
        .map(|_| {
            let start = Instant::now();
            black_box(());
            start.elapsed().as_nanos() as u64
        })
        .collect();
    samples.sort_unstable();
    samples[samples.len() / 2] as f64
}

/// Runs `gate` on `threads` threads for `duration`.
pub fn measure<G: Gate>(gate: &G, threads: usize, duration: Duration, clock: f64) -> Cell {
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    let results: Vec<(u64, u64, Histogram<u64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (stop, barrier) = (&stop, &barrier);
                scope.spawn(move || {
                    let mut refusals = Histogram::<u64>::new_with_bounds(1, 10_000_000, 3)
                        .expect("histogram bounds");
                    let mut admitted = 0u64;
                    let mut attempts = 0u64;
                    barrier.wait();
                    while !stop.load(Ordering::Relaxed) {
                        attempts += SAMPLE_EVERY;
                        for _ in 0..SAMPLE_EVERY - 1 {
                            admitted += u64::from(gate.attempt());
                        }
                        let start = Instant::now();
                        let ok = gate.attempt();
                        let took = start.elapsed().as_nanos() as u64;
                        if ok {
                            admitted += 1;
                        } else {
                            let _ = refusals.record(took.max(1));
                        }
                    }
                    (admitted, attempts, refusals)
                })
            })
            .collect();
        barrier.wait();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|handle| handle.join().expect("matrix thread panicked"))
            .collect()
    });
    let seconds = duration.as_secs_f64();
    let admitted: u64 = results.iter().map(|r| r.0).sum();
    let attempts: u64 = results.iter().map(|r| r.1).sum();
    let mut refusals = Histogram::<u64>::new_with_bounds(1, 10_000_000, 3).expect("bounds");
    for (_, _, histogram) in &results {
        refusals.add(histogram).expect("same bounds");
    }
    Cell {
        goodput: admitted as f64 / seconds / 1e6,
        refusal_p50: (!refusals.is_empty())
            .then(|| (refusals.value_at_quantile(0.5) as f64 - clock).max(0.0)),
        attempts: attempts as f64 / seconds / 1e6,
    }
}

/// The matrix's thread counts: `SIDEJOB_BENCH_THREADS`, else 1, 2, 4, 8
/// and the number of CPUs, each at most the number of CPUs.
fn thread_counts() -> Vec<usize> {
    if std::env::var("SIDEJOB_BENCH_THREADS").is_ok() {
        return super::common::thread_counts();
    }
    let cpus = num_cpus::get();
    let mut counts: Vec<usize> = [1, 2, 4, 8, cpus]
        .into_iter()
        .filter(|&t| t <= cpus)
        .collect();
    counts.dedup();
    counts
}

pub fn seconds() -> Duration {
    let seconds: f64 = std::env::var("SIDEJOB_BENCH_SECONDS")
        .ok()
        .map(|s| {
            s.parse()
                .expect("SIDEJOB_BENCH_SECONDS: a number of seconds")
        })
        .unwrap_or(0.5);
    Duration::from_secs_f64(seconds)
}

fn fmt_ns(ns: Option<f64>) -> String {
    ns.map_or_else(|| "-".to_owned(), |ns| format!("{ns:.0}"))
}

/// Runs the matrix and prints it, one line per cell, then the targets.
pub fn run() {
    let duration = seconds();
    let clock = clock_cost();
    println!(
        "matrix: cpus={} hold={HOLD_SPINS} spins seconds={:.2} clock={clock:.0} ns; goodput in M admitted/s, refusal p50 in ns",
        num_cpus::get(),
        duration.as_secs_f64()
    );
    println!(
        "{:>7} {:>8} | {:>8} {:>8} {:>8} | {:>7} {:>7} {:>7} | {:>6} {:>6}",
        "threads",
        "capacity",
        "sidejob",
        "atomic",
        "tokio",
        "p50 sj",
        "p50 at",
        "p50 tk",
        "gp/bst",
        "p50/at"
    );
    let mut worst_goodput = f64::INFINITY;
    let mut worst_refusal: f64 = 0.0;
    let mut worst_tight = f64::INFINITY;
    for threads in thread_counts() {
        let mut roomy_goodput = None;
        let mut tight_goodput = None;
        for capacity in [(threads / 2).max(1), threads, 4 * threads, 64 * threads] {
            let resource = sidejob::Resource::new(capacity);
            let ours = measure(&resource, threads, duration, clock);
            let counter = SharedCounter {
                used: AtomicUsize::new(0),
                capacity,
            };
            let atomic = measure(&counter, threads, duration, clock);
            let semaphore = tokio::sync::Semaphore::new(capacity);
            let tokio = measure(&semaphore, threads, duration, clock);
            let best = atomic.goodput.max(tokio.goodput);
            let goodput_ratio = ours.goodput / best;
            let refusal_ratio = match (ours.refusal_p50, atomic.refusal_p50) {
                (Some(ours), Some(theirs)) => Some(ours.max(1.0) / theirs.max(1.0)),
                _ => None,
            };
            worst_goodput = worst_goodput.min(goodput_ratio);
            if let Some(ratio) = refusal_ratio {
                worst_refusal = worst_refusal.max(ratio);
            }
            if capacity == threads {
                tight_goodput = Some(ours.goodput);
            }
            if capacity == 64 * threads {
                roomy_goodput = Some(ours.goodput);
            }
            println!(
                "{threads:>7} {capacity:>8} | {:>8.2} {:>8.2} {:>8.2} | {:>7} {:>7} {:>7} | {:>6.2} {:>6}",
                ours.goodput,
                atomic.goodput,
                tokio.goodput,
                fmt_ns(ours.refusal_p50),
                fmt_ns(atomic.refusal_p50),
                fmt_ns(tokio.refusal_p50),
                goodput_ratio,
                refusal_ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}")),
            );
        }
        if let (Some(tight), Some(roomy)) = (tight_goodput, roomy_goodput) {
            let ratio = tight / roomy;
            worst_tight = worst_tight.min(ratio);
            println!(
                "{threads:>7} threads: goodput at capacity == threads is {ratio:.2} of that at 64 x threads"
            );
        }
    }
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    println!(
        "targets: goodput >= best other in every cell: worst {worst_goodput:.2} ({}); capacity == threads >= 0.8 of 64 x threads: worst {worst_tight:.2} ({}); refusal p50 <= 1.5 x one counter: worst {worst_refusal:.2} ({})",
        verdict(worst_goodput >= 1.0),
        verdict(worst_tight >= 0.8),
        verdict(worst_refusal <= 1.5),
    );
}
