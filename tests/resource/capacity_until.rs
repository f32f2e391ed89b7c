//! A capacity good until a deadline (`CapacityLease::set_until`): past
//! it, the first acquire lowers the capacity to the fallback itself, so
//! threads that resume together after a pause admit nothing on the stale
//! capacity; a renewal before the deadline keeps it; `set_capacity`, once
//! the lease is dropped, ends it. The sleeps let deadlines pass, with wide margins.

use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use sidejob::{Overload, Resource};

const SHORT: Duration = Duration::from_millis(50);

fn resource(capacity: usize, shards: usize) -> Arc<Resource> {
    Arc::new(
        Resource::builder()
            .capacity(capacity)
            .shards(shards)
            .build()
            .unwrap(),
    )
}

/// Sets `resource`'s capacity to `capacity` until `until`, and to
/// `fallback` from then on, through a lease dropped at once (its deadline
/// still holds).
fn lease_until(resource: &Arc<Resource>, capacity: usize, until: Instant, fallback: usize) {
    resource
        .lease_capacity()
        .unwrap()
        .set_until(capacity, until, fallback)
        .unwrap();
}

#[test]
fn past_the_deadline_the_first_acquire_lowers_the_capacity_to_the_fallback() {
    let resource = resource(1, 2);
    lease_until(&resource, 4, Instant::now() + SHORT, 1);
    let held: Vec<_> = (0..4).map(|_| resource.try_acquire().unwrap()).collect();
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    drop(held);
    thread::sleep(SHORT * 3);
    let permit = resource.try_acquire().unwrap();
    assert_eq!(resource.capacity(), 1);
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    drop(permit);
    let owned = resource;
    let permit = owned.try_acquire_owned().unwrap();
    assert!(owned.try_acquire_owned().is_err(), "owned permits too");
    drop(permit);
}

#[test]
fn a_deadline_already_past_sets_the_fallback_at_once() {
    let resource = resource(3, 1);
    lease_until(&resource, 8, Instant::now() - SHORT, 2);
    assert_eq!(resource.capacity(), 2);
}

#[test]
fn a_renewal_before_the_deadline_keeps_the_capacity() {
    let resource = resource(1, 1);
    for _ in 0..4 {
        lease_until(&resource, 3, Instant::now() + SHORT * 4, 0);
        thread::sleep(SHORT);
        let held: Vec<_> = (0..3).map(|_| resource.try_acquire().unwrap()).collect();
        assert_eq!(resource.capacity(), 3);
        drop(held);
    }
}

#[test]
fn set_capacity_ends_the_deadline() {
    let resource = resource(1, 1);
    lease_until(&resource, 3, Instant::now() + SHORT, 0);
    resource.set_capacity(2).unwrap();
    thread::sleep(SHORT * 3);
    let held: Vec<_> = (0..2).map(|_| resource.try_acquire().unwrap()).collect();
    assert_eq!(resource.capacity(), 2);
    drop(held);
}

#[test]
fn held_permits_are_not_revoked_and_nothing_more_is_admitted() {
    let resource = resource(1, 2);
    lease_until(&resource, 4, Instant::now() + SHORT, 1);
    let held: Vec<_> = (0..3).map(|_| resource.try_acquire().unwrap()).collect();
    thread::sleep(SHORT * 3);
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    assert_eq!((resource.capacity(), resource.usage()), (1, 3));
    drop(held);
    assert!(resource.try_acquire().is_ok());
}

/// Threads that all pass a barrier after the deadline, as a stopped
/// process's threads resume together: together they get at most the
/// fallback, never the stale capacity.
#[test]
fn threads_resuming_together_past_the_deadline_get_at_most_the_fallback() {
    for _ in 0..20 {
        let resource = resource(1, 4);
        lease_until(&resource, 16, Instant::now() + SHORT / 5, 2);
        let barrier = Arc::new(Barrier::new(8));
        let granted = Arc::new(Mutex::new(Vec::new()));
        thread::sleep(SHORT);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (resource, barrier) = (Arc::clone(&resource), Arc::clone(&barrier));
                let granted = Arc::clone(&granted);
                thread::spawn(move || {
                    barrier.wait();
                    if let Ok(permit) = resource.try_acquire_owned() {
                        granted.lock().unwrap().push(permit);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(granted.lock().unwrap().len(), 2, "exactly the fallback");
        assert_eq!(resource.capacity(), 2);
    }
}

#[test]
fn a_fallback_too_large_is_an_error_naming_capacity_and_changes_nothing() {
    let resource = resource(2, 1);
    let error = resource
        .lease_capacity()
        .unwrap()
        .set_until(4, Instant::now() + SHORT, usize::MAX)
        .unwrap_err();
    assert_eq!(error.setting(), "capacity");
    let error = resource
        .lease_capacity()
        .unwrap()
        .set_until(usize::MAX, Instant::now() + SHORT, 1)
        .unwrap_err();
    assert_eq!(error.setting(), "capacity");
    thread::sleep(SHORT * 3);
    let held: Vec<_> = (0..2).map(|_| resource.try_acquire().unwrap()).collect();
    assert_eq!(resource.capacity(), 2);
    drop(held);
}

/// A deadline further off than the coarse clock's lag (a fleet's lease,
/// renewed seconds ahead): while it is far, acquires check it on the
/// kernel's coarse clock, near it on the precise one. Acquires run back to
/// back across the deadline: each admitted one started before it, and none
/// after it is admitted.
#[test]
fn a_far_deadline_is_kept_as_closely_as_a_near_one() {
    let resource = resource(1, 2);
    let until = Instant::now() + Duration::from_millis(1300);
    lease_until(&resource, 4, until, 1);
    // The fallback's one slot, held throughout: past the deadline every
    // acquire must be refused.
    let _held = resource.try_acquire().unwrap();
    let (mut admitted_while_far, mut refused_after) = (0u64, 0u64);
    loop {
        let started = Instant::now();
        if started > until + SHORT * 4 {
            break;
        }
        match resource.try_acquire() {
            Ok(permit) => {
                // The precise clock is the time-stamp counter, scaled to
                // the OS clock `until` is on: a few µs of slack.
                assert!(
                    started < until + Duration::from_millis(2),
                    "admitted {:?} past the deadline",
                    started - until
                );
                if started + Duration::from_secs(1) < until {
                    admitted_while_far += 1;
                }
                drop(permit);
            }
            Err(Overload) => {
                assert!(
                    started + Duration::from_millis(2) > until,
                    "refused {:?} before the deadline",
                    until - started
                );
                refused_after += 1;
            }
        }
    }
    assert!(admitted_while_far > 0, "the far part was acquired in");
    assert!(refused_after > 0, "the deadline passed while acquiring");
    assert_eq!(resource.capacity(), 1);
}

/// Past the deadline with every slot held and the capacity scarce, an
/// acquire is refused without reading the clock (it admits nothing either
/// way), but reading the capacity or the stats lowers it to the fallback,
/// as an acquire would: they never show the lease's capacity past its end.
#[test]
fn past_the_deadline_the_capacity_and_stats_read_the_fallback() {
    let resource = resource(1, 2);
    lease_until(&resource, 4, Instant::now() + SHORT, 1);
    let held: Vec<_> = (0..4).map(|_| resource.try_acquire().unwrap()).collect();
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    thread::sleep(SHORT * 3);
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    assert_eq!(
        resource.stats().capacity,
        1,
        "the stats read past the deadline"
    );
    assert_eq!(resource.capacity(), 1);
    drop(held);
    let permit = resource.try_acquire().unwrap();
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    drop(permit);
}

/// A fallback above the leased capacity (a fleet's floor above a small
/// grant): past the deadline the fallback is in force at once, even while
/// the lease's slots are all held, for every priority.
#[test]
fn a_fallback_above_the_capacity_is_in_force_past_the_deadline() {
    for leased in [0, 1] {
        let resource = resource(1, 1);
        lease_until(&resource, leased, Instant::now() + SHORT, 4);
        let held: Vec<_> = (0..leased)
            .map(|_| resource.try_acquire().unwrap())
            .collect();
        // Refused: every slot of the lease is held, and the capacity scarce.
        assert_eq!(resource.try_acquire().unwrap_err(), Overload);
        thread::sleep(SHORT * 3);
        let admitted: Vec<_> = (0..4 - leased)
            .map(|_| resource.try_acquire())
            .collect::<Result<_, _>>()
            .unwrap_or_else(|_| {
                panic!("lease {leased}: the fallback of 4 refused past the deadline")
            });
        assert_eq!(resource.try_acquire().unwrap_err(), Overload);
        assert_eq!(resource.capacity(), 4);
        drop((held, admitted));
    }
}
