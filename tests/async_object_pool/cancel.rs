//! AsyncObjectPool's cancel safety (#19): a take future dropped at any poll
//! point, with a creation, an object under check, an object handed to it or
//! a slot handed to it, loses nothing. At rest the size is idle plus in
//! use, the manager's live objects are the pool's, no creation is left in
//! flight, and the bound held throughout (the manager asserts it).
#![cfg(feature = "tokio")]

use crate::support;

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use sidejob::{AsyncObjectPool, AsyncPooled, TakeError};
use support::async_objects::{poll_once, runtime, CountingWaker, Gauged};

/// Everything adds up: size = idle + in use, nothing being made, and the
/// manager's live objects are exactly the pool's.
fn assert_at_rest(pool: &AsyncObjectPool<Gauged>, manager: &Gauged) {
    let status = pool.status();
    assert_eq!(status.creating, 0, "{status:?}");
    assert_eq!(manager.creating(), 0, "a creation future outlived its take");
    assert_eq!(status.size, status.idle + status.in_use, "{status:?}");
    assert_eq!(manager.live(), status.size, "{status:?}");
    assert_eq!(status.waiting, 0, "{status:?}");
}

#[test]
fn a_take_dropped_at_any_poll_of_its_creation_frees_the_slot() {
    runtime().block_on(async {
        const CREATE_POLLS: usize = 3;
        for polls in 0..=CREATE_POLLS + 1 {
            let manager = Gauged::new(1);
            manager.0.create_polls.store(CREATE_POLLS, Ordering::SeqCst);
            let pool = AsyncObjectPool::builder(manager.clone())
                .max_size(1)
                .build()
                .await
                .unwrap();
            let waker = Arc::new(CountingWaker::default());
            let mut finished = false;
            {
                let mut take = pin!(pool.try_take());
                for _ in 0..polls {
                    if let Poll::Ready(taken) = poll_once(take.as_mut(), &waker) {
                        drop(taken.expect("made"));
                        finished = true;
                        break;
                    }
                }
            }
            assert_at_rest(&pool, &manager);
            let stats = pool.stats();
            if finished {
                assert_eq!((pool.status().idle, stats.cancelled), (1, 0));
            } else {
                assert_eq!(pool.status().size, 0, "slot freed after {polls} polls");
                assert_eq!(stats.cancelled, u64::from(polls > 0));
            }
            // The slot is whole: a take gets an object.
            drop(pool.try_take().await.expect("the slot is free"));
            assert_at_rest(&pool, &manager);
        }
    });
}

#[test]
fn a_take_dropped_while_its_check_runs_puts_the_object_back_unchecked() {
    runtime().block_on(async {
        for polls in 1..=2 {
            let manager = Gauged::new(1);
            manager.0.check_polls.store(3, Ordering::SeqCst);
            let pool = AsyncObjectPool::builder(manager.clone())
                .max_size(1)
                .init_size(1)
                .check_on_take(true)
                .build()
                .await
                .unwrap();
            let waker = Arc::new(CountingWaker::default());
            {
                let mut take = pin!(pool.try_take());
                for _ in 0..polls {
                    assert!(poll_once(take.as_mut(), &waker).is_pending());
                }
                assert_eq!(pool.status().in_use, 1, "under check");
            }
            assert_at_rest(&pool, &manager);
            let stats = pool.stats();
            assert_eq!(pool.status().idle, 1);
            assert_eq!((stats.failed_take_checks, stats.cancelled), (0, 1));
            assert_eq!(manager.made(), 1, "the same object stays");
        }
    });
}

#[test]
fn an_object_handed_to_a_dropped_waiter_goes_to_the_next_or_back_idle() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(1)
            .build()
            .await
            .unwrap();
        let waker = Arc::new(CountingWaker::default());
        let held = pool.try_take().await.unwrap();
        let first_id = held.id;

        let mut first = Box::pin(pool.take(Duration::from_secs(30)));
        let mut second = pin!(pool.take(Duration::from_secs(30)));
        assert!(poll_once(first.as_mut(), &waker).is_pending());
        assert!(poll_once(second.as_mut(), &waker).is_pending());
        assert_eq!(pool.status().waiting, 2);

        drop(held); // handed to the first waiter, which is woken
        assert_eq!(waker.0.load(Ordering::SeqCst), 1);
        drop(first); // ...and dropped: the object goes on to the second
        let Poll::Ready(taken) = poll_once(second.as_mut(), &waker) else {
            panic!("the second waiter was handed the object");
        };
        let taken = taken.unwrap();
        assert_eq!(taken.id, first_id);
        assert_eq!(pool.stats().cancelled, 1);
        drop(taken);

        // With nobody behind it, a dropped waiter's object goes back idle.
        let held = pool.try_take().await.unwrap();
        let mut lone = Box::pin(pool.take(Duration::from_secs(30)));
        assert!(poll_once(lone.as_mut(), &waker).is_pending());
        drop(held);
        drop(lone);
        assert_eq!(pool.status().idle, 1);
        assert_eq!(pool.stats().cancelled, 2);
        assert_eq!(manager.made(), 1);
        assert_at_rest(&pool, &manager);
    });
}

#[test]
fn a_slot_handed_to_a_dropped_waiter_goes_to_the_next_or_is_freed() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(1)
            .build()
            .await
            .unwrap();
        let waker = Arc::new(CountingWaker::default());

        let held = pool.try_take().await.unwrap();
        let mut first = Box::pin(pool.take(Duration::from_secs(30)));
        let mut second = pin!(pool.take(Duration::from_secs(30)));
        assert!(poll_once(first.as_mut(), &waker).is_pending());
        assert!(poll_once(second.as_mut(), &waker).is_pending());
        AsyncPooled::fail(held); // destroyed: its slot goes to the first waiter
        drop(first); // ...which drops it: the second gets the slot
        let Poll::Ready(taken) = poll_once(second.as_mut(), &waker) else {
            panic!("the second waiter makes its object in the slot");
        };
        let taken = taken.unwrap();
        assert_eq!(manager.made(), 2);
        drop(taken);

        let held = pool.try_take().await.unwrap();
        let mut lone = Box::pin(pool.take(Duration::from_secs(30)));
        assert!(poll_once(lone.as_mut(), &waker).is_pending());
        AsyncPooled::fail(held);
        drop(lone);
        assert_eq!(pool.status().size, 0, "the slot is freed");
        assert_at_rest(&pool, &manager);
        drop(pool.try_take().await.expect("the slot is whole"));
    });
}

#[test]
fn a_waiter_dropped_while_making_its_object_in_a_handed_slot_frees_it() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(1)
            .build()
            .await
            .unwrap();
        let waker = Arc::new(CountingWaker::default());
        let held = pool.try_take().await.unwrap();
        manager.0.create_polls.store(5, Ordering::SeqCst);
        let mut waiter = Box::pin(pool.take(Duration::from_secs(30)));
        assert!(poll_once(waiter.as_mut(), &waker).is_pending());
        AsyncPooled::fail(held);
        assert!(poll_once(waiter.as_mut(), &waker).is_pending(), "creating");
        assert_eq!(manager.creating(), 1);
        drop(waiter);
        assert_eq!(pool.status().size, 0);
        assert_at_rest(&pool, &manager);
    });
}

#[test]
fn a_take_inside_tokio_timeout_is_as_safe_as_its_own_timeout() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(1)
            .build()
            .await
            .unwrap();
        let held = pool.try_take().await.unwrap();
        let outer = tokio::time::timeout(
            Duration::from_millis(20),
            pool.take(Duration::from_secs(30)),
        );
        assert!(outer.await.is_err(), "the outer timeout fires first");
        assert_eq!(pool.status().waiting, 0, "the waiter left the queue");
        assert_eq!(pool.stats().cancelled, 1);
        drop(held);
        assert_eq!(pool.status().idle, 1);

        // The take's own timeout is a timeout, not a cancellation.
        let held = pool.try_take().await.unwrap();
        let own = pool.take(Duration::from_millis(20)).await;
        assert!(matches!(own, Err(TakeError::Timeout)));
        let stats = pool.stats();
        assert_eq!((stats.timeouts, stats.cancelled), (1, 1));
        drop(held);
        assert_at_rest(&pool, &manager);
    });
}

#[test]
fn many_tasks_cancelled_at_random_under_load_lose_nothing() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let manager = Gauged::new(3);
        manager.0.create_polls.store(2, Ordering::SeqCst);
        let pool = Arc::new(
            AsyncObjectPool::builder(manager.clone())
                .max_size(3)
                .check_on_take(true)
                .build()
                .await
                .unwrap(),
        );
        let tasks: Vec<_> = (0..32u64)
            .map(|task| {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move {
                    for round in 0..50u64 {
                        // Every third take is cut short from outside.
                        let patience = Duration::from_micros(50 + (task * 7 + round * 13) % 400);
                        let take = pool.take(Duration::from_millis(200));
                        let taken = if (task + round) % 3 == 0 {
                            match tokio::time::timeout(patience, take).await {
                                Ok(taken) => taken,
                                Err(_) => continue,
                            }
                        } else {
                            take.await
                        };
                        if let Ok(conn) = taken {
                            tokio::task::yield_now().await;
                            if round % 11 == 0 {
                                AsyncPooled::fail(conn);
                            }
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_at_rest(&pool, &manager);
        assert!(pool.status().size <= 3);
        // Every slot is whole: three takes at once succeed.
        let all: Vec<_> = futures_three(&pool).await;
        assert_eq!(all.len(), 3);
    });
}

async fn futures_three(pool: &AsyncObjectPool<Gauged>) -> Vec<AsyncPooled<'_, Gauged>> {
    let mut taken = Vec::new();
    for _ in 0..3 {
        taken.push(
            pool.take(Duration::from_secs(5))
                .await
                .expect("a slot or an object"),
        );
    }
    taken
}
