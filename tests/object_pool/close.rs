//! `close`: no more takes, idle members destroyed now, members in use
//! destroyed when returned, waiters answered `Closed`. Dropping the pool
//! closes it.

use std::thread;
use std::time::Duration;

use crate::support;
use sidejob::TakeError;
use support::objects::{eventually, pool, Members};

#[test]
fn close_destroys_idle_members_now_and_held_ones_on_return() {
    let members = Members::new();
    let pool = pool(&members, 3);
    let held = pool.try_take().unwrap();
    drop(pool.try_take().unwrap()); // member 2 idles
    pool.close();
    assert_eq!(members.destroyed(), [2]);
    assert!(pool.is_closed());
    assert!(matches!(pool.try_take(), Err(TakeError::Closed)));
    assert!(matches!(
        pool.take(Duration::from_secs(1)),
        Err(TakeError::Closed)
    ));
    drop(held);
    assert_eq!(members.destroyed(), [2, 1]);
    assert_eq!(pool.status().size, 0);
    pool.close(); // idempotent
}

#[test]
fn close_answers_every_waiter() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let _held = pool.try_take().unwrap();
    thread::scope(|s| {
        let waiters: Vec<_> = (0..3)
            .map(|_| s.spawn(|| pool.take(Duration::from_secs(30)).map(|_| ())))
            .collect();
        eventually("three takers wait", || pool.status().waiting == 3);
        pool.close();
        for waiter in waiters {
            assert!(matches!(waiter.join().unwrap(), Err(TakeError::Closed)));
        }
    });
    assert_eq!(pool.status().waiting, 0);
}

#[test]
fn dropping_the_pool_destroys_every_member() {
    let members = Members::new();
    let pool = sidejob::ObjectPool::builder(support::objects::Script(members.clone()))
        .max_size(4)
        .init_size(2)
        .min_idle(3)
        .build()
        .unwrap();
    eventually("min_idle members exist", || pool.status().idle == 3);
    drop(pool);
    assert_eq!(members.live(), 0);
    assert_eq!(members.destroyed().len(), 3);
}
