//! What the scaling benchmarks share: which thread counts to run.

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
