//! Churn against snapshots: threads spawn and end children while the test
//! reads a supervisor's stats, which must be of one moment every time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// For 700 ms, two threads run `churn` in a loop (a child admitted and
/// ended) while this one reads `counts` (spawned, live, finished) as fast
/// as it can; fails listing the first torn reads, where live + finished
/// differed from spawned. Then checks that everything ended.
pub fn assert_every_snapshot_whole(
    churn: impl Fn() + Send + Sync + 'static,
    counts: impl Fn() -> (u64, u64, u64),
) {
    let churn = Arc::new(churn);
    let stop = Arc::new(AtomicBool::new(false));
    let churners: Vec<_> = (0..2)
        .map(|_| {
            let (churn, stop) = (Arc::clone(&churn), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    churn();
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_millis(700);
    let (mut snapshots, mut torn) = (0u64, Vec::new());
    while Instant::now() < deadline {
        let (spawned, live, finished) = counts();
        snapshots += 1;
        if live + finished != spawned && torn.len() < 5 {
            torn.push((spawned, live, finished));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for churner in churners {
        churner.join().unwrap();
    }
    assert!(
        torn.is_empty(),
        "{snapshots} snapshots; torn (spawned, live, finished): {torn:?}"
    );
    let (spawned, live, finished) = counts();
    assert_eq!((live, finished), (0, spawned));
}
