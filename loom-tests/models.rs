//! Loom models of sidejob's concurrent protocols.
//!
//! Built only under `--cfg sidejob_loom`, which swaps the crate's atomics,
//! locks and thread-locals for loom's (see `src/sync.rs`). Run them with
//! `bash loom-tests/run.sh`; an ordinary `cargo test` compiles this file to
//! nothing.
#![cfg(sidejob_loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
// The resource is shared through std's `Arc`, as users share it; its
// refcount is not part of sidejob's protocol, so loom need not model it.
use std::sync::Arc;

use loom::thread;

use sidejob::Resource;

/// Counts the permits held right now, checked against a bound at every step.
struct Holders {
    now: AtomicUsize,
    bound: usize,
}

impl Holders {
    fn new(bound: usize) -> Self {
        Holders {
            now: AtomicUsize::new(0),
            bound,
        }
    }

    fn enter(&self) {
        let held = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(held <= self.bound, "{held} holders, bound {}", self.bound);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

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
            thread::spawn(move || resource.set_capacity(2))
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
            thread::spawn(move || resource.set_capacity(1))
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
        resource.set_capacity(2); // shares [1, 1]; shard 0 holds 2
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

mod worker_pool {
    use super::*;
    use sidejob::{CallError, CastError, Worker, WorkerPool};

    /// Answers every call with its request plus one.
    struct Increment;

    impl Worker for Increment {
        type Request = u32;
        type Reply = u32;

        fn handle_call(&mut self, request: u32) -> u32 {
            request + 1
        }
    }

    fn pool(capacity: usize) -> WorkerPool<Increment> {
        WorkerPool::builder()
            .capacity(capacity)
            .shards(1)
            .build(|_| Increment)
            .unwrap()
    }

    /// (d) A caller and a caster share one shard of capacity 1 with its
    /// worker: at most one message is ever queued or in progress, each slot
    /// is released exactly once, and the caller sees its slot free once it
    /// holds its reply.
    #[test]
    fn sender_and_worker_share_one_slot() {
        loom::model(|| {
            let pool = Arc::new(pool(1));
            let caller = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || match pool.call(1) {
                    Ok(reply) => {
                        assert_eq!(reply, 2);
                        true
                    }
                    Err(CallError::Overload(_)) => false,
                    Err(other) => panic!("unexpected {other:?}"),
                })
            };
            let cast = match pool.cast(5) {
                Ok(()) => true,
                Err(CastError::Overload(5)) => false,
                Err(other) => panic!("unexpected {other:?}"),
            };
            assert!(pool.usage() <= 1);
            let called = caller.join().unwrap();
            pool.shutdown();
            let stats = pool.stats();
            assert_eq!(stats.usage, 0);
            assert_eq!(stats.accepted, u64::from(called) + u64::from(cast));
            assert_eq!(stats.handled + stats.skipped, stats.accepted);
            assert_eq!(stats.accepted + stats.rejected, 2);
        });
    }

    /// (e) A call races with shutdown: it is either answered or refused as
    /// `Closed`, never left waiting (loom reports a deadlock if it were), and
    /// an admitted call is always handled before the workers exit.
    #[test]
    fn call_racing_shutdown_is_answered_or_refused() {
        loom::model(|| {
            let pool = Arc::new(pool(2));
            let caller = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || match pool.call(7) {
                    Ok(reply) => {
                        assert_eq!(reply, 8);
                        true
                    }
                    Err(CallError::Closed(7)) => false,
                    Err(other) => panic!("unexpected {other:?}"),
                })
            };
            pool.shutdown();
            let answered = caller.join().unwrap();
            let stats = pool.stats();
            assert_eq!(stats.usage, 0);
            assert_eq!(stats.handled, u64::from(answered));
            assert_eq!(stats.accepted, u64::from(answered));
        });
    }

    /// (k) The worker frees the only slot while no sender is looking; then
    /// two senders race for it, each with the senders' cached count of
    /// releases possibly stale. At least one gets in (a refusal rests on a
    /// fresh read of the worker's count, so the free slot is never missed),
    /// the bound holds, and every send is accounted for once.
    #[test]
    fn stale_release_count_never_refuses_a_free_slot() {
        loom::model(|| {
            let pool = Arc::new(pool(1));
            // The reply comes after the slot is free.
            assert_eq!(pool.call(1).unwrap(), 2);
            let other = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || pool.cast(2).is_ok())
            };
            let mine = pool.cast(3).is_ok();
            assert!(pool.usage() <= 1);
            let theirs = other.join().unwrap();
            assert!(mine || theirs, "both refused while the slot was free");
            pool.shutdown();
            let stats = pool.stats();
            assert_eq!(stats.usage, 0);
            assert_eq!(stats.accepted, 1 + u64::from(mine) + u64::from(theirs));
            assert_eq!(stats.handled, stats.accepted);
            assert_eq!(stats.accepted + stats.rejected, 3);
        });
    }
}

mod supervisor {
    use super::*;
    use sidejob::{SpawnError, Supervisor};

    /// (f) Two threads spawn at once into a supervisor with room for one:
    /// never two live children, every attempt accounted for, and the live
    /// set empty once the children are joined.
    #[test]
    fn concurrent_spawns_at_the_bound() {
        loom::model(|| {
            let supervisor = Arc::new(Supervisor::builder().capacity(1).shards(2).build().unwrap());
            let holders = Arc::new(Holders::new(1));
            let spawners: Vec<_> = (0..2)
                .map(|_| {
                    let supervisor = Arc::clone(&supervisor);
                    let holders = Arc::clone(&holders);
                    thread::spawn(move || {
                        let holders = Arc::clone(&holders);
                        match supervisor.spawn(move |_| {
                            holders.enter();
                            holders.leave();
                        }) {
                            Ok(child) => {
                                child.join().unwrap();
                                true
                            }
                            Err(SpawnError::Overload(_)) => false,
                            Err(other) => panic!("unexpected {other}"),
                        }
                    })
                })
                .collect();
            let spawned = spawners
                .into_iter()
                .map(|s| s.join().unwrap())
                .filter(|&ok| ok)
                .count() as u64;
            assert!(spawned >= 1);
            let stats = supervisor.stats();
            assert_eq!(stats.spawned + stats.rejected, 2);
            assert_eq!((stats.spawned, stats.finished), (spawned, spawned));
            assert!(supervisor.which_children().is_empty());
            assert_eq!(stats.shards.iter().map(|s| s.usage).sum::<usize>(), 0);
        });
    }

    /// (g) A child ends while another thread spawns: the spawn either finds
    /// the slot still taken (refused) or freed (admitted), the live set
    /// never shows more than one child, and everything drains.
    #[test]
    fn a_child_ending_while_another_spawns() {
        loom::model(|| {
            let supervisor = Arc::new(Supervisor::builder().capacity(1).shards(1).build().unwrap());
            let first = supervisor.spawn(|_| ()).unwrap();
            let spawner = {
                let supervisor = Arc::clone(&supervisor);
                thread::spawn(move || {
                    assert!(supervisor.count() <= 1);
                    supervisor
                        .spawn(|_| ())
                        .ok()
                        .map(|child| child.join().unwrap())
                })
            };
            first.join().unwrap();
            let second = spawner.join().unwrap();
            let stats = supervisor.stats();
            assert_eq!(stats.spawned, 1 + u64::from(second.is_some()));
            assert_eq!(stats.finished, stats.spawned);
            assert!(supervisor.which_children().is_empty());
            // The slot is free again.
            supervisor.spawn(|_| ()).unwrap().join().unwrap();
        });
    }
}

/// The object pool's hand-offs: a returned object or a freed slot reaches a
/// waiting taker, with no lost wake-up and no object handed out twice.
mod object_pool {
    use super::*;

    use std::time::Duration;

    use loom::sync::atomic::AtomicBool;
    use sidejob::{Manager, ObjectPool, TaggedManager, TakeError};

    /// Long enough never to pass: loom models no time, so a waiter that
    /// nobody serves would be reported as a deadlock.
    const FOREVER: Duration = Duration::from_secs(3600);

    /// Makes numbered objects; the first creation fails if told to.
    struct Numbers {
        made: AtomicUsize,
        fail_first: AtomicBool,
    }

    #[derive(Debug)]
    struct Refused;

    impl std::fmt::Display for Refused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("refused")
        }
    }

    impl std::error::Error for Refused {}

    impl Manager for Numbers {
        type Object = usize;
        type Error = Refused;

        fn create(&self) -> Result<usize, Refused> {
            if self.fail_first.swap(false, Ordering::SeqCst) {
                return Err(Refused);
            }
            Ok(self.made.fetch_add(1, Ordering::SeqCst))
        }
    }

    impl TaggedManager for Numbers {
        type Tag = (u8, u8);
    }

    fn pool(fail_first: bool) -> Arc<ObjectPool<Numbers>> {
        let numbers = Numbers {
            made: AtomicUsize::new(0),
            fail_first: AtomicBool::new(fail_first),
        };
        Arc::new(
            ObjectPool::builder(numbers)
                .max_size(1)
                .shards(1)
                .build()
                .unwrap(),
        )
    }

    /// (h) One object: a holder returns it while another taker waits for
    /// it. The taker always gets it (the return either finds the waiter or
    /// the waiter's scan finds the object), only one object is ever made,
    /// and it ends idle with nobody left waiting.
    #[test]
    fn return_racing_a_waiter_reaches_it() {
        loom::model(|| {
            let pool = pool(false);
            let holders = Arc::new(Holders::new(1));
            let returner = {
                let (pool, holders) = (Arc::clone(&pool), Arc::clone(&holders));
                thread::spawn(move || {
                    if let Ok(object) = pool.try_take() {
                        holders.enter();
                        holders.leave();
                        drop(object);
                    }
                })
            };
            let object = pool.take(FOREVER).expect("the waiter is served");
            holders.enter();
            assert_eq!(*object, 0, "only one object is ever made");
            holders.leave();
            drop(object);
            returner.join().unwrap();
            let status = pool.status();
            assert_eq!((status.size, status.idle, status.waiting), (1, 1, 0));
            assert_eq!(pool.stats().creates, 1);
        });
    }

    /// (i) A creation fails while another taker waits for the slot: the
    /// failure hands the slot on, so exactly one taker gets the error and
    /// the other gets the one object made; nobody waits forever.
    #[test]
    fn creation_failure_racing_a_waiter_hands_on_the_slot() {
        loom::model(|| {
            let pool = pool(true);
            let other = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || match pool.try_take() {
                    Ok(_) => Ok(()),
                    Err(error) => Err(error),
                })
            };
            let mine = pool.take(FOREVER).map(|object| *object);
            let other = other.join().unwrap();
            match (&mine, &other) {
                (Ok(0), Err(TakeError::Create(_))) => {}
                (Err(TakeError::Create(_)), Ok(())) => {}
                // The other taker found the slot taken while the failing
                // creation held it, and did not wait (`try_take`).
                (Err(TakeError::Create(_)), Err(TakeError::Overload)) => {}
                outcome => panic!("unexpected {outcome:?}"),
            }
            let stats = pool.stats();
            assert_eq!(stats.create_failures, 1);
            let status = pool.status();
            assert_eq!(
                (status.size, status.creating, status.waiting),
                (stats.creates as usize, 0, 0)
            );
        });
    }

    /// (j) As (h) with a tagged object, which idles on the tag shelf instead
    /// of a stack: its return reads `waiting` under the shelf's lock, and a
    /// waiter's scan looks at the shelf, so the waiter is served either way.
    #[test]
    fn tagged_return_racing_a_waiter_reaches_it() {
        loom::model(|| {
            let pool = pool(false);
            let returner = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || {
                    let object = pool.take_tagged(&(1, 2), FOREVER).expect("served");
                    assert_eq!(object.tag(), Some(&(1, 2)));
                    drop(object);
                })
            };
            let object = pool.take(FOREVER).expect("the waiter is served");
            assert_eq!(*object, 0, "only one object is ever made");
            drop(object);
            returner.join().unwrap();
            let status = pool.status();
            assert_eq!((status.size, status.idle, status.waiting), (1, 1, 0));
            assert_eq!(pool.stats().creates, 1);
        });
    }
}
