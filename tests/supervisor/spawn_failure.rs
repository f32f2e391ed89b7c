//! If the OS refuses to start a child's thread, the spawn fails with the
//! closure handed back and the slot given back: nothing leaks.

use sidejob::{SpawnError, Supervisor};

#[test]
fn a_refused_thread_start_gives_the_slot_and_the_closure_back() {
    // A stack larger than the address space: the OS cannot start the thread.
    let supervisor = Supervisor::builder()
        .capacity(1)
        .shards(1)
        .stack_size(1 << 47)
        .build()
        .unwrap();
    for attempt in 0..3 {
        let label = format!("attempt {attempt}");
        match supervisor.spawn(move |_| label.len()) {
            // With capacity 1, a leaked slot would turn the next attempt
            // into an overload.
            Err(SpawnError::Thread(error, closure)) => {
                assert!(!error.to_string().is_empty());
                drop(closure); // handed back, with what it captured
            }
            other => panic!("attempt {attempt}: unexpected {other:?}"),
        }
        assert_eq!(supervisor.count(), 0);
    }
    let stats = supervisor.stats();
    assert_eq!((stats.spawn_failed, stats.spawned, stats.live), (3, 0, 0));
    assert_eq!(stats.shards[0].usage, 0);
    let err = supervisor.spawn(|_| ()).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("could not start the child's thread"));
    assert!(std::error::Error::source(&err).is_some());
}
