//! The resource's protocol: admission through the probe, release, and
//! resizing with the rebalance.

use super::*;

/// (a) Three threads race for two permits on two shards: the bound holds at
/// every step, every attempt is counted once, and usage returns to 0.
#[test]
fn acquire_race_keeps_the_bound() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(2));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let resource = Arc::clone(&resource);
                let holders = Arc::clone(&holders);
                thread::spawn(move || match resource.try_acquire() {
                    Ok(permit) => {
                        holders.enter();
                        assert!(resource.usage() <= 2);
                        holders.leave();
                        drop(permit);
                        true
                    }
                    Err(_) => false,
                })
            })
            .collect();
        let admitted = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(|&ok| ok)
            .count();
        // Two slots for three threads: at least two get in.
        assert!(admitted >= 2, "only {admitted} admitted");
        let stats = resource.stats();
        assert_eq!(stats.usage, 0);
        assert_eq!(stats.accepted, admitted as u64);
        assert_eq!(stats.accepted + stats.rejected, 3);
    });
}

/// (a') One slot, two threads that each acquire twice: never two holders.
#[test]
fn single_slot_is_mutually_exclusive() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(1).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(1));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let resource = Arc::clone(&resource);
                let holders = Arc::clone(&holders);
                thread::spawn(move || {
                    for _ in 0..2 {
                        if let Ok(permit) = resource.try_acquire() {
                            holders.enter();
                            holders.leave();
                            drop(permit);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(resource.usage(), 0);
        assert_eq!(resource.stats().accepted + resource.stats().rejected, 4);
    });
}

/// (b) The home shard is full: the probe finds the other shard, even while
/// the holder of the home shard's slot releases it concurrently. With two
/// slots and at most two holders, no acquire may ever be refused.
#[test]
fn probe_finds_the_other_shard() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
        let held = resource.try_acquire_owned_from(0).unwrap();

        let prober = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                let permit = resource.try_acquire_from(0).expect("false overload");
                permit.shard()
            })
        };
        let releaser = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                drop(held);
                let permit = resource.try_acquire_from(1).expect("false overload");
                permit.shard()
            })
        };
        prober.join().unwrap();
        releaser.join().unwrap();
        assert_eq!(resource.usage(), 0);
        assert_eq!(resource.stats().rejected, 0);
    });
}

/// (c) Growing races with acquire and release: nothing is refused that the
/// old capacity would admit, the bound is the larger capacity, and the new
/// limits are exact afterwards.
#[test]
fn grow_races_with_acquire_and_release() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(1).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(2));
        let held = resource.try_acquire_owned_from(0).unwrap();
        holders.enter();

        let resizer = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.set_capacity(2).unwrap())
        };
        let worker = {
            let resource = Arc::clone(&resource);
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                holders.leave();
                drop(held);
                // The released slot is free whatever the resize is doing.
                let permit = resource.try_acquire().expect("false overload");
                holders.enter();
                holders.leave();
                drop(permit);
            })
        };
        resizer.join().unwrap();
        worker.join().unwrap();

        let limits: Vec<usize> = resource.stats().shards.iter().map(|s| s.limit).collect();
        assert_eq!(limits, [1, 1]);
        let a = resource.try_acquire().unwrap();
        let b = resource.try_acquire().unwrap();
        assert!(resource.try_acquire().is_err());
        drop((a, b));
        assert_eq!(resource.usage(), 0);
    });
}

/// (c') Shrinking races with an acquire: held permits are never revoked, the
/// bound is the old capacity while the shrink is under way, and afterwards
/// the new capacity is enforced exactly.
#[test]
fn shrink_races_with_acquire() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(2));
        let held = resource.try_acquire_owned_from(0).unwrap();
        holders.enter();

        let resizer = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.set_capacity(1).unwrap())
        };
        let acquirer = {
            let resource = Arc::clone(&resource);
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                if let Ok(permit) = resource.try_acquire_from(1) {
                    holders.enter();
                    holders.leave();
                    drop(permit);
                }
            })
        };
        resizer.join().unwrap();
        acquirer.join().unwrap();
        // Still held, and now the resource is at its new capacity.
        assert!(resource.try_acquire().is_err());
        holders.leave();
        drop(held);
        let only = resource.try_acquire().unwrap();
        assert!(resource.try_acquire().is_err());
        drop(only);
        assert_eq!(resource.usage(), 0);
    });
}

/// (c'') After a shrink left shard 0 above its share, its release races with
/// an acquire on shard 1: the acquire gets in only once the overshoot is
/// gone, so holders never exceed the new capacity, and the limits end up
/// back at their shares.
#[test]
fn release_after_shrink_rebalances() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(4).shards(2).build().unwrap());
        let first = resource.try_acquire_owned_from(0).unwrap();
        let second = resource.try_acquire_owned_from(0).unwrap();
        assert_eq!(second.shard(), 0);
        resource.set_capacity(2).unwrap(); // shares [1, 1]; shard 0 holds 2
        assert!(
            resource.try_acquire_from(1).is_err(),
            "overshoot not charged"
        );
        let holders = Arc::new(Holders::new(2));
        holders.enter();
        holders.enter();

        let releaser = {
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                holders.leave();
                drop(first);
            })
        };
        let acquirer = {
            let resource = Arc::clone(&resource);
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                if let Ok(permit) = resource.try_acquire_from(1) {
                    holders.enter();
                    holders.leave();
                    drop(permit);
                }
            })
        };
        releaser.join().unwrap();
        acquirer.join().unwrap();
        // The overshoot is gone: shard 1 admits again, exactly its share.
        let on_one = resource.try_acquire_from(1).expect("false overload");
        assert_eq!(on_one.shard(), 1);
        assert!(resource.try_acquire().is_err());
        drop((on_one, second));
        assert_eq!(resource.usage(), 0);
    });
}

/// (p) Owned permits outlive every handle to their resource: each thread
/// drops its handle while another still holds a permit, and the permits are
/// released afterwards, on other threads, into the counter their shard's
/// anchor keeps alive. The bound holds throughout, and a release racing an
/// acquire on the other shard loses nothing: the last acquire is admitted
/// only if a slot was free, and whatever it holds is released too.
#[test]
fn owned_permits_outlive_every_handle() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(1).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(1));
        let first = resource.try_acquire_owned_from(0).unwrap();
        holders.enter();
        let releaser = {
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                holders.leave();
                drop(first);
            })
        };
        let acquirer = {
            let resource = Arc::clone(&resource);
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                let permit = resource.try_acquire_owned_from(1);
                drop(resource); // the permit outlives this handle
                if let Ok(permit) = permit {
                    holders.enter();
                    holders.leave();
                    drop(permit);
                }
            })
        };
        // The main thread's handle goes first: the releaser's permit and
        // the acquirer's are all that keep the counter alive.
        drop(resource);
        releaser.join().unwrap();
        acquirer.join().unwrap();
    });
}
