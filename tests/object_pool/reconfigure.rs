//! Live reconfiguration, ported from pooler's tests: raising `max_size`
//! serves waiters at once, lowering it destroys idle members and lets the
//! ones in use drain, and lowering `queue_max` answers the excess waiters.

use std::thread;
use std::time::Duration;

use crate::support;
use sidejob::TakeError;
use support::objects::{eventually, pool, Members};

const LONG: Duration = Duration::from_secs(30);

#[test]
fn raising_max_size_serves_waiters_at_once() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let _held = pool.try_take().unwrap();
    thread::scope(|s| {
        let waiters: Vec<_> = (0..2)
            .map(|_| s.spawn(|| pool.take(LONG).map(|m| m.id)))
            .collect();
        eventually("two takers wait", || pool.status().waiting == 2);
        pool.reconfigure(|config| config.max_size = 3).unwrap();
        let mut ids: Vec<u32> = waiters
            .into_iter()
            .map(|w| w.join().unwrap().unwrap())
            .collect();
        ids.sort();
        assert_eq!(ids, [2, 3]);
    });
    assert_eq!(pool.max_size(), 3);
    assert_eq!(pool.status().size, 3);
}

#[test]
fn lowering_max_size_destroys_idle_members_and_drains_the_rest() {
    let members = Members::new();
    let pool = pool(&members, 4);
    let held: Vec<_> = (0..4).map(|_| pool.try_take().unwrap()).collect();
    let mut held = held.into_iter();
    drop(held.next()); // member 1 idles
    drop(held.next()); // member 2 idles
    pool.reconfigure(|config| config.max_size = 1).unwrap();
    assert_eq!(members.destroyed().len(), 2, "the idle ones are destroyed");
    let status = pool.status();
    assert_eq!((status.max_size, status.size, status.in_use), (1, 2, 2));
    // Still above the new size: nothing new is made.
    assert!(pool.try_take().unwrap_err().is_overload());
    drop(held.next());
    // Now at the new size: a returned member is kept (the bound holds).
    assert_eq!(pool.status().size, 1);
    assert!(pool.try_take().unwrap_err().is_overload());
    drop(held);
    assert!(pool.try_take().is_ok());
    assert!(members.peak.load(std::sync::atomic::Ordering::SeqCst) <= 4);
}

#[test]
fn lowering_queue_max_answers_the_excess_waiters() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let held = pool.try_take().unwrap();
    thread::scope(|s| {
        let mut waiters = Vec::new();
        for n in 0..3 {
            waiters.push(s.spawn(|| pool.take(LONG).map(|_| ())));
            eventually("the taker is queued", || pool.status().waiting == n + 1);
        }
        pool.reconfigure(|config| config.queue_max = 1).unwrap();
        let mut waiters = waiters.into_iter();
        let first = waiters.next().unwrap();
        for newer in waiters {
            assert!(matches!(newer.join().unwrap(), Err(TakeError::QueueFull)));
        }
        drop(held);
        first.join().unwrap().unwrap();
    });
    assert_eq!(pool.config().queue_max, 1);
}

#[test]
fn invalid_changes_are_refused_and_leave_the_config_unchanged() {
    let members = Members::new();
    let pool = pool(&members, 2);
    let before = pool.config();
    let err = pool
        .reconfigure(|config| {
            config.max_size = 1;
            config.soft_limit = Some(2);
        })
        .unwrap_err();
    assert_eq!(err.setting(), "soft_limit");
    assert_eq!(pool.config(), before);
    let err = pool.reconfigure(|config| config.max_size = 0).unwrap_err();
    assert_eq!(err.setting(), "max_size");
}

#[test]
fn setting_an_idle_timeout_later_starts_reaping() {
    let members = Members::new();
    let pool = pool(&members, 3);
    drop(pool.try_take().unwrap());
    pool.reconfigure(|config| {
        config.soft_limit = Some(0);
        config.idle_timeout = Some(Duration::from_millis(30));
    })
    .unwrap();
    eventually("the idle member is reaped", || pool.status().size == 0);
}

#[test]
fn lowering_max_size_while_takers_wait_drains_before_serving_them() {
    let members = Members::new();
    let pool = pool(&members, 4);
    let mut held: Vec<_> = (0..4).map(|_| pool.try_take().unwrap()).collect();
    thread::scope(|s| {
        // Each waiter keeps what it gets until joined, so one return cannot
        // reach both.
        let waiters: Vec<_> = (0..2).map(|_| s.spawn(|| pool.take(LONG))).collect();
        eventually("two takers wait", || pool.status().waiting == 2);
        pool.reconfigure(|config| config.max_size = 2).unwrap();
        // The first two returns are above the new size: destroyed, and
        // their slots go back rather than to a waiter, which would make a
        // new member and keep the pool at 4.
        drop(held.pop());
        drop(held.pop());
        assert_eq!(members.destroyed(), [4, 3]);
        let status = pool.status();
        assert_eq!((status.size, status.waiting), (2, 2));
        // The pool fits now: each return goes to a waiter.
        drop(held.pop());
        drop(held.pop());
        let served: Vec<_> = waiters
            .into_iter()
            .map(|w| w.join().unwrap().unwrap())
            .collect();
        let mut ids: Vec<u32> = served.iter().map(|m| m.id).collect();
        ids.sort();
        assert_eq!(ids, [1, 2]);
    });
    assert_eq!(members.live(), 2);
    assert_eq!(pool.stats().creates, 4, "nothing was made for the waiters");
}
