//! Defect 9: a user's `set_capacity` and the governor no longer race
//! silently. A resize that comes while a window closes wins (the window's
//! write used to overwrite it), and a capacity outside the adaptive
//! bounds is refused (`set_capacity(0)` used to freeze the limit for good:
//! nothing admitted, nothing released, no window closed).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use sidejob::adaptive::{Adaptive, Window};
use sidejob::Resource;

#[test]
fn a_resize_during_a_windows_close_wins() {
    let (reached, at_rule) = mpsc::channel::<()>();
    let (resume, resumed) = mpsc::channel::<()>();
    let resumed = Mutex::new(resumed);
    let reached = Mutex::new(reached);
    let rule = move |limit: usize, _: &Window| {
        // The first close: let the test resize now, then propose 2 less.
        if reached.lock().unwrap().send(()).is_ok() {
            let _ = resumed.lock().unwrap().recv();
        }
        limit - 2
    };
    let resource = Arc::new(
        Resource::builder()
            .capacity(8)
            .adaptive(
                Adaptive::custom(rule)
                    .window(Duration::from_millis(10))
                    .min_samples(1),
            )
            .build()
            .unwrap(),
    );
    let releaser = {
        let resource = Arc::clone(&resource);
        thread::spawn(move || {
            let permit = resource.try_acquire().unwrap();
            thread::sleep(Duration::from_millis(30));
            drop(permit); // past the window: closes it, in the rule
        })
    };
    at_rule.recv().unwrap();
    resource.set_capacity(3).unwrap();
    drop(at_rule); // later closes go on without waiting
    resume.send(()).unwrap();
    releaser.join().unwrap();
    assert_eq!(
        resource.capacity(),
        3,
        "the window overwrote the user's resize"
    );
}

#[test]
fn a_capacity_outside_the_adaptive_bounds_is_refused_and_no_lease_is_given() {
    let resource = std::sync::Arc::new(
        Resource::builder()
            .capacity(8)
            .adaptive(Adaptive::gradient().min_limit(2).max_limit(32))
            .build()
            .unwrap(),
    );
    for bad in [0, 1, 33] {
        let err = resource.set_capacity(bad).unwrap_err();
        assert_eq!(err.setting(), "capacity", "{bad}");
    }
    assert_eq!(resource.capacity(), 8);
    // The adaptive limit owns the capacity: no lease (a fleet's) over it.
    let err = resource.lease_capacity().unwrap_err();
    assert_eq!(err.setting(), "capacity");
    assert!(err.reason().contains("adaptive"), "{err}");
    assert_eq!(resource.capacity(), 8);
    resource.set_capacity(2).unwrap();
    assert_eq!(resource.capacity(), 2);
}
