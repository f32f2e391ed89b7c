//! A stats snapshot is of one moment: tasks admitted and ending on other
//! threads never make `live + finished` differ from `spawned`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::TaskSupervisor;

#[test]
fn live_plus_finished_is_spawned_in_every_snapshot_under_churn() {
    let supervisor = Arc::new(
        TaskSupervisor::builder()
            .capacity(8)
            .shards(2)
            .build()
            .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let churners: Vec<_> = (0..2)
        .map(|_| {
            let (supervisor, stop) = (Arc::clone(&supervisor), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // Admitted, then dropped unfinished: it ends at once.
                    drop(supervisor.try_track(|_| async {}));
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_millis(700);
    let (mut snapshots, mut torn) = (0u64, Vec::new());
    while Instant::now() < deadline {
        let stats = supervisor.stats();
        snapshots += 1;
        if stats.live as u64 + stats.finished != stats.spawned && torn.len() < 5 {
            torn.push((stats.spawned, stats.live, stats.finished));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for churner in churners {
        churner.join().unwrap();
    }
    assert!(
        torn.is_empty(),
        "{} snapshots; torn (spawned, live, finished): {torn:?}",
        snapshots
    );
    let stats = supervisor.stats();
    assert_eq!((stats.live, stats.finished), (0, stats.spawned));
}
