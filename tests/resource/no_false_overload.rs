//! No false overload: one thread can take the whole capacity, permit after
//! permit, wherever the permits come from, and is refused only when every
//! shard is full.

use sidejob::{Overload, Resource};

#[test]
fn one_thread_takes_the_whole_capacity_from_any_start() {
    for shards in 1..=8 {
        for capacity in 0..=20 {
            for start in 0..shards {
                let resource = Resource::builder()
                    .capacity(capacity)
                    .shards(shards)
                    .build()
                    .unwrap();
                let held: Vec<_> = (0..capacity)
                    .map(|i| {
                        resource.try_acquire_from(start).unwrap_or_else(|_| {
                            panic!("false overload at permit {i} of {capacity}/{shards}")
                        })
                    })
                    .collect();
                assert_eq!(resource.usage(), capacity);
                assert_eq!(resource.try_acquire_from(start).unwrap_err(), Overload);
                drop(held);
            }
        }
    }
}

#[test]
fn a_slot_freed_on_any_shard_is_found_from_every_start() {
    let resource = Resource::builder().capacity(6).shards(3).build().unwrap();
    let mut held: Vec<_> = (0..6).map(|_| resource.try_acquire().unwrap()).collect();
    assert!(resource.try_acquire().is_err());
    for start in 0..3 {
        for victim in 0..6 {
            let shard = held[victim].shard();
            drop(held.swap_remove(victim));
            // Capacity has been scarce since the first refusal: the freed
            // slot left `shard` for the reserve, and an acquire from
            // anywhere leases it home.
            let _ = shard;
            let again = resource.try_acquire_from(start).expect("false overload");
            assert_eq!(again.shard(), start);
            held.push(again);
            assert!(resource.try_acquire_from(start).is_err());
        }
    }
}
