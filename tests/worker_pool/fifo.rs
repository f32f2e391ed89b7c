//! Each worker handles its mailbox in FIFO order, and a request goes to the
//! first shard with room in probe order (home first).

use crate::support;
use sidejob::WorkerPool;
use support::workers::{Harness, Job};

#[test]
fn one_worker_handles_its_mailbox_in_order() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(64)
        .shards(1)
        .build(harness.factory())
        .unwrap();
    pool.cast(Job::Wait(0)).unwrap();
    harness.started.recv().unwrap();
    for n in 1..50 {
        pool.cast(Job::Run(n)).unwrap();
    }
    harness.open(1);
    pool.shutdown();
    let order: Vec<u32> = harness.logged().into_iter().map(|(_, n)| n).collect();
    assert_eq!(order, (0..50).collect::<Vec<_>>());
}

#[test]
fn requests_fill_the_home_shard_then_the_next_in_order() {
    let harness = Harness::new();
    let pool = WorkerPool::builder()
        .capacity(6)
        .shards(3)
        .build(harness.factory())
        .unwrap();
    // Hold every worker at the gate, so nothing leaves a mailbox.
    for n in 0..6 {
        pool.cast(Job::Wait(n)).unwrap();
    }
    assert!(pool.cast(Job::Run(99)).is_err());
    let per_shard: Vec<usize> = pool.stats().shards.iter().map(|s| s.usage).collect();
    assert_eq!(per_shard, [2, 2, 2]);
    harness.open(6);
    pool.shutdown();
    let log = harness.logged();
    // One thread sent them all: its home shard got the first two, then the
    // probe moved on shard by shard, wrapping.
    let home = log.iter().find(|(_, n)| *n == 0).unwrap().0;
    for (shard, n) in &log {
        assert_eq!(
            *shard,
            (home + *n as usize / 2) % 3,
            "job {n} on shard {shard}"
        );
    }
    // And each shard ran its own jobs in the order they were sent.
    for shard in 0..3 {
        let jobs: Vec<u32> = log
            .iter()
            .filter(|(s, _)| *s == shard)
            .map(|(_, n)| *n)
            .collect();
        assert!(
            jobs.windows(2).all(|w| w[0] < w[1]),
            "shard {shard}: {jobs:?}"
        );
    }
}
