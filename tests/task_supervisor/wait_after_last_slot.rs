//! `wait()` resolves only after the last child's slot is free (#27): a
//! child leaves its live set and frees its slot as one step, so once
//! `wait()` resolves, `count()` is 0 and stays 0 until a new child is
//! admitted. Two children end at once on two runtime workers, round after
//! round (before the fix, about one round in 3,000 found a slot still held).
#![cfg(feature = "tokio")]

use sidejob::TaskSupervisor;

/// Enough rounds to have caught the race several times over.
const ROUNDS: usize = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_wait_resolves_no_slot_is_held() {
    for round in 0..ROUNDS {
        let supervisor = TaskSupervisor::builder()
            .capacity(4)
            .shards(2)
            .build()
            .unwrap();
        let children: Vec<_> = (0..2)
            .map(|_| supervisor.try_spawn(|_| async {}).unwrap())
            .collect();
        supervisor.close();
        supervisor.wait().await;
        assert_eq!(
            supervisor.count(),
            0,
            "round {round}: a slot held after wait"
        );
        assert!(supervisor.which_children().is_empty());
        let stats = supervisor.stats();
        assert_eq!((stats.finished, stats.live), (2, 0), "round {round}");
        for child in children {
            child.await.unwrap();
        }
        assert_eq!(supervisor.count(), 0);
    }
}
