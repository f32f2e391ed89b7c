//! A stats snapshot is of one moment: tasks admitted and ending on other
//! threads never make `live + finished` differ from `spawned`.

use std::sync::Arc;

use sidejob::TaskSupervisor;

use crate::support::snapshots::assert_every_snapshot_whole;

#[test]
fn live_plus_finished_is_spawned_in_every_snapshot_under_churn() {
    let supervisor = Arc::new(
        TaskSupervisor::builder()
            .capacity(8)
            .shards(2)
            .build()
            .unwrap(),
    );
    let churned = Arc::clone(&supervisor);
    assert_every_snapshot_whole(
        // Admitted, then dropped unfinished: it ends at once.
        move || drop(churned.try_track(|_| async {})),
        || {
            let stats = supervisor.stats();
            (stats.spawned, stats.live as u64, stats.finished)
        },
    );
}
