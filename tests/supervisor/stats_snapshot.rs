//! A stats snapshot is of one moment: children spawning and ending on
//! other threads never make `live + finished` differ from `spawned` (a
//! child that ended between the read of the live sets and the read of the
//! counters was counted in both; found by the adversarial review).

use std::sync::Arc;

use sidejob::Supervisor;

use crate::support::snapshots::assert_every_snapshot_whole;

#[test]
fn live_plus_finished_is_spawned_in_every_snapshot_under_churn() {
    let supervisor = Arc::new(Supervisor::builder().capacity(8).shards(2).build().unwrap());
    let churned = Arc::clone(&supervisor);
    assert_every_snapshot_whole(
        move || {
            if let Ok(child) = churned.spawn(|_| ()) {
                child.join().unwrap();
            }
        },
        || {
            let stats = supervisor.stats();
            (stats.spawned, stats.live as u64, stats.finished)
        },
    );
}
