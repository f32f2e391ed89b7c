//! Capacity is spread exactly: shard limits sum to the capacity and differ by
//! at most one, including capacity 0 and more shards than capacity.

use sidejob::{Overload, Resource};

fn limits(resource: &Resource) -> Vec<usize> {
    resource.stats().shards.iter().map(|s| s.limit).collect()
}

#[test]
fn limits_sum_to_capacity_and_differ_by_at_most_one() {
    for shards in 1..=12 {
        for capacity in 0..=50 {
            let resource = Resource::builder()
                .capacity(capacity)
                .shards(shards)
                .build()
                .unwrap();
            let limits = limits(&resource);
            assert_eq!(limits.len(), shards);
            assert_eq!(limits.iter().sum::<usize>(), capacity);
            let spread = limits.iter().max().unwrap() - limits.iter().min().unwrap();
            assert!(spread <= 1, "{capacity} over {shards}: {limits:?}");
            assert_eq!(resource.capacity(), capacity);
        }
    }
}

#[test]
fn the_remainder_is_spread_not_dropped() {
    let resource = Resource::builder().capacity(10).shards(4).build().unwrap();
    assert_eq!(limits(&resource), [3, 3, 2, 2]);
    let held: Vec<_> = (0..10).map(|_| resource.try_acquire().unwrap()).collect();
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    drop(held);
}

#[test]
fn capacity_zero_is_a_closed_gate() {
    let resource = Resource::builder().capacity(0).shards(3).build().unwrap();
    for start in 0..3 {
        assert_eq!(resource.try_acquire_from(start).unwrap_err(), Overload);
    }
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    let stats = resource.stats();
    assert_eq!((stats.accepted, stats.rejected), (0, 4));
}

#[test]
fn more_shards_than_capacity_still_admits_the_whole_capacity() {
    let resource = Resource::builder().capacity(2).shards(16).build().unwrap();
    assert_eq!(limits(&resource).iter().filter(|&&l| l == 0).count(), 14);
    // Whatever the start, the probe finds the two shards with room and
    // moves a slot home.
    let a = resource.try_acquire_from(9).unwrap();
    let b = resource.try_acquire_from(15).unwrap();
    assert_eq!((a.shard(), b.shard()), (9, 15));
    assert!(resource.try_acquire_from(3).is_err());
    let limits = limits(&resource);
    assert_eq!(
        (limits[9], limits[15], limits.iter().sum::<usize>()),
        (1, 1, 2)
    );
}
