//! Resizing at run time: growing admits at once, shrinking never revokes held
//! permits, and the shards' limits and the reserve always sum to the
//! capacity once the resources are quiet.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;

use sidejob::{Overload, Resource};

fn limits(resource: &Resource) -> Vec<usize> {
    resource.stats().shards.iter().map(|s| s.limit).collect()
}

/// The shards' limits plus the reserve: the capacity, when nothing is in
/// flight and no shrink's debt is unpaid.
fn accounted(resource: &Resource) -> i64 {
    limits(resource).iter().sum::<usize>() as i64 + resource.stats().reserve
}

#[test]
fn growing_admits_at_once() {
    let resource = Resource::builder().capacity(1).shards(3).build().unwrap();
    let _a = resource.try_acquire().unwrap();
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    resource.set_capacity(4).unwrap();
    assert_eq!(resource.stats().reserve, 3, "a grow goes to the reserve");
    assert_eq!(accounted(&resource), 4);
    let more: Vec<_> = (0..3).map(|_| resource.try_acquire().unwrap()).collect();
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    assert_eq!(resource.usage(), 4);
    drop(more);
}

#[test]
fn shrinking_never_revokes_and_refuses_until_under_the_new_capacity() {
    let resource = Resource::builder().capacity(6).shards(2).build().unwrap();
    let mut held: Vec<_> = (0..6).map(|_| resource.try_acquire().unwrap()).collect();
    resource.set_capacity(2).unwrap();
    assert_eq!(limits(&resource), [0, 0], "closed while usage is over");
    assert_eq!(resource.stats().reserve, -4, "the debt the releases pay");
    assert_eq!(resource.capacity(), 2);
    assert_eq!(resource.usage(), 6, "held permits are not revoked");
    // Refused while usage is at or above the new capacity...
    while resource.usage() > 1 {
        assert!(resource.try_acquire().is_err());
        held.pop();
    }
    // ...and admitted once usage is back under it.
    let _next = resource.try_acquire().expect("room under the new capacity");
    assert!(resource.try_acquire().is_err());
    drop(held);
    assert_eq!(accounted(&resource), 2);
}

#[test]
fn resizing_to_zero_closes_and_reopening_admits() {
    let resource = Resource::builder().capacity(3).shards(2).build().unwrap();
    resource.set_capacity(0).unwrap();
    assert!(resource.try_acquire().is_err());
    resource.set_capacity(3).unwrap();
    let held: Vec<_> = (0..3).map(|_| resource.try_acquire().unwrap()).collect();
    assert_eq!(held.len(), 3);
}

#[test]
fn concurrent_resizes_keep_the_bound_at_the_largest_capacity() {
    const THREADS: usize = 6;
    const MAX: usize = 5;
    let resource = Resource::builder().capacity(2).shards(3).build().unwrap();
    let holders = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let start = Barrier::new(THREADS + 1);
    thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                start.wait();
                while !done.load(Ordering::Relaxed) {
                    if let Ok(permit) = resource.try_acquire() {
                        let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= MAX, "{now} holders above every capacity");
                        holders.fetch_sub(1, Ordering::SeqCst);
                        drop(permit);
                    }
                }
            });
        }
        start.wait();
        for round in 0..20_000 {
            resource.set_capacity(round % (MAX + 1)).unwrap();
        }
        done.store(true, Ordering::Relaxed);
    });
    resource.set_capacity(4).unwrap();
    assert_eq!(resource.usage(), 0);
    assert_eq!(accounted(&resource), 4);
    let held: Vec<_> = (0..4).map(|_| resource.try_acquire().unwrap()).collect();
    assert!(resource.try_acquire().is_err());
    drop(held);
}

#[test]
fn a_capacity_the_shards_cannot_hold_is_an_error_and_changes_nothing() {
    let resource = Resource::builder().capacity(2).shards(2).build().unwrap();
    let held = resource.try_acquire().unwrap();
    let err = resource.set_capacity(usize::MAX).unwrap_err();
    assert_eq!(err.setting(), "capacity");
    assert!(err.reason().contains("above the maximum"), "{err}");
    assert_eq!(resource.capacity(), 2);
    let limits: Vec<usize> = resource.stats().shards.iter().map(|s| s.limit).collect();
    assert_eq!(limits, [1, 1]);
    let second = resource
        .try_acquire()
        .expect("the old capacity still admits");
    assert!(resource.try_acquire().is_err());
    drop((held, second));
}

#[test]
fn after_a_shrink_exactly_the_room_under_the_new_capacity_is_admitted() {
    // 8 held over 4 shards, shrunk to 4: while the held permits drain, an
    // acquirer gets exactly `capacity - usage` more, never a slot beyond.
    for order in [[0, 1, 2, 3], [3, 1, 0, 2], [2, 2, 0, 1]] {
        let resource = Resource::builder().capacity(8).shards(4).build().unwrap();
        let mut held: Vec<Vec<_>> = (0..4)
            .map(|shard| {
                (0..2)
                    .map(|_| resource.try_acquire_from(shard).unwrap())
                    .collect()
            })
            .collect();
        resource.set_capacity(4).unwrap();
        for shard in order.iter().chain(&order).copied() {
            if held[shard].pop().is_none() {
                continue;
            }
            let usage = resource.usage();
            let extra: Vec<_> = (0..8)
                .map_while(|start| resource.try_acquire_from(start).ok())
                .collect();
            assert_eq!(extra.len(), 4usize.saturating_sub(usage), "usage {usage}");
        }
        drop(held);
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 4);
        let all: Vec<_> = (0..4).map(|_| resource.try_acquire().unwrap()).collect();
        assert!(resource.try_acquire().is_err());
        drop(all);
    }
}

#[test]
fn acquirers_racing_a_drain_after_a_shrink_stay_under_the_new_capacity() {
    const ACQUIRERS: usize = 4;
    let resource = Resource::builder().capacity(8).shards(4).build().unwrap();
    let holders = AtomicUsize::new(0);
    let peak = AtomicUsize::new(0);
    let mut held: Vec<_> = (0..8)
        .map(|i| resource.try_acquire_from(i % 4).unwrap())
        .collect();
    holders.store(8, Ordering::SeqCst);
    resource.set_capacity(4).unwrap();
    let done = AtomicBool::new(false);
    let start = Barrier::new(ACQUIRERS + 1);
    thread::scope(|scope| {
        for _ in 0..ACQUIRERS {
            scope.spawn(|| {
                start.wait();
                while !done.load(Ordering::SeqCst) {
                    if let Ok(permit) = resource.try_acquire() {
                        // Counted after the acquire and uncounted before the
                        // release, so `holders` never exceeds real usage.
                        let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        holders.fetch_sub(1, Ordering::SeqCst);
                        drop(permit);
                    }
                }
            });
        }
        start.wait();
        while let Some(permit) = held.pop() {
            holders.fetch_sub(1, Ordering::SeqCst);
            drop(permit);
            for _ in 0..1000 {
                std::hint::spin_loop();
            }
        }
        done.store(true, Ordering::SeqCst);
    });
    assert!(peak.load(Ordering::SeqCst) <= 4, "peak {peak:?} above 4");
    assert_eq!(resource.usage(), 0);
    assert_eq!(accounted(&resource), 4);
}
