//! What the benchmarks share: criterion's settings, which thread counts to
//! run, the timing of a multi-thread run, and the quantiles of the paired
//! modes. Not every bench uses every item.

#![allow(dead_code)]

use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::Criterion;

/// Criterion's settings for every bench: 1 s warm-up, 3 s measurement,
/// 30 samples (the command line can override them as usual).
pub fn criterion_config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
}

/// Runs `work(thread)` on each of `threads` threads (on the calling thread
/// when there is one), started together at a barrier; returns the wall time
/// from the first start to the last finish, and the sum of what `work`
/// returned.
pub fn run_threads<F>(threads: usize, work: F) -> (Duration, u64)
where
    F: Fn(usize) -> u64 + Sync,
{
    if threads == 1 {
        let start = Instant::now();
        let total = work(0);
        return (start.elapsed(), total);
    }
    let barrier = Barrier::new(threads);
    let spans: Vec<(Instant, Instant, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let (barrier, work) = (&barrier, &work);
                scope.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let total = work(thread);
                    (start, Instant::now(), total)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("bench thread panicked"))
            .collect()
    });
    let first = spans.iter().map(|span| span.0).min().expect("threads > 1");
    let last = spans.iter().map(|span| span.1).max().expect("threads > 1");
    (last - first, spans.iter().map(|span| span.2).sum())
}

/// Thread counts: `SIDEJOB_BENCH_THREADS` (comma-separated), else 1 and #CPUs.
pub fn thread_counts() -> Vec<usize> {
    let mut counts: Vec<usize> = match std::env::var("SIDEJOB_BENCH_THREADS") {
        Ok(list) => list
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| match item.parse::<usize>() {
                Ok(count) if count > 0 => count,
                _ => panic!("SIDEJOB_BENCH_THREADS: `{item}` is not a positive thread count"),
            })
            .collect(),
        Err(_) => vec![1, num_cpus::get()],
    };
    counts.sort_unstable();
    counts.dedup();
    assert!(
        !counts.is_empty(),
        "SIDEJOB_BENCH_THREADS lists no thread count"
    );
    counts
}

/// The `p`-quantile (0 to 1) of `values`, nearest rank below.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

/// The per-round ratios of `times` to `baseline`, a paired mode's
/// contender against its baseline in the same rounds.
pub fn round_ratios(times: &[f64], baseline: &[f64]) -> Vec<f64> {
    times
        .iter()
        .zip(baseline)
        .map(|(t, base)| t / base)
        .collect()
}

/// The rounds of a bench's paired mode, from `SIDEJOB_BENCH_PAIRED`; `None`
/// when it is unset, and the bench runs criterion instead.
///
/// # Panics
///
/// If it is set to anything but a number of rounds above 0.
pub fn paired_rounds() -> Option<usize> {
    let rounds = std::env::var("SIDEJOB_BENCH_PAIRED").ok()?;
    match rounds.parse::<usize>() {
        Ok(rounds) if rounds > 0 => Some(rounds),
        _ => panic!("SIDEJOB_BENCH_PAIRED: `{rounds}` is not a number of rounds above 0"),
    }
}

/// A bench with a paired mode: runs `paired(rounds)` when
/// `SIDEJOB_BENCH_PAIRED` is set, else the criterion `benches` and their
/// summary.
pub fn paired_or_criterion(paired: fn(usize), benches: fn()) {
    match paired_rounds() {
        Some(rounds) => paired(rounds),
        None => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
