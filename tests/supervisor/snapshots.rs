//! `Supervisor::which_children` and `shutdown` against threads the OS
//! refuses and children that come and go (#39, defects 4 and 5):
//! `which_children` is one snapshot (every shard's set locked at once), so
//! it never lists more children than were alive together, and never one
//! whose thread the OS refused; a refused start during `shutdown` wakes it
//! as an ending child does and is not reported as cancelled, whatever the
//! grace; a running child always finds itself listed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use sidejob::{SpawnError, Supervisor};

/// A stack larger than the address space: the OS cannot start the thread.
const REFUSED_STACK: usize = 1 << 47;

#[test]
fn a_relay_of_one_child_at_a_time_never_shows_two() {
    let supervisor = Arc::new(Supervisor::builder().capacity(1).shards(4).build().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let watchers: Vec<_> = (0..2)
        .map(|_| {
            let (supervisor, stop) = (Arc::clone(&supervisor), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut most = 0;
                while !stop.load(Ordering::Relaxed) {
                    most = most.max(supervisor.which_children().len());
                }
                most
            })
        })
        .collect();
    // Two drivers pass a baton: each spawns a child from its own thread
    // (so on its own home shard), joins it, and hands over. One child is
    // alive at a time, on alternating shards.
    let (to_a, a_turn) = std::sync::mpsc::channel::<u32>();
    let (to_b, b_turn) = std::sync::mpsc::channel::<u32>();
    let driver = |turn: std::sync::mpsc::Receiver<u32>, next: std::sync::mpsc::Sender<u32>| {
        let supervisor = Arc::clone(&supervisor);
        std::thread::spawn(move || {
            while let Ok(left) = turn.recv() {
                if left == 0 {
                    let _ = next.send(0);
                    return;
                }
                // The slot is back once `join` returns: the next spawn is
                // admitted.
                supervisor.spawn(|_| ()).unwrap().join().unwrap();
                let _ = next.send(left - 1);
            }
        })
    };
    let drivers = [driver(a_turn, to_b.clone()), driver(b_turn, to_a.clone())];
    to_a.send(4000).unwrap();
    for driver in drivers {
        driver.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for watcher in watchers {
        let most = watcher.join().unwrap();
        assert!(
            most <= 1,
            "listed {most} children, with one alive at a time"
        );
    }
}

#[test]
fn a_child_whose_thread_is_refused_never_shows() {
    let supervisor = Arc::new(
        Supervisor::builder()
            .capacity(2)
            .shards(2)
            .stack_size(REFUSED_STACK)
            .build()
            .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (supervisor, stop) = (Arc::clone(&supervisor), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut seen = 0;
            while !stop.load(Ordering::Relaxed) {
                seen += supervisor.which_children().len();
            }
            seen
        })
    };
    for _ in 0..3000 {
        assert!(matches!(
            supervisor.spawn(|_| ()),
            Err(SpawnError::Thread(..))
        ));
    }
    stop.store(true, Ordering::Relaxed);
    assert_eq!(watcher.join().unwrap(), 0, "a refused child was listed");
}

#[test]
fn a_refused_start_during_shutdown_neither_holds_it_nor_counts_as_cancelled() {
    // Far longer than a shutdown with nothing alive takes.
    let grace = Duration::from_secs(2);
    for round in 0..40 {
        let supervisor = Arc::new(
            Supervisor::builder()
                .capacity(8)
                .shards(2)
                .stack_size(REFUSED_STACK)
                .build()
                .unwrap(),
        );
        // Spawners whose threads the OS refuses, again and again, until
        // the supervisor closes: a shutdown meets some between their
        // registration and the refusal.
        let together = Arc::new(Barrier::new(5));
        let spawners: Vec<_> = (0..4)
            .map(|_| {
                let (supervisor, together) = (Arc::clone(&supervisor), Arc::clone(&together));
                std::thread::spawn(move || {
                    together.wait();
                    while !matches!(supervisor.spawn(|_| ()), Err(SpawnError::Closed(_))) {}
                })
            })
            .collect();
        together.wait();
        std::thread::yield_now();
        let began = Instant::now();
        let report = supervisor.shutdown(grace);
        let took = began.elapsed();
        for spawner in spawners {
            spawner.join().unwrap();
        }
        assert!(took < grace, "round {round}: shutdown waited out its grace");
        assert_eq!(report.cancelled, 0, "round {round}: {report:?}");
        assert!(report.remaining.is_empty(), "round {round}: {report:?}");
    }
}

#[test]
fn refused_starts_racing_a_shutdown_with_no_grace_are_not_cancelled() {
    for round in 0..300 {
        let supervisor = Arc::new(
            Supervisor::builder()
                .capacity(4)
                .shards(2)
                .stack_size(REFUSED_STACK)
                .build()
                .unwrap(),
        );
        let spawner = {
            let supervisor = Arc::clone(&supervisor);
            std::thread::spawn(move || {
                while !matches!(supervisor.spawn(|_| ()), Err(SpawnError::Closed(_))) {}
            })
        };
        std::thread::sleep(Duration::from_micros(200));
        // The report waits for every start to resolve, even with no grace.
        let report = supervisor.shutdown(Duration::ZERO);
        spawner.join().unwrap();
        assert_eq!(report.cancelled, 0, "round {round}: {report:?}");
        assert!(report.remaining.is_empty(), "round {round}: {report:?}");
    }
}

#[test]
fn a_running_child_finds_itself_listed() {
    let supervisor = Arc::new(
        Supervisor::builder()
            .capacity(64)
            .shards(1)
            .build()
            .unwrap(),
    );
    for _ in 0..3000 {
        let listed = Arc::clone(&supervisor);
        let child = supervisor
            .spawn(move |context| listed.which_children().contains(&context.id()))
            .unwrap();
        assert!(child.join().unwrap(), "a running child was not listed");
    }
}
