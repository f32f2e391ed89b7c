//! The tight mode: the roomy fast path timed over long loops.
//!
//! `SIDEJOB_BENCH_MODE=tight`: `try_acquire` + drop on a roomy `Resource`
//! (capacity 1024, nothing refused), each timing a loop of [`OPS`]
//! operations with the clock read once at each end: under 0.001 ns of
//! overhead per operation, where criterion's per-iteration cost hides a few
//! ns. Beside it the floor (each thread its own padded CAS counter) and a
//! leased resource (`CapacityLease::set_until`, a fleet's grant). At 1 and 2
//! threads (or `SIDEJOB_BENCH_THREADS`), contenders alternate for
//! [`ROUNDS`] rounds, and the median round is kept. Reported: ns per
//! operation per thread, millions of operations per second in all, the
//! ratio to the floor, and then the targets of issue #40: one thread within
//! 1.3x the floor, 2 threads at least 1.8x one thread's throughput, leased
//! within 1.1x plain.

use std::time::{Duration, Instant};

use super::common::{quantile, run_threads, thread_counts};
use super::{run_loop, Floor, Limiter, ROOMY};

/// Operations per thread in one timed loop.
const OPS: u64 = 2_000_000;

/// Rounds per contender, alternated.
const ROUNDS: usize = 15;

/// Nanoseconds per operation per thread, each round's.
fn round<L: Limiter>(limiter: &L, threads: usize) -> f64 {
    let (elapsed, admitted) = run_threads(threads, |thread| run_loop(limiter, thread, OPS));
    assert_eq!(
        admitted,
        OPS * threads as u64,
        "a roomy attempt was refused"
    );
    elapsed.as_nanos() as f64 / OPS as f64
}

/// Runs the thread counts and prints one line per contender, then the
/// targets.
pub fn run() {
    println!("tight: {OPS} operations per timed loop, median of {ROUNDS} alternating rounds; ns per operation per thread, M ops/s in all");
    println!(
        "{:>7} {:>16} | {:>7} {:>9} | {:>8}",
        "threads", "contender", "ns/op", "M ops/s", "x floor"
    );
    let counts: Vec<usize> = if std::env::var("SIDEJOB_BENCH_THREADS").is_ok() {
        thread_counts()
    } else {
        vec![1, 2]
    };
    let mut plain_at = Vec::new();
    let mut worst_leased: f64 = 0.0;
    let mut one_thread_floor = None;
    for &threads in &counts {
        let plain = sidejob::Resource::new(ROOMY);
        let leased = std::sync::Arc::new(sidejob::Resource::new(ROOMY));
        leased
            .lease_capacity()
            .and_then(|owner| {
                owner.set_until(ROOMY, Instant::now() + Duration::from_secs(24 * 3600), 0)
            })
            .expect("a valid capacity");
        let floor = Floor::new(threads, ROOMY);
        let mut times: [Vec<f64>; 3] = Default::default();
        for _ in 0..ROUNDS {
            times[0].push(round(&floor, threads));
            times[1].push(round(&plain, threads));
            times[2].push(round(&*leased, threads));
        }
        let medians: Vec<f64> = times.iter().map(|t| quantile(t, 0.5)).collect();
        for (name, ns) in ["floor", "sidejob", "sidejob-leased"].iter().zip(&medians) {
            println!(
                "{threads:>7} {name:>16} | {ns:>7.2} {:>9.1} | {:>8.2}",
                threads as f64 / ns * 1e3,
                ns / medians[0],
            );
        }
        plain_at.push((threads, medians[1]));
        worst_leased = worst_leased.max(medians[2] / medians[1]);
        if threads == 1 {
            one_thread_floor = Some(medians[1] / medians[0]);
        }
    }
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    let at = |n: usize| plain_at.iter().find(|row| row.0 == n).map(|row| row.1);
    if let Some(ratio) = one_thread_floor {
        println!(
            "targets: one thread / floor: {ratio:.2} (<= 1.3: {})",
            verdict(ratio <= 1.3)
        );
    }
    if let (Some(one), Some(two)) = (at(1), at(2)) {
        // Throughput in all: threads / time per operation per thread.
        let scaling = (2.0 / two) / (1.0 / one);
        println!(
            "targets: 2 threads' throughput / one thread's: {scaling:.2} (>= 1.8: {})",
            verdict(scaling >= 1.8)
        );
    }
    println!(
        "targets: leased / plain, worst: {worst_leased:.2} (<= 1.1: {})",
        verdict(worst_leased <= 1.1)
    );
}
