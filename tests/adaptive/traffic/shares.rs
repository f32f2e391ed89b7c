//! Defect 4: a share that rounds to no slot at the adaptive minimum used
//! to starve its priority for good (⌊0.9 × 1⌋ = 0, and a limit nothing is
//! admitted under never closes a window). It is a build error now.

use sidejob::adaptive::Adaptive;
use sidejob::{Priority, Resource};

#[test]
fn a_share_with_no_slot_at_the_minimum_limit_is_a_build_error() {
    let err = Resource::builder()
        .capacity(8)
        .share(Priority::Normal, 0.9)
        .adaptive(Adaptive::gradient().min_limit(1))
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "share");
    assert!(err.to_string().contains("min_limit"), "{err}");
    // A minimum that gives it a slot builds.
    let resource = Resource::builder()
        .capacity(8)
        .share(Priority::Normal, 0.9)
        .adaptive(Adaptive::gradient().min_limit(2))
        .build()
        .unwrap();
    resource.set_capacity(2).unwrap();
    assert!(resource.try_acquire_with(Priority::Normal).is_ok());
}
