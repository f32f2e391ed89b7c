//! The bound is strict: never more live children than capacity, even with
//! many threads spawning at once; every slot is freed when its child ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use sidejob::{SpawnError, Supervisor};

#[test]
fn eight_spawning_threads_never_exceed_capacity() {
    const SPAWNERS: usize = 8;
    const ATTEMPTS: usize = 150;
    const CAPACITY: usize = 5;
    let supervisor = Supervisor::builder()
        .capacity(CAPACITY)
        .shards(3)
        .build()
        .unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let start = Barrier::new(SPAWNERS);
    let (spawned, refused) = thread::scope(|scope| {
        let spawners: Vec<_> = (0..SPAWNERS)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    let (mut handles, mut refused) = (Vec::new(), 0);
                    for _ in 0..ATTEMPTS {
                        let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
                        match supervisor.spawn(move |_| {
                            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(now, Ordering::SeqCst);
                            assert!(now <= CAPACITY, "{now} children running");
                            thread::yield_now();
                            running.fetch_sub(1, Ordering::SeqCst);
                        }) {
                            Ok(handle) => handles.push(handle),
                            Err(SpawnError::Overload(_)) => refused += 1,
                            Err(other) => panic!("unexpected {other}"),
                        }
                        assert!(supervisor.count() <= CAPACITY);
                    }
                    let spawned = handles.len();
                    for handle in handles {
                        handle.join().expect("no child panics");
                    }
                    (spawned, refused)
                })
            })
            .collect();
        spawners
            .into_iter()
            .map(|s| s.join().unwrap())
            .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
    });
    assert_eq!(spawned + refused, SPAWNERS * ATTEMPTS);
    assert!(spawned >= CAPACITY, "only {spawned} children spawned");
    assert!(peak.load(Ordering::SeqCst) <= CAPACITY);
    let stats = supervisor.stats();
    assert_eq!(stats.spawned, spawned as u64);
    assert_eq!(stats.rejected, refused as u64);
    assert_eq!(stats.finished, stats.spawned);
    assert_eq!((stats.live, supervisor.count()), (0, 0));
    assert!(stats.shards.iter().all(|s| s.usage == 0));
}

#[test]
fn shrinking_stops_no_child_and_refuses_until_under_the_new_capacity() {
    use std::sync::mpsc;
    let supervisor = Supervisor::builder().capacity(4).shards(2).build().unwrap();
    let (release, hold) = mpsc::channel::<()>();
    let hold = Arc::new(std::sync::Mutex::new(hold));
    let children: Vec<_> = (0..4)
        .map(|_| {
            let hold = Arc::clone(&hold);
            supervisor
                .spawn(move |_| hold.lock().unwrap().recv().unwrap())
                .unwrap()
        })
        .collect();
    supervisor.set_capacity(2).unwrap();
    assert_eq!(supervisor.count(), 4, "no child is stopped");
    assert!(supervisor.spawn(|_| ()).unwrap_err().is_overload());
    // Let two end: still at the new capacity, so still refused.
    release.send(()).unwrap();
    release.send(()).unwrap();
    while supervisor.count() > 2 {
        thread::yield_now();
    }
    assert!(supervisor.spawn(|_| ()).unwrap_err().is_overload());
    release.send(()).unwrap();
    release.send(()).unwrap();
    for child in children {
        child.join().unwrap();
    }
    let a = supervisor.spawn(|_| ()).unwrap();
    let b = supervisor.spawn(|_| ()).unwrap();
    a.join().unwrap();
    b.join().unwrap();
}

#[test]
fn a_capacity_the_shards_cannot_hold_is_an_error_and_changes_nothing() {
    let supervisor = Supervisor::builder().capacity(1).shards(1).build().unwrap();
    let err = supervisor.set_capacity(usize::MAX).unwrap_err();
    assert_eq!(err.setting(), "capacity");
    assert_eq!(supervisor.capacity(), 1);
    supervisor.spawn(|_| ()).unwrap().join().unwrap();
}
