//! The supervisor's protocol: slots, live sets and shutdown.

use super::*;
use sidejob::{SpawnError, Supervisor};

/// (f) Two threads spawn at once into a supervisor with room for one:
/// never two live children, every attempt accounted for, and the live
/// set empty once the children are joined.
#[test]
fn concurrent_spawns_at_the_bound() {
    loom::model(|| {
        let supervisor = Arc::new(Supervisor::builder().capacity(1).shards(2).build().unwrap());
        let holders = Arc::new(Holders::new(1));
        let spawners: Vec<_> = (0..2)
            .map(|_| {
                let supervisor = Arc::clone(&supervisor);
                let holders = Arc::clone(&holders);
                thread::spawn(move || {
                    let holders = Arc::clone(&holders);
                    match supervisor.spawn(move |_| {
                        holders.enter();
                        holders.leave();
                    }) {
                        Ok(child) => {
                            child.join().unwrap();
                            true
                        }
                        Err(SpawnError::Overload(_)) => false,
                        Err(other) => panic!("unexpected {other}"),
                    }
                })
            })
            .collect();
        let spawned = spawners
            .into_iter()
            .map(|s| s.join().unwrap())
            .filter(|&ok| ok)
            .count() as u64;
        assert!(spawned >= 1);
        let stats = supervisor.stats();
        assert_eq!(stats.spawned + stats.rejected, 2);
        assert_eq!((stats.spawned, stats.finished), (spawned, spawned));
        assert!(supervisor.which_children().is_empty());
        assert_eq!(stats.shards.iter().map(|s| s.usage).sum::<usize>(), 0);
    });
}

/// (g) A child ends while another thread spawns: the spawn either finds
/// the slot still taken (refused) or freed (admitted), the live set
/// never shows more than one child, and everything drains.
#[test]
fn a_child_ending_while_another_spawns() {
    loom::model(|| {
        let supervisor = Arc::new(Supervisor::builder().capacity(1).shards(1).build().unwrap());
        let first = supervisor.spawn(|_| ()).unwrap();
        let spawner = {
            let supervisor = Arc::clone(&supervisor);
            thread::spawn(move || {
                assert!(supervisor.count() <= 1);
                supervisor
                    .spawn(|_| ())
                    .ok()
                    .map(|child| child.join().unwrap())
            })
        };
        first.join().unwrap();
        let second = spawner.join().unwrap();
        let stats = supervisor.stats();
        assert_eq!(stats.spawned, 1 + u64::from(second.is_some()));
        assert_eq!(stats.finished, stats.spawned);
        assert!(supervisor.which_children().is_empty());
        // The slot is free again.
        supervisor.spawn(|_| ()).unwrap().join().unwrap();
    });
}

/// (g') A shutdown races a spawn through the shared live set: the spawn is
/// either registered before the shutdown visits its shard (then swept:
/// asked to stop, or already gone) or refused as closed, never registered
/// after; every attempt is counted once and the slot ends free.
#[test]
fn a_shutdown_racing_a_spawn() {
    loom::model(|| {
        let supervisor = Arc::new(Supervisor::builder().capacity(1).shards(1).build().unwrap());
        let spawner = {
            let supervisor = Arc::clone(&supervisor);
            thread::spawn(
                move || match supervisor.spawn(|context| context.is_cancelled()) {
                    Ok(child) => Some(child.join().unwrap()),
                    Err(SpawnError::Closed(_)) => None,
                    Err(other) => panic!("unexpected {other}"),
                },
            )
        };
        let report = supervisor.shutdown(std::time::Duration::ZERO);
        let spawned = spawner.join().unwrap();
        assert!(report.cancelled <= 1);
        let stats = supervisor.stats();
        assert_eq!(stats.spawned + stats.closed, 1, "{stats:?}");
        assert_eq!(stats.spawned, u64::from(spawned.is_some()));
        assert_eq!(stats.finished, stats.spawned);
        assert!(supervisor.which_children().is_empty());
        assert_eq!(stats.shards.iter().map(|s| s.usage).sum::<usize>(), 0);
        // Refused from now on, whatever the interleaving.
        assert!(matches!(
            supervisor.spawn(|_| false),
            Err(SpawnError::Closed(_))
        ));
    });
}

/// (g'') A shutdown with no deadline and a child that sleeps until asked to
/// stop: the shutdown's cancellation wakes the child blocked in
/// `wait_cancelled`, and the child's leave signals the drain the shutdown
/// waits on. Neither wake may be lost: loom reports a lost one as a
/// deadlock.
#[test]
fn a_shutdown_waits_for_the_child_it_asked_to_stop() {
    loom::model(|| {
        let supervisor = Supervisor::builder().capacity(1).shards(1).build().unwrap();
        let child = supervisor
            .spawn(|context| context.wait_cancelled(std::time::Duration::MAX))
            .unwrap();
        let report = supervisor.shutdown(std::time::Duration::MAX);
        assert_eq!(report.cancelled, 1);
        assert!(report.remaining.is_empty());
        assert_eq!(supervisor.count(), 0);
        assert!(child.join().unwrap(), "it saw itself cancelled");
    });
}
