//! One owner of a resource's capacity at a time: the user, an adaptive
//! limit, or a `CapacityLease` (a fleet node's). While a lease lives the
//! user's resizes are refused and no second lease is given; dropping it
//! gives the capacity back as the lease left it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::Resource;

#[test]
fn a_lease_owns_the_capacity_until_it_is_dropped() {
    let resource = Arc::new(Resource::new(4));
    let lease = resource.lease_capacity().unwrap();
    assert!(Arc::ptr_eq(lease.resource(), &resource));
    lease.set(6).unwrap();
    assert_eq!(resource.capacity(), 6);
    let refused = resource.set_capacity(2).unwrap_err();
    assert_eq!(refused.setting(), "capacity");
    assert!(refused.reason().contains("CapacityLease"), "{refused}");
    assert_eq!(resource.capacity(), 6, "a refused resize changes nothing");
    let second = resource.lease_capacity().unwrap_err();
    assert_eq!(second.setting(), "capacity");
    drop(lease);
    assert_eq!(resource.capacity(), 6, "left as the lease set it");
    resource.set_capacity(2).unwrap();
    assert_eq!(resource.capacity(), 2);
    // Given again once the first is gone.
    resource.lease_capacity().unwrap().set(3).unwrap();
    assert_eq!(resource.capacity(), 3);
}

#[test]
fn a_deadline_set_by_a_dropped_lease_still_lowers_the_capacity() {
    let resource = Arc::new(Resource::builder().capacity(1).shards(1).build().unwrap());
    resource
        .lease_capacity()
        .unwrap()
        .set_until(5, Instant::now() + Duration::from_millis(30), 1)
        .unwrap();
    assert_eq!(resource.capacity(), 5);
    std::thread::sleep(Duration::from_millis(120));
    let _permit = resource.try_acquire().unwrap();
    assert_eq!(resource.capacity(), 1);
}

#[test]
fn a_lease_writes_what_the_user_may_not_and_checks_the_same_bound() {
    let resource = Arc::new(Resource::new(2));
    let lease = resource.lease_capacity().unwrap();
    assert_eq!(lease.set(usize::MAX).unwrap_err().setting(), "capacity");
    assert_eq!(
        lease
            .set_until(4, Instant::now() + Duration::from_secs(60), usize::MAX)
            .unwrap_err()
            .setting(),
        "capacity"
    );
    // A deadline already past still checks the capacity (it used to set
    // the fallback and answer Ok; found by the adversarial review).
    assert_eq!(
        lease
            .set_until(usize::MAX, Instant::now() - Duration::from_secs(1), 1)
            .unwrap_err()
            .setting(),
        "capacity"
    );
    assert_eq!(resource.capacity(), 2);
    assert!(format!("{lease:?}").contains("CapacityLease"));
}
