//! The shards mode: what a refusal costs as the shard count grows.
//!
//! `SIDEJOB_BENCH_MODE=shards`: for 2, 16, 64 and 256 shards (or
//! `SIDEJOB_BENCH_SHARDS`), a `Resource` of capacity 9 whose 8 held slots
//! sit on 8 different shards (on 2 shards, 4 on each), and 2 threads that
//! contend for the one free slot as the matrix's do: an admitted permit is
//! held for [`HOLD_SPINS`](super::matrix::HOLD_SPINS) spin-loop hints, a
//! refused thread tries again at once. Beside it, one shared CAS counter
//! with 8 of its 9 slots held. Reported per shard count: the refusal median
//! (one attempt in 16 timed, the two clock reads included: a refusal of one
//! counter costs less than they do, and taking them off would leave
//! ratios of noise), attempts per
//! second and goodput, for both; then the targets of issue #40: the refusal
//! median at 256 shards within 1.5x that at 16, and within 2x one
//! counter's.

use std::sync::atomic::AtomicUsize;

use super::matrix::{clock_cost, measure, seconds, Cell, SharedCounter};

/// Slots held for the whole run, each on its own shard where there are
/// enough shards.
const HELD: usize = 8;

/// The contending threads.
const THREADS: usize = 2;

/// The shard counts: `SIDEJOB_BENCH_SHARDS` (comma-separated), else 2, 16,
/// 64 and 256.
fn shard_counts() -> Vec<usize> {
    match std::env::var("SIDEJOB_BENCH_SHARDS") {
        Ok(list) => list
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("SIDEJOB_BENCH_SHARDS: comma-separated shard counts")
            })
            .collect(),
        Err(_) => vec![2, 16, 64, 256],
    }
}

fn p50(cell: &Cell) -> f64 {
    cell.refusal_p50.unwrap_or(f64::NAN)
}

/// Runs the shard counts and prints one line each, then the targets.
pub fn run() {
    let duration = seconds();
    let clock = clock_cost();
    println!(
        "shards: threads={THREADS} capacity={} held={HELD} seconds={:.2} clock={clock:.0} ns (included); refusal p50 in ns, attempts and goodput in M/s",
        HELD + 1,
        duration.as_secs_f64()
    );
    println!(
        "{:>6} | {:>8} {:>8} | {:>9} {:>9} | {:>8} {:>8} | {:>6}",
        "shards", "p50 sj", "p50 at", "tries sj", "tries at", "good sj", "good at", "p50/at"
    );
    let counter = SharedCounter {
        used: AtomicUsize::new(HELD),
        capacity: HELD + 1,
    };
    let mut rows = Vec::new();
    for shards in shard_counts() {
        let resource = sidejob::Resource::builder()
            .capacity(HELD + 1)
            .shards(shards)
            .build()
            .expect("a valid resource");
        let held: Vec<_> = (0..HELD)
            .map(|slot| {
                resource
                    .try_acquire_from(slot % shards)
                    .expect("a free slot to hold")
            })
            .collect();
        let ours = measure(&resource, THREADS, duration, 0.0);
        let atomic = measure(&counter, THREADS, duration, 0.0);
        drop(held);
        println!(
            "{shards:>6} | {:>8.0} {:>8.0} | {:>9.2} {:>9.2} | {:>8.2} {:>8.2} | {:>6.2}",
            p50(&ours),
            p50(&atomic),
            ours.attempts,
            atomic.attempts,
            ours.goodput,
            atomic.goodput,
            p50(&ours).max(1.0) / p50(&atomic).max(1.0),
        );
        rows.push((shards, ours, atomic));
    }
    let at = |n: usize| rows.iter().find(|row| row.0 == n);
    if let (Some(small), Some(large)) = (at(16), at(256)) {
        let growth = p50(&large.1).max(1.0) / p50(&small.1).max(1.0);
        let versus = p50(&large.1).max(1.0) / p50(&large.2).max(1.0);
        let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
        println!(
            "targets: refusal p50 at 256 shards / 16 shards: {growth:.2} (<= 1.5: {}); at 256 shards / one counter: {versus:.2} (<= 2: {})",
            verdict(growth <= 1.5),
            verdict(versus <= 2.0),
        );
    }
}
