//! Ported from pooler's tests: at most `queue_max` takers wait; the next one
//! is refused at once with `QueueFull`.

use std::thread;
use std::time::{Duration, Instant};

use crate::support;
use sidejob::{ObjectPool, TakeError};
use support::objects::{eventually, Members, Script};

#[test]
fn takers_beyond_queue_max_are_refused_at_once() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members.clone()))
        .max_size(1)
        .queue_max(2)
        .shards(1)
        .build()
        .unwrap();
    let held = pool.try_take().unwrap();
    thread::scope(|s| {
        let waiters: Vec<_> = (0..2)
            .map(|_| s.spawn(|| pool.take(Duration::from_secs(30)).map(|_| ())))
            .collect();
        eventually("two takers wait", || pool.status().waiting == 2);
        let started = Instant::now();
        let refused = pool.take(Duration::from_secs(30)).unwrap_err();
        assert!(matches!(refused, TakeError::QueueFull));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "it did not wait"
        );
        assert_eq!(refused.to_string(), "too many takers are already waiting");
        assert_eq!(pool.status().waiting, 2);
        drop(held);
        for waiter in waiters {
            waiter.join().unwrap().unwrap();
        }
    });
    let stats = pool.stats();
    assert_eq!((stats.waits, stats.rejected), (2, 1));
}

#[test]
fn queue_max_zero_never_waits() {
    let members = Members::new();
    let pool = ObjectPool::builder(Script(members))
        .max_size(1)
        .queue_max(0)
        .build()
        .unwrap();
    let _held = pool.try_take().unwrap();
    assert!(matches!(
        pool.take(Duration::from_secs(30)),
        Err(TakeError::QueueFull)
    ));
}
