//! Shutdown cancels every child, waits up to the grace period, and reports
//! the children that did not stop; afterwards spawns are refused. Children
//! that outlive the grace stay tracked until they end.

use std::sync::mpsc;
use std::time::Duration;

use sidejob::{SpawnError, Supervisor};

#[test]
fn cooperative_children_stop_within_the_grace() {
    let supervisor = Supervisor::new(8);
    let children: Vec<_> = (0..5)
        .map(|_| {
            supervisor
                .spawn(|context| context.wait_cancelled(Duration::from_secs(60)))
                .unwrap()
        })
        .collect();
    let report = supervisor.shutdown(Duration::from_secs(30));
    assert_eq!(report.cancelled, 5);
    assert!(report.remaining.is_empty());
    for child in children {
        assert!(child.join().unwrap(), "each child saw the cancellation");
    }
    assert!(matches!(
        supervisor.spawn(|_| ()),
        Err(SpawnError::Closed(_))
    ));
    assert_eq!(supervisor.stats().closed, 1);
}

#[test]
fn uncooperative_children_are_reported_and_stay_tracked() {
    let supervisor = Supervisor::new(4);
    let polite = supervisor
        .spawn(|context| context.wait_cancelled(Duration::from_secs(60)))
        .unwrap();
    let (release, hold) = mpsc::channel::<()>();
    let stubborn = supervisor
        .spawn(move |context| {
            hold.recv().unwrap(); // ignores cancellation
            context.is_cancelled()
        })
        .unwrap();
    let report = supervisor.shutdown(Duration::from_millis(50));
    assert_eq!(report.cancelled, 2);
    assert_eq!(report.remaining, [stubborn.id()]);
    assert!(polite.join().unwrap());
    assert_eq!(supervisor.which_children(), [stubborn.id()]);
    release.send(()).unwrap();
    assert!(stubborn.join().unwrap(), "it was asked to stop");
    assert_eq!(supervisor.count(), 0);
    let report = supervisor.shutdown(Duration::ZERO);
    assert!(report.remaining.is_empty());
}

#[test]
fn spawns_racing_shutdown_are_cancelled_or_refused() {
    for _ in 0..50 {
        let supervisor = Supervisor::builder()
            .capacity(64)
            .shards(2)
            .build()
            .unwrap();
        std::thread::scope(|scope| {
            let spawner = scope.spawn(|| {
                let mut handles = Vec::new();
                for _ in 0..20 {
                    match supervisor
                        .spawn(|context| context.wait_cancelled(Duration::from_secs(60)))
                    {
                        Ok(handle) => handles.push(handle),
                        Err(SpawnError::Closed(_)) => break,
                        Err(other) => panic!("unexpected {other}"),
                    }
                }
                handles
            });
            let report = supervisor.shutdown(Duration::from_secs(30));
            for handle in spawner.join().unwrap() {
                // Registered before the sweep: cancelled. Never left running.
                assert!(handle.join().unwrap());
            }
            assert!(report.remaining.is_empty());
        });
        assert_eq!(supervisor.count(), 0);
    }
}
