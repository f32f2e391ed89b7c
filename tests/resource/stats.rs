//! Counters: every attempt is counted exactly once, as accepted or rejected,
//! however many shards the probe visited.

use std::sync::Barrier;
use std::thread;

use sidejob::Resource;

#[test]
fn one_refusal_counts_once_however_many_shards_were_probed() {
    let resource = Resource::builder().capacity(0).shards(8).build().unwrap();
    for _ in 0..5 {
        assert!(resource.try_acquire_from(3).is_err());
    }
    let stats = resource.stats();
    assert_eq!((stats.accepted, stats.rejected), (0, 5));
    // Counted on the shard where the probe started.
    assert_eq!(stats.shards[3].rejected, 5);
}

#[test]
fn accepted_counts_per_shard_where_the_permit_came_from() {
    let resource = Resource::builder().capacity(2).shards(2).build().unwrap();
    let a = resource.try_acquire_from(0).unwrap();
    let b = resource.try_acquire_from(1).unwrap();
    let c = resource.try_acquire_from(0); // shard 0 is full, and so is 1
    assert!(c.is_err());
    drop(b);
    // Capacity has been scarce since the refusal: shard 1's freed slot went
    // to the reserve, and an acquire from 0 leases it there.
    let d = resource.try_acquire_from(0).unwrap();
    assert_eq!(d.shard(), 0);
    let stats = resource.stats();
    assert_eq!(stats.shards[0].accepted, 2);
    assert_eq!(stats.shards[1].accepted, 1);
    assert_eq!((stats.shards[0].usage, stats.shards[1].usage), (2, 0));
    assert_eq!((stats.shards[0].limit, stats.shards[1].limit), (2, 0));
    assert_eq!((stats.shards[0].rejected, stats.shards[1].rejected), (1, 0));
    assert_eq!(stats.usage, 2);
    let (a, b) = (a, d);
    drop((a, b));
    let stats = resource.stats();
    assert_eq!((stats.usage, stats.accepted, stats.rejected), (0, 3, 1));
}

#[test]
fn accepted_plus_rejected_equals_attempts_under_concurrency() {
    const THREADS: usize = 8;
    const ATTEMPTS: u64 = 10_000;
    let resource = Resource::builder().capacity(3).shards(4).build().unwrap();
    let start = Barrier::new(THREADS);
    let admitted: u64 = thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    (0..ATTEMPTS)
                        .filter(|_| resource.try_acquire().is_ok())
                        .count() as u64
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let stats = resource.stats();
    assert_eq!(stats.accepted, admitted);
    assert_eq!(stats.accepted + stats.rejected, THREADS as u64 * ATTEMPTS);
    assert_eq!(
        stats.shards.iter().map(|s| s.accepted).sum::<u64>(),
        stats.accepted
    );
    assert_eq!(stats.usage, 0);
}

/// A reader of the figures beside a thread that grows and shrinks the
/// capacity without pause: every read pairs the capacity with its own
/// reserve, so the one permit held reads as usage 1 each time, never the
/// slots a resize had moved on one side and not yet on the other.
#[test]
fn figures_read_during_resizes_count_the_permits_held() {
    const READS: usize = 200_000;
    let resource = Resource::builder().capacity(2).shards(2).build().unwrap();
    let _held = resource.try_acquire().unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let start = Barrier::new(2);
    thread::scope(|scope| {
        scope.spawn(|| {
            start.wait();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                resource.set_capacity(3).unwrap();
                resource.set_capacity(2).unwrap();
            }
        });
        start.wait();
        for _ in 0..READS {
            let stats = resource.stats();
            let leased: i64 = stats.shards.iter().map(|s| s.limit as i64).sum();
            let pair = (stats.usage, leased + stats.reserve == stats.capacity as i64);
            if pair != (1, true) {
                done.store(true, std::sync::atomic::Ordering::Relaxed);
                panic!("a read off a resize half done: {stats:?}");
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}
