//! Priorities (#28): a request of priority `p` is admitted only if usage
//! after it stays at most ⌊share(p) × capacity⌋. Exact for one caller at a
//! time, strict under concurrency, following `set_capacity`, and counted
//! per priority.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;

use sidejob::{Priority, Resource};

fn resource(capacity: usize, shards: usize, normal: f64, sheddable: f64) -> Resource {
    Resource::builder()
        .capacity(capacity)
        .shards(shards)
        .share(Priority::Normal, normal)
        .share(Priority::Sheddable, sheddable)
        .build()
        .unwrap()
}

/// Takes permits of `priority` until the first refusal.
fn fill(resource: &Resource, priority: Priority) -> Vec<sidejob::Permit<'_>> {
    std::iter::from_fn(|| resource.try_acquire_with(priority).ok()).collect()
}

#[test]
fn a_lone_caller_gets_exactly_its_share_before_its_first_refusal() {
    for shards in [1, 2, 3, 8] {
        for capacity in [1, 2, 3, 7, 10, 64] {
            for (normal, sheddable) in [(1.0, 0.5), (0.9, 0.3), (0.75, 0.75), (1.0, 1.0)] {
                let resource = resource(capacity, shards, normal, sheddable);
                let floor = |share: f64| (share * capacity as f64).floor() as usize;
                let shed = fill(&resource, Priority::Sheddable);
                assert_eq!(
                    shed.len(),
                    floor(sheddable),
                    "{capacity}/{shards} {sheddable}"
                );
                let normal_held = fill(&resource, Priority::Normal);
                assert_eq!(shed.len() + normal_held.len(), floor(normal));
                let critical = fill(&resource, Priority::Critical);
                assert_eq!(shed.len() + normal_held.len() + critical.len(), capacity);
                // Released in any order, the shares hold again.
                drop(normal_held);
                drop(critical);
                let more = fill(&resource, Priority::Sheddable);
                assert!(more.is_empty(), "sheddable is at its share already");
            }
        }
    }
}

#[test]
fn free_slots_left_on_shards_by_normal_traffic_count_for_a_share() {
    // Normal permits spread capacity over the shards and leave it there as
    // free slots when released; a sheddable caller still gets its whole
    // share, not just what the reserve held.
    let resource = resource(8, 4, 1.0, 0.5);
    let spread: Vec<_> = (0..8)
        .map(|start| resource.try_acquire_from(start).unwrap())
        .collect();
    drop(spread);
    assert_eq!(fill(&resource, Priority::Sheddable).len(), 4);
}

#[test]
fn shares_follow_set_capacity() {
    let resource = resource(10, 2, 1.0, 0.5);
    assert_eq!(fill(&resource, Priority::Sheddable).len(), 5);
    resource.set_capacity(4).unwrap();
    assert_eq!(fill(&resource, Priority::Sheddable).len(), 2);
    resource.set_capacity(20).unwrap();
    assert_eq!(fill(&resource, Priority::Sheddable).len(), 10);
}

#[test]
fn refusals_are_counted_per_priority() {
    let resource = resource(2, 2, 0.5, 0.5);
    let _normal = resource.try_acquire().unwrap();
    assert!(resource.try_acquire().is_err());
    assert!(resource.try_acquire_with(Priority::Sheddable).is_err());
    assert!(resource.try_acquire_with(Priority::Sheddable).is_err());
    let _critical = resource.try_acquire_with(Priority::Critical).unwrap();
    assert!(resource.try_acquire_with(Priority::Critical).is_err());
    let stats = resource.stats();
    let by = stats.rejected_by_priority;
    assert_eq!((by.critical, by.normal, by.sheddable), (1, 1, 2));
    assert_eq!(stats.rejected, 4);
    assert_eq!(stats.accepted, 2);
}

#[test]
fn a_share_is_strict_under_concurrency() {
    const THREADS: usize = 8;
    const ATTEMPTS: usize = 20_000;
    let capacity = 10;
    let resource = resource(capacity, 4, 0.8, 0.4);
    let sheddable = AtomicUsize::new(0);
    let normal_or_less = AtomicUsize::new(0);
    let start = Barrier::new(THREADS);
    thread::scope(|scope| {
        for index in 0..THREADS {
            let (resource, sheddable, normal_or_less, start) =
                (&resource, &sheddable, &normal_or_less, &start);
            scope.spawn(move || {
                let priority = Priority::ALL[index % 3];
                start.wait();
                for _ in 0..ATTEMPTS {
                    let Ok(permit) = resource.try_acquire_with(priority) else {
                        continue;
                    };
                    // Counted after the acquire and uncounted before the
                    // release, so each gauge is at most the real figure.
                    let shed = priority == Priority::Sheddable;
                    if shed {
                        let now = sheddable.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= 4, "{now} sheddable holders, share 4");
                    }
                    if priority != Priority::Critical {
                        let now = normal_or_less.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= 8, "{now} normal and sheddable holders, share 8");
                        normal_or_less.fetch_sub(1, Ordering::SeqCst);
                    }
                    if shed {
                        sheddable.fetch_sub(1, Ordering::SeqCst);
                    }
                    drop(permit);
                }
            });
        }
    });
    let stats = resource.stats();
    assert_eq!(stats.usage, 0);
    assert_eq!(stats.accepted + stats.rejected, (THREADS * ATTEMPTS) as u64);
    // Afterwards, one caller gets exactly the shares again.
    assert_eq!(fill(&resource, Priority::Sheddable).len(), 4);
}
