//! Placement: an acquire lands on its home shard, whose free slots come
//! first; when it has none, a free slot moves home from home+1, home+2, ...
//! wrapping, each shard visited once; threads get stable homes spread
//! round-robin.

use std::collections::BTreeMap;
use std::thread;

use sidejob::Resource;

#[test]
fn slots_move_home_from_the_next_shards_in_order() {
    let resource = Resource::builder().capacity(4).shards(4).build().unwrap();
    let limits = |resource: &Resource| -> Vec<usize> {
        resource.stats().shards.iter().map(|s| s.limit).collect()
    };
    let mut held = Vec::new();
    let mut after = Vec::new();
    for _ in 0..4 {
        let permit = resource.try_acquire_from(2).unwrap();
        assert_eq!(permit.shard(), 2);
        held.push(permit);
        after.push(limits(&resource));
    }
    // Home's own slot, then one from shard 3, 0 and 1 in turn.
    assert_eq!(
        after,
        [[1, 1, 1, 1], [1, 1, 2, 0], [0, 1, 3, 0], [0, 0, 4, 0]]
    );
    assert!(resource.try_acquire_from(2).is_err());
}

#[test]
fn start_shards_wrap_modulo_the_shard_count() {
    let resource = Resource::builder().capacity(3).shards(3).build().unwrap();
    let _held = resource.try_acquire_from(4).unwrap();
    assert_eq!(_held.shard(), 1);
    assert_eq!(
        resource.try_acquire_from(usize::MAX).unwrap().shard(),
        usize::MAX % 3
    );
}

#[test]
fn each_thread_has_a_stable_home_and_threads_spread_evenly() {
    const SHARDS: usize = 4;
    const ROUNDS: usize = 5;
    let resource = Resource::builder()
        .capacity(1000)
        .shards(SHARDS)
        .build()
        .unwrap();
    // Threads started one after another draw consecutive numbers, so their
    // homes go round the shards. Each one acquires a few times: always home.
    let mut per_shard = BTreeMap::new();
    for _ in 0..SHARDS * ROUNDS {
        let home = thread::scope(|scope| {
            scope
                .spawn(|| {
                    let first = resource.try_acquire().unwrap().shard();
                    for _ in 0..10 {
                        assert_eq!(resource.try_acquire().unwrap().shard(), first);
                    }
                    first
                })
                .join()
                .unwrap()
        });
        *per_shard.entry(home).or_insert(0) += 1;
    }
    // Other tests in this binary may draw numbers concurrently, so allow a
    // little unevenness, but every shard must be some thread's home.
    assert_eq!(per_shard.len(), SHARDS, "{per_shard:?}");
    assert!(
        per_shard.values().all(|&n| n >= ROUNDS - 2),
        "{per_shard:?}"
    );
}
