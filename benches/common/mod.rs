//! What the benchmarks share: which thread counts to run, and the quantiles
//! of the paired modes. Not every bench uses every item.

#![allow(dead_code)]

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
