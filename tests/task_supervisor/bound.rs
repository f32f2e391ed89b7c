//! TaskSupervisor's bound (#18): many concurrent `try_spawn`s on a
//! multi-threaded runtime never have more than `capacity` children alive,
//! counted by the tasks themselves; everything adds up at the end.
#![cfg(feature = "tokio")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sidejob::{SpawnError, TaskSupervisor};

const CAPACITY: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_spawns_never_exceed_the_capacity() {
    let supervisor = TaskSupervisor::builder()
        .capacity(CAPACITY)
        .shards(2)
        .build()
        .unwrap();
    let alive = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let spawners: Vec<_> = (0..4)
        .map(|_| {
            let (supervisor, alive, peak) = (supervisor.clone(), alive.clone(), peak.clone());
            tokio::spawn(async move {
                let (mut admitted, mut refused, mut handles) = (0u64, 0u64, Vec::new());
                for _ in 0..2_000 {
                    let (alive, peak) = (alive.clone(), peak.clone());
                    match supervisor.try_spawn(move |_| async move {
                        let now = alive.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        alive.fetch_sub(1, Ordering::SeqCst);
                    }) {
                        Ok(handle) => {
                            admitted += 1;
                            handles.push(handle);
                        }
                        Err(SpawnError::Overload(_)) => refused += 1,
                        Err(other) => panic!("unexpected {other}"),
                    }
                    if handles.len() > 64 {
                        for handle in handles.drain(..) {
                            handle.await.unwrap();
                        }
                    }
                }
                for handle in handles {
                    handle.await.unwrap();
                }
                (admitted, refused)
            })
        })
        .collect();
    let (mut admitted, mut refused) = (0, 0);
    for spawner in spawners {
        let (a, r) = spawner.await.unwrap();
        admitted += a;
        refused += r;
    }
    assert!(peak.load(Ordering::SeqCst) <= CAPACITY);
    assert!(refused > 0, "the load went over the capacity");
    let stats = supervisor.stats();
    assert_eq!((stats.spawned, stats.rejected), (admitted, refused));
    assert_eq!(
        (stats.finished, stats.live, stats.panicked),
        (admitted, 0, 0)
    );
    assert_eq!(supervisor.count(), 0);
    assert!(supervisor.which_children().is_empty());
}

/// A task that is done at once, of one type for every child.
fn noop(_: sidejob::TaskContext) -> std::future::Ready<()> {
    std::future::ready(())
}

#[test]
fn which_children_follows_a_script_of_starts_and_finishes() {
    let supervisor = TaskSupervisor::builder()
        .capacity(4)
        .shards(2)
        .build()
        .unwrap();
    let mut live = Vec::new();
    let mut expected = Vec::new();
    // Start three, end the middle one, start one more, end the first.
    for _ in 0..3 {
        let task = supervisor.try_track(noop).unwrap();
        expected.push(task.id());
        live.push(task);
    }
    let check = |expected: &Vec<_>| {
        let mut sorted = expected.clone();
        sorted.sort();
        assert_eq!(supervisor.which_children(), sorted);
    };
    check(&expected);
    drop(live.remove(1));
    expected.remove(1);
    check(&expected);
    let task = supervisor.try_track(noop).unwrap();
    expected.push(task.id());
    live.push(task);
    check(&expected);
    // Completing counts as ending, as dropping does.
    let first = live.remove(0);
    expected.remove(0);
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(first);
    check(&expected);
    drop(live);
    assert!(supervisor.which_children().is_empty());
    let stats = supervisor.stats();
    assert_eq!((stats.spawned, stats.finished, stats.cancelled), (4, 4, 3));
}

#[test]
fn ids_are_unique_for_the_supervisors_life() {
    let supervisor = TaskSupervisor::builder()
        .capacity(2)
        .shards(2)
        .build()
        .unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..100 {
        let task = supervisor.try_track(noop).unwrap();
        assert!(seen.insert(task.id()), "id reused: {}", task.id());
    }
}
