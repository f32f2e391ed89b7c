//! Waiting takers, ported from CouchDB's couch_proc_manager tests (hard
//! limit 3): the 4th taker waits and gets the member the 1st returns, and
//! waiters are served first come, first served. An expired waiter is never
//! served late.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::support;
use sidejob::TakeError;
use support::objects::{eventually, pool, Members};

const LONG: Duration = Duration::from_secs(30);

#[test]
fn the_fourth_taker_waits_and_gets_the_member_the_first_returns() {
    let members = Members::new();
    let pool = pool(&members, 3);
    let first = pool.try_take().unwrap();
    let _second = pool.try_take().unwrap();
    let _third = pool.try_take().unwrap();
    let first_id = first.id;
    thread::scope(|s| {
        let fourth = s.spawn(|| pool.take(LONG).map(|member| member.id));
        eventually("the fourth taker waits", || pool.status().waiting == 1);
        assert_eq!(pool.status().size, 3, "nobody made a fourth member");
        drop(first);
        assert_eq!(fourth.join().unwrap().unwrap(), first_id);
    });
    let stats = pool.stats();
    assert_eq!((stats.creates, stats.waits, stats.takes), (3, 1, 4));
    assert_eq!(stats.wait.count, 1);
}

#[test]
fn waiters_are_served_in_arrival_order() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let held = pool.try_take().unwrap();
    let (served, order) = mpsc::channel();
    thread::scope(|s| {
        for taker in 0..5 {
            let served = served.clone();
            let pool = &pool;
            s.spawn(move || {
                let member = pool.take(LONG).unwrap();
                served.send(taker).unwrap();
                drop(member); // straight to the next waiter
            });
            // The next taker starts only once this one is queued.
            eventually("the taker is queued", || pool.status().waiting == taker + 1);
        }
        drop(held);
    });
    drop(served);
    assert_eq!(order.iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    assert_eq!(pool.stats().creates, 1, "one member served every taker");
}

#[test]
fn a_waiter_whose_time_ran_out_is_not_served() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let held = pool.try_take().unwrap();
    thread::scope(|s| {
        let impatient = s.spawn(|| pool.take(Duration::from_millis(50)).map(|_| ()));
        eventually("the impatient taker is queued", || {
            pool.status().waiting == 1
        });
        let patient = s.spawn(|| pool.take(LONG).map(|member| member.id));
        eventually("both takers are queued", || pool.status().waiting == 2);
        assert!(matches!(impatient.join().unwrap(), Err(TakeError::Timeout)));
        let held_id = held.id;
        drop(held);
        assert_eq!(patient.join().unwrap().unwrap(), held_id);
    });
    let stats = pool.stats();
    assert_eq!((stats.waits, stats.timeouts), (2, 1));
    assert_eq!(pool.status().waiting, 0);
}

#[test]
fn a_timed_out_take_leaves_no_trace() {
    let members = Members::new();
    let pool = pool(&members, 1);
    let held = pool.try_take().unwrap();
    let err = pool.take(Duration::from_millis(20)).unwrap_err();
    assert_eq!(err.to_string(), "timed out waiting for an object");
    let status = pool.status();
    assert_eq!((status.waiting, status.size, status.in_use), (0, 1, 1));
    drop(held);
    assert_eq!(pool.try_take().unwrap().id, 1);
}
