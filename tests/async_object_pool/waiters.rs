//! AsyncObjectPool's waiters (#19): FIFO hand-off, their own timeouts,
//! `queue_max`, and `close` answering every waiter.
#![cfg(feature = "tokio")]

use crate::support;

use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use sidejob::{AsyncObjectPool, TakeError};
use support::async_objects::{poll_once, runtime, CountingWaker, Gauged};

#[test]
fn waiters_are_served_first_come_first_served() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(1)
            .build()
            .await
            .unwrap();
        let waker = Arc::new(CountingWaker::default());
        let held = pool.try_take().await.unwrap();
        let mut waiters: Vec<Pin<Box<_>>> = (0..4)
            .map(|_| Box::pin(pool.take(Duration::from_secs(30))))
            .collect();
        for waiter in waiters.iter_mut() {
            assert!(poll_once(waiter.as_mut(), &waker).is_pending());
        }
        assert_eq!(pool.status().waiting, 4);
        drop(held);
        // Each return goes to the oldest waiter: only it is ready, and the
        // others stay queued until it returns the object.
        for served in 0..4 {
            for (index, waiter) in waiters.iter_mut().enumerate().skip(served + 1) {
                assert!(
                    poll_once(waiter.as_mut(), &waker).is_pending(),
                    "waiter {index} jumped the queue"
                );
            }
            let Poll::Ready(taken) = poll_once(waiters[served].as_mut(), &waker) else {
                panic!("waiter {served} was not served in turn");
            };
            drop(taken.unwrap());
        }
        assert_eq!((pool.status().idle, pool.stats().waits), (1, 4));
    });
}

#[test]
fn a_waiter_times_out_with_timeout_and_leaves_the_queue() {
    runtime().block_on(async {
        let pool = AsyncObjectPool::builder(Gauged::new(1))
            .max_size(1)
            .build()
            .await
            .unwrap();
        let held = pool.try_take().await.unwrap();
        let started = std::time::Instant::now();
        let taken = pool.take(Duration::from_millis(30)).await;
        assert!(matches!(taken, Err(TakeError::Timeout)), "{taken:?}");
        assert!(started.elapsed() >= Duration::from_millis(30));
        assert_eq!(pool.status().waiting, 0);
        let stats = pool.stats();
        assert_eq!((stats.timeouts, stats.waits, stats.cancelled), (1, 1, 0));
        drop(held);
    });
}

#[test]
fn queue_max_refuses_the_waiter_beyond_it_at_once() {
    runtime().block_on(async {
        let pool = AsyncObjectPool::builder(Gauged::new(1))
            .max_size(1)
            .queue_max(1)
            .build()
            .await
            .unwrap();
        let waker = Arc::new(CountingWaker::default());
        let held = pool.try_take().await.unwrap();
        let mut first = Box::pin(pool.take(Duration::from_secs(30)));
        assert!(poll_once(first.as_mut(), &waker).is_pending());
        let second = pool.take(Duration::from_secs(30)).await;
        assert!(matches!(second, Err(TakeError::QueueFull)), "{second:?}");
        assert_eq!(pool.stats().rejected, 1);
        drop(held);
        assert!(matches!(
            poll_once(first.as_mut(), &waker),
            Poll::Ready(Ok(_))
        ));
    });
}

#[test]
fn close_answers_every_waiter_closed() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let pool = Arc::new(
            AsyncObjectPool::builder(manager.clone())
                .max_size(1)
                .build()
                .await
                .unwrap(),
        );
        let held = pool.try_take_owned().await.unwrap();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move { pool.take(Duration::from_secs(30)).await.map(drop) })
            })
            .collect();
        while pool.status().waiting < 3 {
            tokio::task::yield_now().await;
        }
        pool.close();
        for waiter in waiters {
            assert!(matches!(waiter.await.unwrap(), Err(TakeError::Closed)));
        }
        drop(held); // destroyed on return
        assert_eq!((pool.status().size, manager.live()), (0, 0));
        assert!(matches!(pool.try_take().await, Err(TakeError::Closed)));
    });
}

#[test]
fn dropping_the_pool_closes_it_and_destroys_the_idle_objects() {
    runtime().block_on(async {
        let manager = Gauged::new(3);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(3)
            .init_size(3)
            .build()
            .await
            .unwrap();
        assert_eq!(manager.live(), 3);
        drop(pool);
        assert_eq!(manager.live(), 0);
    });
}
