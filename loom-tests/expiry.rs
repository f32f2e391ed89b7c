//! A capacity good until a deadline (`Resource::set_capacity_until`, the
//! fleet's grant): the first acquire past the deadline lowers the capacity
//! to the fallback, under a lock, after checking the deadline again.

use super::*;

use std::time::{Duration, Instant};

/// (y) Past the deadline, an acquiring thread races a renewal that arms a
/// new one: the renewal is never undone (the expiring thread checks the
/// deadline again under the lock), the bound holds at every step, and
/// exactly the capacity in force is admitted.
#[test]
fn a_renewal_racing_an_expiry_is_never_undone() {
    loom::model(|| {
        let resource = Arc::new(Resource::builder().capacity(1).shards(1).build().unwrap());
        resource
            .set_capacity_until(2, Instant::now() + Duration::from_secs(1), 0)
            .unwrap();
        sidejob::advance_loom_clock(Duration::from_secs(2));
        let acquirer = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                let permit = resource.try_acquire();
                assert!(resource.usage() <= 2);
                permit.is_ok()
            })
        };
        let renewer = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                resource
                    .set_capacity_until(2, Instant::now() + Duration::from_secs(3600), 0)
                    .unwrap();
            })
        };
        let admitted = acquirer.join().unwrap();
        renewer.join().unwrap();
        // Expired first (capacity 0, refused) then renewed, or renewed
        // first and admitted: either way the renewal stands.
        assert_eq!(resource.capacity(), 2);
        let held: Vec<_> = (0..2).filter_map(|_| resource.try_acquire().ok()).collect();
        assert_eq!(held.len(), 2);
        let _ = admitted;
    });
}
