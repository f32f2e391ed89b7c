//! After a genuine refusal, capacity is scarce whatever the shard count:
//! the free slots gather in the reserve, so the refusals that follow read
//! the reserve alone instead of every shard.

use std::sync::Barrier;
use std::thread;

use sidejob::Resource;

#[test]
fn a_refusal_over_many_shards_gathers_the_free_slots_in_the_reserve() {
    for shards in [4, 16, 64, 256] {
        let resource = Resource::builder()
            .capacity(9)
            .shards(shards)
            .build()
            .unwrap();
        // Nine slots held on nine shards (wrapping where there are fewer).
        let held: Vec<_> = (0..9)
            .map(|slot| resource.try_acquire_from(slot % shards).unwrap())
            .collect();
        let active = resource
            .stats()
            .shards
            .iter()
            .filter(|shard| shard.limit > 0)
            .count();
        assert_eq!(active, shards.min(9), "{shards} shards");
        assert!(resource.try_acquire_from(shards - 1).is_err());

        // The next free slot goes to the reserve, not back to its shard.
        let mut held = held.into_iter();
        let first = held.next().unwrap();
        let shard = first.shard();
        drop(first);
        let stats = resource.stats();
        assert_eq!(stats.reserve, 1, "{shards} shards: {stats:?}");
        assert_eq!(
            stats.shards[shard].limit, stats.shards[shard].usage,
            "{shards} shards: no shard keeps a free slot"
        );
        assert_eq!(stats.usage, 8);

        // Admitted from the reserve on any shard; refused again once taken.
        let again = resource.try_acquire_from(shards / 2).unwrap();
        assert_eq!(resource.stats().reserve, 0);
        assert!(resource.try_acquire_from(0).is_err());
        let stats = resource.stats();
        assert_eq!(stats.rejected, 2);
        assert_eq!(stats.accepted, 10);
        drop(again);
        drop(held);
        assert_eq!(resource.usage(), 0);
    }
}

#[test]
fn threads_racing_for_the_last_slot_over_many_shards_never_exceed_it() {
    let resource = Resource::builder().capacity(9).shards(64).build().unwrap();
    let held: Vec<_> = (0..8)
        .map(|slot| resource.try_acquire_from(slot * 8).unwrap())
        .collect();
    let threads = 4;
    let rounds = 20_000;
    let barrier = Barrier::new(threads);
    let admitted: u64 = thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (resource, barrier) = (&resource, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    let mut admitted = 0;
                    for i in 0..rounds {
                        if let Ok(permit) = resource.try_acquire_from((t * 17 + i) % 64) {
                            // Nine held at most: eight here and this one.
                            assert!(resource.usage() <= 9);
                            admitted += 1;
                            drop(permit);
                        }
                    }
                    admitted
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let stats = resource.stats();
    assert_eq!(stats.accepted, 8 + admitted);
    assert_eq!(
        stats.accepted + stats.rejected,
        8 + (threads * rounds) as u64
    );
    assert!(admitted > 0, "the free slot was never admitted");
    drop(held);
    let stats = resource.stats();
    assert_eq!(stats.usage, 0);
    assert_eq!(
        stats.reserve + stats.shards.iter().map(|s| s.limit as i64).sum::<i64>(),
        9,
        "the leases and the reserve still sum to the capacity"
    );
}
