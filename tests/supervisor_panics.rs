//! A child's panic is caught, counted and reported through its handle with
//! its message; its slot is freed and the supervisor carries on.

mod support;
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
