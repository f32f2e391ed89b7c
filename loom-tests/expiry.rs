//! A capacity good until a deadline (`CapacityLease::set_until`, the
//! fleet's grant): the first acquire past the deadline lowers the capacity
//! to the fallback, under a lock, after checking the deadline again.

use super::*;

use std::time::{Duration, Instant};

use sidejob::CapacityLease;

/// A resource of `shards` shards whose lease sets its capacity to
/// `capacity` for `lasting`, then to 0; and the lease.
fn leased(shards: usize, capacity: usize, lasting: Duration) -> (Arc<Resource>, CapacityLease) {
    let resource = Arc::new(
        Resource::builder()
            .capacity(1)
            .shards(shards)
            .build()
            .unwrap(),
    );
    let lease = resource.lease_capacity().unwrap();
    lease
        .set_until(capacity, Instant::now() + lasting, 0)
        .unwrap();
    (resource, lease)
}

/// A thread that tries one acquire, checks that usage is at most `most`
/// meanwhile, and answers whether it was admitted.
fn acquirer(resource: &Arc<Resource>, most: usize) -> thread::JoinHandle<bool> {
    let resource = Arc::clone(resource);
    thread::spawn(move || {
        let permit = resource.try_acquire();
        assert!(resource.usage() <= most);
        permit.is_ok()
    })
}

/// (y) Past the deadline, an acquiring thread races a renewal that arms a
/// new one: the renewal is never undone (the expiring thread checks the
/// deadline again under the lock), the bound holds at every step, and
/// exactly the capacity in force is admitted.
#[test]
fn a_renewal_racing_an_expiry_is_never_undone() {
    loom::model(|| {
        let (resource, lease) = leased(1, 2, Duration::from_secs(1));
        sidejob::advance_loom_clock(Duration::from_secs(2));
        let acquirer = acquirer(&resource, 2);
        let renewer = thread::spawn(move || {
            lease
                .set_until(2, Instant::now() + Duration::from_secs(3600), 0)
                .unwrap();
            lease
        });
        let admitted = acquirer.join().unwrap();
        let _lease = renewer.join().unwrap();
        // Expired first (capacity 0, refused) then renewed, or renewed
        // first and admitted: either way the renewal stands.
        assert_eq!(resource.capacity(), 2);
        let held: Vec<_> = (0..2).filter_map(|_| resource.try_acquire().ok()).collect();
        assert_eq!(held.len(), 2);
        let _ = admitted;
    });
}

/// (y'') An acquire checking a far deadline on the coarse clock races a
/// renewal that brings the deadline near and the capacity down: the bound
/// of the capacity in force holds at every step, and once the near
/// deadline has passed no acquire answers from the far one (the renewal
/// takes the coarse bound down with it).
#[test]
fn a_renewal_bringing_the_deadline_near_ends_the_coarse_check() {
    loom::model(|| {
        let (resource, lease) = leased(1, 2, Duration::from_secs(3600));
        let acquirer = acquirer(&resource, 2);
        lease
            .set_until(1, Instant::now() + Duration::from_millis(500), 0)
            .unwrap();
        let _admitted = acquirer.join().unwrap();
        sidejob::advance_loom_clock(Duration::from_secs(1));
        assert!(resource.try_acquire().is_err(), "past the near deadline");
        assert_eq!(resource.capacity(), 0);
    });
}

/// (y''') Past the deadline, on a scarce capacity with every slot held, an
/// acquire races a release: it may be refused on the reserve's word alone
/// (no clock read), or read the clock, lower the capacity to the fallback
/// and be refused; it is never admitted, and the capacity ends at the
/// fallback.
#[test]
fn a_refusal_read_off_the_reserve_past_the_deadline_admits_nothing() {
    loom::model(|| {
        let (resource, lease) = leased(2, 2, Duration::from_secs(1));
        let first = resource.try_acquire_owned().unwrap();
        let second = resource.try_acquire_owned().unwrap();
        // A genuine refusal turns the capacity scarce.
        assert!(resource.try_acquire().is_err());
        sidejob::advance_loom_clock(Duration::from_secs(2));
        let releaser = thread::spawn(move || drop(first));
        assert!(resource.try_acquire().is_err(), "past the deadline");
        releaser.join().unwrap();
        drop(second);
        assert!(resource.try_acquire().is_err(), "the fallback is 0");
        assert_eq!(resource.capacity(), 0);
        drop(lease);
    });
}

/// (y') A user's resize races a lease taking the capacity (a fleet
/// joining): the resize lands before the claim, and the lease's write
/// follows it, or it is refused; never after the lease's write.
#[test]
fn a_users_resize_racing_a_lease_never_overwrites_it() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(1).shards(1).build().unwrap());
        let user = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.set_capacity(3).is_ok())
        };
        let lease = resource.lease_capacity().unwrap();
        lease.set(5).unwrap();
        let _resized = user.join().unwrap();
        assert_eq!(resource.capacity(), 5);
        assert!(resource.set_capacity(3).is_err(), "the lease owns it");
        drop(lease);
        resource.set_capacity(3).unwrap();
        assert_eq!(resource.capacity(), 3);
    });
}
