//! A child's panic is caught, counted and reported through its handle with
//! its message; its slot is freed and the supervisor carries on.

use crate::support;
use sidejob::Supervisor;
use support::panics::quiet_deliberate_panics;

#[test]
fn a_panicking_child_is_reported_and_its_slot_freed() {
    quiet_deliberate_panics();
    let supervisor = Supervisor::builder().capacity(1).shards(1).build().unwrap();
    for _ in 0..3 {
        let child = supervisor
            .spawn(|_| -> u8 { panic!("deliberate: bad input") })
            .unwrap();
        let err = child.join().unwrap_err();
        assert_eq!(err.message(), "deliberate: bad input");
        assert_eq!(err.to_string(), "child panicked: deliberate: bad input");
        assert_eq!(supervisor.count(), 0);
    }
    // Capacity 1, three panics: the slot came back every time.
    assert_eq!(supervisor.spawn(|_| 7).unwrap().join().unwrap(), 7);
    let stats = supervisor.stats();
    assert_eq!((stats.spawned, stats.finished, stats.panicked), (4, 4, 3));
    assert_eq!(stats.shards[0].usage, 0);
}

/// Panics when dropped.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("deliberate: a panic payload whose Drop panics");
    }
}

/// A child whose panic payload panics when dropped still leaves the live
/// set and frees its slot (#39, found by the adversarial review).
#[test]
fn a_panic_payload_that_panics_when_dropped_still_frees_the_slot() {
    quiet_deliberate_panics();
    let supervisor = Supervisor::builder().capacity(1).shards(1).build().unwrap();
    let child = supervisor
        .spawn(|_| -> () { std::panic::panic_any(Bomb) })
        .unwrap();
    assert!(child.join().is_err());
    assert_eq!(supervisor.count(), 0);
    assert!(supervisor.which_children().is_empty());
    supervisor
        .spawn(|_| ())
        .expect("the slot is free")
        .join()
        .unwrap();
}
