//! The resource's protocol (the admission core): admission on the home
//! shard, leases from the reserve, slots moved home from other shards,
//! refusals by snapshot or by the reserve alone once capacity is scarce,
//! sweeps, resizes through the reserve, and priorities.

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
/// old capacity would admit, the bound is the larger capacity, and the
/// limits and the reserve account for the new capacity afterwards.
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

        assert_eq!(accounted(&resource), 2);
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

/// (c'') After a shrink below the usage closed the shards, a release racing
/// an acquire on the other shard pays the reserve: the acquire gets in only
/// once usage is under the new capacity, so holders never exceed it, and
/// the limits and the reserve account for it afterwards.
#[test]
fn release_after_shrink_pays_the_debt() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(4).shards(2).build().unwrap());
        let first = resource.try_acquire_owned_from(0).unwrap();
        let second = resource.try_acquire_owned_from(0).unwrap();
        assert_eq!(second.shard(), 0);
        resource.set_capacity(1).unwrap(); // 2 held of 1: closed, in debt
        assert!(resource.try_acquire_from(1).is_err(), "debt not charged");
        let holders = Arc::new(Holders::new(2));
        holders.enter();
        holders.enter();
        let after_release = Arc::new(Holders::new(1));

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
        // One held of capacity 1: nothing more gets in.
        assert!(resource.try_acquire_from(1).is_err());
        drop(second);
        after_release.enter();
        let on_one = resource.try_acquire_from(1).expect("false overload");
        assert_eq!(on_one.shard(), 1);
        assert!(resource.try_acquire().is_err());
        drop(on_one);
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 1);
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

/// The shards' limits plus the reserve: the capacity, when nothing is in
/// flight and no shrink's debt is unpaid.
fn accounted(resource: &Resource) -> i64 {
    let stats = resource.stats();
    stats.shards.iter().map(|s| s.limit as i64).sum::<i64>() + stats.reserve
}

/// (m) A move racing an admission: two slots, one per shard, and three
/// acquires that hold what they get. Thread A acquires twice from shard 0
/// (the second moves shard 1's slot home unless B took it first); B
/// acquires once from shard 1. Nobody releases, so exactly two are
/// admitted: a refusal happens only with both slots held.
#[test]
fn a_move_racing_an_admission_admits_exactly_the_capacity() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(2));
        let mover = {
            let resource = Arc::clone(&resource);
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                let held: Vec<_> = (0..2)
                    .filter_map(|_| resource.try_acquire_owned_from(0).ok())
                    .inspect(|_| holders.enter())
                    .collect();
                held
            })
        };
        let other = {
            let resource = Arc::clone(&resource);
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                let held = resource.try_acquire_owned_from(1).ok();
                if held.is_some() {
                    holders.enter();
                }
                held
            })
        };
        let moved = mover.join().unwrap();
        let stayed = other.join().unwrap();
        assert_eq!(moved.len() + usize::from(stayed.is_some()), 2);
        assert!(moved.iter().all(|permit| permit.shard() == 0));
        drop((moved, stayed));
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 2);
    });
}

/// (n) A move racing a release: shard 0's slot is held and released by one
/// thread, which then acquires from shard 1; another acquires from shard 0
/// meanwhile (its home is full until the release, so it moves shard 1's
/// slot home or takes the released one). Two slots, at most two holders:
/// neither may be refused.
#[test]
fn a_move_racing_a_release_is_never_refused() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
        let held = resource.try_acquire_owned_from(0).unwrap();
        let mover = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                let permit = resource.try_acquire_from(0).expect("false overload");
                assert_eq!(permit.shard(), 0);
            })
        };
        let releaser = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                drop(held);
                resource
                    .try_acquire_from(1)
                    .expect("false overload")
                    .shard()
            })
        };
        mover.join().unwrap();
        assert_eq!(releaser.join().unwrap(), 1);
        assert_eq!(resource.stats().rejected, 0);
        assert_eq!(accounted(&resource), 2);
    });
}

/// (s) The sweep's store-then-load pair with a release: one slot, held on
/// shard 0. The releaser drops it and raises a flag. The other thread
/// acquires from shard 1; a refusal there starts a sweep, after which
/// capacity is scarce and refusals read the reserve alone. If it then sees
/// the flag, the slot is free and its next acquire must be admitted: a
/// free slot left on shard 0 while scarce would be refused here.
#[test]
fn a_release_racing_the_sweep_is_never_lost() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(1).shards(2).build().unwrap());
        let held = resource.try_acquire_owned_from(0).unwrap();
        let released = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let releaser = {
            let released = Arc::clone(&released);
            thread::spawn(move || {
                drop(held);
                released.store(true, Ordering::SeqCst);
            })
        };
        let acquirer = {
            let resource = Arc::clone(&resource);
            let released = Arc::clone(&released);
            thread::spawn(move || {
                let first = resource.try_acquire_from(1);
                if first.is_err() && released.load(Ordering::SeqCst) {
                    let second = resource.try_acquire_from(1);
                    drop(second.expect("false overload after the sweep"));
                }
            })
        };
        releaser.join().unwrap();
        acquirer.join().unwrap();
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 1);
        let only = resource.try_acquire().expect("the slot is free");
        assert!(resource.try_acquire().is_err());
        drop(only);
    });
}

/// (ab) As (s), over three busy shards: every refusal sweeps, whatever the
/// shard count. Capacity 3, one slot held on each shard; the releaser drops
/// the middle shard's and raises a flag. The other thread acquires from
/// shard 2; a refusal there sweeps all three shards. If it then sees the
/// flag, its next acquire must be admitted, and at the end the leases and
/// the reserve still sum to the capacity.
#[test]
fn a_release_racing_a_sweep_of_many_shards_is_never_lost() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(3).shards(3).build().unwrap());
        let first = resource.try_acquire_owned_from(0).unwrap();
        let middle = resource.try_acquire_owned_from(1).unwrap();
        let last = resource.try_acquire_owned_from(2).unwrap();
        let released = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let releaser = {
            let released = Arc::clone(&released);
            thread::spawn(move || {
                drop(middle);
                released.store(true, Ordering::SeqCst);
            })
        };
        let acquirer = {
            let resource = Arc::clone(&resource);
            let released = Arc::clone(&released);
            thread::spawn(move || {
                let attempt = resource.try_acquire_from(2);
                if attempt.is_err() && released.load(Ordering::SeqCst) {
                    let again = resource.try_acquire_from(2);
                    drop(again.expect("false overload after the sweep"));
                }
            })
        };
        releaser.join().unwrap();
        acquirer.join().unwrap();
        drop((first, last));
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 3);
    });
}

/// (ac) A permit leased under scarcity goes straight back to the reserve
/// when released, reading no mode: here while a shrink into debt closes the
/// shards. Capacity 2 on two shards, both held, a refusal makes capacity
/// scarce; shard 1's slot is released to the reserve and leased again from
/// shard 1 (a marked ticket). One thread drops that permit while another
/// shrinks the capacity to 1. The slot is paid to the reserve exactly once:
/// at the end the leases and the reserve sum to 1, and exactly one permit
/// is admitted.
#[test]
fn a_scarce_lease_released_during_a_shrink_pays_once() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
        let first = resource.try_acquire_owned_from(0).unwrap();
        let second = resource.try_acquire_owned_from(1).unwrap();
        assert!(resource.try_acquire_from(0).is_err());
        drop(second);
        let leased = resource.try_acquire_owned_from(1).unwrap();
        let releaser = thread::spawn(move || drop(leased));
        let shrinker = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.set_capacity(1).unwrap())
        };
        releaser.join().unwrap();
        shrinker.join().unwrap();
        drop(first);
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 1);
        let only = resource.try_acquire().expect("one slot is free");
        assert!(resource.try_acquire().is_err());
        drop(only);
    });
}

/// (r) A shrink into debt racing a release and an acquire: two slots held,
/// capacity shrunk to 1. Holders never exceed the old capacity, and an
/// acquire that starts once the shrink has returned and usage reads 1 is
/// refused: one is still held, and that is the capacity (a free slot that
/// a release left on a shard in debt would admit it). Afterwards exactly
/// one slot is left.
#[test]
fn a_shrink_into_debt_racing_a_release_and_an_acquire_keeps_the_bound() {
    use loom::sync::atomic::AtomicBool;
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(2));
        let first = resource.try_acquire_owned_from(0).unwrap();
        let second = resource.try_acquire_owned_from(1).unwrap();
        holders.enter();
        holders.enter();
        let shrunk = Arc::new(AtomicBool::new(false));
        let resizer = {
            let resource = Arc::clone(&resource);
            let shrunk = Arc::clone(&shrunk);
            thread::spawn(move || {
                resource.set_capacity(1).unwrap();
                shrunk.store(true, Ordering::SeqCst);
            })
        };
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
            let shrunk = Arc::clone(&shrunk);
            thread::spawn(move || {
                let after = shrunk.load(Ordering::SeqCst) && resource.usage() <= 1;
                if let Ok(permit) = resource.try_acquire_from(0) {
                    assert!(!after, "admitted past the new capacity");
                    holders.enter();
                    holders.leave();
                    drop(permit);
                }
            })
        };
        resizer.join().unwrap();
        releaser.join().unwrap();
        acquirer.join().unwrap();
        // One held, capacity 1: full.
        assert!(resource.try_acquire_from(0).is_err());
        assert!(resource.try_acquire_from(1).is_err());
        holders.leave();
        drop(second);
        let only = resource.try_acquire().expect("the slot is free");
        assert!(resource.try_acquire().is_err());
        drop(only);
        assert_eq!(accounted(&resource), 1);
    });
}

/// (l) A chunk lease racing a shrink's closing sweep: capacity grown to 4
/// in the reserve, leased two at a time; a shrink to 1 meanwhile. Whatever
/// the order, no free slot stays behind on a shard while the reserve is in
/// debt: after the lease's permit is dropped, exactly one is admitted.
#[test]
fn a_chunk_lease_racing_a_shrink_leaves_no_slot_behind() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(0).shards(2).build().unwrap());
        resource.set_capacity(4).unwrap();
        let leaser = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.try_acquire_owned_from(0).ok())
        };
        let resizer = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.set_capacity(1).unwrap())
        };
        let permit = leaser.join().unwrap();
        resizer.join().unwrap();
        if permit.is_some() {
            assert!(resource.try_acquire_from(1).is_err());
        }
        drop(permit);
        let only = resource.try_acquire_from(1).expect("the slot is free");
        assert!(resource.try_acquire_from(0).is_err());
        drop(only);
        assert_eq!(accounted(&resource), 1);
    });
}

/// (q) Priorities are strict under concurrency: capacity 2, sheddable share
/// 0.5, so a sheddable acquire needs the usage after it to stay at most 1.
/// Two threads each take a sheddable permit while the main thread holds a
/// normal one for a while: never two sheddable holders, never three in
/// all; and afterwards one caller gets exactly one sheddable permit, and a
/// critical acquire the slot left.
#[test]
fn a_share_is_strict_under_concurrency() {
    use sidejob::Priority;
    loom::model(|| {
        let resource = Arc::new(
            Resource::builder()
                .capacity(2)
                .shards(2)
                .share(Priority::Sheddable, 0.5)
                .build()
                .unwrap(),
        );
        let sheddable = Arc::new(Holders::new(1));
        let all = Arc::new(Holders::new(2));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let resource = Arc::clone(&resource);
                let (sheddable, all) = (Arc::clone(&sheddable), Arc::clone(&all));
                thread::spawn(move || {
                    if let Ok(permit) = resource.try_acquire_with(Priority::Sheddable) {
                        sheddable.enter();
                        all.enter();
                        all.leave();
                        sheddable.leave();
                        drop(permit);
                    }
                })
            })
            .collect();
        if let Ok(permit) = resource.try_acquire() {
            all.enter();
            all.leave();
            drop(permit);
        }
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(resource.usage(), 0);
        let first = resource
            .try_acquire_with(Priority::Sheddable)
            .expect("exact for one caller");
        assert!(resource.try_acquire_with(Priority::Sheddable).is_err());
        let critical = resource
            .try_acquire_with(Priority::Critical)
            .expect("the slot sheddable work leaves");
        drop((first, critical));
        assert_eq!(accounted(&resource), 2);
    });
}

/// (v) A move racing a shrink: shard 0's slot is held, so an acquire from
/// shard 0 must move shard 1's free slot home, while the capacity shrinks
/// from 2 to 1 (into debt if the move won). Holders never exceed the old
/// capacity; once the shrink has returned and usage reads 1, nothing more
/// is admitted; afterwards exactly one slot is left.
#[test]
fn a_move_racing_a_shrink_keeps_the_bound() {
    use loom::sync::atomic::AtomicBool;
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(2));
        let held = resource.try_acquire_owned_from(0).unwrap();
        holders.enter();
        let shrunk = Arc::new(AtomicBool::new(false));
        let mover = {
            let resource = Arc::clone(&resource);
            let holders = Arc::clone(&holders);
            thread::spawn(move || {
                let permit = resource.try_acquire_owned_from(0).ok();
                if permit.is_some() {
                    holders.enter();
                }
                permit
            })
        };
        let resizer = {
            let resource = Arc::clone(&resource);
            let shrunk = Arc::clone(&shrunk);
            thread::spawn(move || {
                resource.set_capacity(1).unwrap();
                shrunk.store(true, Ordering::SeqCst);
            })
        };
        let moved = mover.join().unwrap();
        resizer.join().unwrap();
        assert!(shrunk.load(Ordering::SeqCst));
        // At least one held, capacity 1: full.
        assert!(resource.try_acquire_from(1).is_err());
        if let Some(permit) = moved {
            assert_eq!(permit.shard(), 0);
            holders.leave();
            drop(permit);
            // Still one held: still full.
            assert!(resource.try_acquire_from(1).is_err());
        }
        holders.leave();
        drop(held);
        let only = resource.try_acquire_from(1).expect("the slot is free");
        assert!(resource.try_acquire_from(0).is_err());
        drop(only);
        assert_eq!(accounted(&resource), 1);
    });
}

/// (ad) Scarce over three shards, two slots held on shards 0 and 1. Each of two
/// threads releases its own slot and then acquires one (from another
/// shard): each released one before asking, so neither may be refused. The
/// second free slot makes capacity plentiful again (a lease turns it
/// Spread) while the other release may have read Scarce.
#[test]
fn a_release_and_acquire_across_the_turn_to_spread_are_never_refused() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(3).build().unwrap());
        let a = resource.try_acquire_owned_from(0).unwrap();
        let b = resource.try_acquire_owned_from(1).unwrap();
        assert!(resource.try_acquire_from(2).is_err()); // sweeps: scarce
        let ta = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                drop(a);
                resource
                    .try_acquire_owned_from(2)
                    .expect("false overload (a)")
            })
        };
        let tb = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                drop(b);
                resource
                    .try_acquire_owned_from(0)
                    .expect("false overload (b)")
            })
        };
        let pa = ta.join().unwrap();
        let pb = tb.join().unwrap();
        assert!(resource.try_acquire_from(1).is_err());
        drop((pa, pb));
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 2);
    });
}

/// (ae) Spread over three shards, capacity 2: one slot held on shard 0. Thread
/// A acquires from 1 and 2 and holds both (one of them must be refused,
/// genuinely: sweep). Thread B releases shard 0's slot and then acquires
/// from 0: never refused (it freed one).
#[test]
fn a_sweep_after_a_genuine_refusal_never_refuses_a_thread_that_freed_a_slot() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(3).build().unwrap());
        let held = resource.try_acquire_owned_from(0).unwrap();
        let ta = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                let x = resource.try_acquire_owned_from(1).ok();
                let y = resource.try_acquire_owned_from(2).ok();
                (x, y)
            })
        };
        let tb = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                drop(held);
                resource.try_acquire_owned_from(0).ok()
            })
        };
        let (x, y) = ta.join().unwrap();
        let z = tb.join().unwrap();
        let n = x.is_some() as usize + y.is_some() as usize + z.is_some() as usize;
        assert!(n <= 2);
        // A holds at most 2; B freed one before asking: B is refused only if
        // A holds both.
        if z.is_none() {
            assert!(x.is_some() && y.is_some(), "false overload for B");
        }
        drop((x, y, z));
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 2);
    });
}

/// (af) A sweep started by a Sheddable admission (share below 1, capacity
/// plentiful) takes shard 0's free slot into transit; a Normal acquire from
/// shard 0 meanwhile: one slot (shard 1's) is held by main, the other is
/// free the whole time (in transit at worst), so the Normal acquire must be
/// admitted, and the Sheddable one may take at most one slot.
#[test]
fn a_normal_acquire_during_a_share_sweep_is_not_refused() {
    use sidejob::Priority;
    loom::model(|| {
        let resource = Arc::new(
            Resource::builder()
                .capacity(2)
                .shards(2)
                .share(Priority::Sheddable, 0.5)
                .build()
                .unwrap(),
        );
        let held = resource.try_acquire_owned_from(1).unwrap();
        assert_eq!(held.shard(), 1);
        let ta = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.try_acquire_owned_with(Priority::Sheddable).ok())
        };
        let tb = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.try_acquire_owned_from(0).ok())
        };
        let a = ta.join().unwrap();
        let b = tb.join().unwrap();
        // B may be refused only if A took the free slot first.
        if b.is_none() {
            assert!(
                a.is_some(),
                "false overload: Normal refused while a slot was free"
            );
        }
        drop((a, b, held));
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 2);
    });
}

/// (ag) As (ae), with every shard busy (three slots on three shards, so the
/// old rule, which swept only when at most two shards held capacity, never
/// swept here). Main holds shard 0's slot, B shard 1's, A takes shard 2's
/// and asks once more (a genuine refusal when B has not released yet,
/// which now sweeps). B drops its slot and asks again: B may be refused
/// only if A holds two (then three are held).
#[test]
fn a_sweep_of_three_busy_shards_never_refuses_a_thread_that_freed_a_slot() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(3).shards(3).build().unwrap());
        let held = resource.try_acquire_owned_from(0).unwrap();
        let mine = resource.try_acquire_owned_from(1).unwrap();
        assert_eq!((held.shard(), mine.shard()), (0, 1));
        let ta = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                let x = resource.try_acquire_owned_from(2).ok();
                let y = resource.try_acquire_owned_from(2).ok();
                (x, y)
            })
        };
        let tb = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                drop(mine);
                resource.try_acquire_owned_from(1).ok()
            })
        };
        let (x, y) = ta.join().unwrap();
        let z = tb.join().unwrap();
        if z.is_none() {
            assert!(
                x.is_some() && y.is_some(),
                "false overload for B: x {} y {}",
                x.is_some(),
                y.is_some()
            );
        }
        drop((x, y, z, held));
        assert_eq!(resource.usage(), 0);
        assert_eq!(accounted(&resource), 3);
    });
}

/// (aj) A reader of the figures races a grow and a shrink: `stats` never
/// reads a resize half done (the capacity moved and the reserve not yet, or
/// the other way round), so the usage it reports is the permit held, and
/// the capacity one of those set, with its limits and reserve summing to it.
#[test]
fn the_figures_never_read_a_resize_half_done() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(2).shards(1).build().unwrap());
        let held = resource.try_acquire().unwrap();
        let resizer = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                resource.set_capacity(3).unwrap();
                resource.set_capacity(2).unwrap();
            })
        };
        let stats = resource.stats();
        assert_eq!(
            stats.usage, 1,
            "usage read off a resize half done: {stats:?}"
        );
        assert!([2, 3].contains(&stats.capacity), "{stats:?}");
        let leased: i64 = stats.shards.iter().map(|s| s.limit as i64).sum();
        assert_eq!(leased + stats.reserve, stats.capacity as i64, "{stats:?}");
        resizer.join().unwrap();
        drop(held);
    });
}
