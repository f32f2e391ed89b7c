//! A take's deadline covers `check_on_take` (#27): with a `check` that does
//! not answer, `take(timeout)` returns `Timeout` by its deadline; the object
//! being checked is never handed out, and once the check returns it is
//! destroyed (its state is unknown) and its slot freed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sidejob::{Manager, ObjectPool, TakeError};

/// Objects whose check, while `hang` is set, waits until the test drops
/// the other end of `release`.
#[derive(Debug)]
struct Hanging {
    hang: AtomicBool,
    release: Mutex<Receiver<()>>,
    made: AtomicUsize,
    destroyed: AtomicUsize,
}

/// The pool's handle on the shared [`Hanging`].
#[derive(Debug)]
struct Conns(Arc<Hanging>);

impl Manager for Conns {
    type Object = usize;
    type Error = std::io::Error;

    fn create(&self) -> std::io::Result<usize> {
        Ok(self.0.made.fetch_add(1, Ordering::SeqCst))
    }

    fn check(&self, _object: &mut usize) -> bool {
        if self.0.hang.load(Ordering::SeqCst) {
            let _ = self.0.release.lock().unwrap().recv();
        }
        true
    }

    fn destroy(&self, _object: usize) {
        self.0.destroyed.fetch_add(1, Ordering::SeqCst);
    }
}

fn hanging() -> (Arc<Hanging>, Sender<()>) {
    let (release, wait) = channel();
    let manager = Arc::new(Hanging {
        hang: AtomicBool::new(false),
        release: Mutex::new(wait),
        made: AtomicUsize::new(0),
        destroyed: AtomicUsize::new(0),
    });
    (manager, release)
}

/// Polls `done` until it holds, failing after a generous 10 s.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_take_returns_by_its_deadline_when_check_hangs_and_the_object_is_destroyed_later() {
    let (manager, release) = hanging();
    let pool = ObjectPool::builder(Conns(manager.clone()))
        .max_size(1)
        .check_on_take(true)
        .build()
        .unwrap();
    drop(pool.try_take().unwrap()); // one idle object
    manager.hang.store(true, Ordering::SeqCst);

    // Without the bound, this take would wait for the check forever.
    let taken = pool.take(Duration::from_millis(100));
    assert!(matches!(taken, Err(TakeError::Timeout)), "{taken:?}");
    let stats = pool.stats();
    assert_eq!((stats.timeouts, stats.failed_take_checks), (1, 1));
    assert_eq!(stats.takes, 1, "the object was never handed out");

    // The object still exists, held by the check: it keeps its slot, so
    // the pool stays within max_size and a second take times out too.
    assert_eq!(pool.status().size, 1);
    assert_eq!(pool.status().idle, 0);
    assert!(matches!(
        pool.take(Duration::from_millis(50)),
        Err(TakeError::Timeout)
    ));

    // The check returns (saying the object works): it is destroyed anyway.
    drop(release);
    eventually("the late object destroyed", || {
        manager.destroyed.load(Ordering::SeqCst) == 1 && pool.status().size == 0
    });
    manager.hang.store(false, Ordering::SeqCst);
    let fresh = pool.take(Duration::from_secs(5)).unwrap();
    assert_eq!(*fresh, 1, "a new object, not the one whose check hung");
}

#[test]
fn a_check_that_answers_by_the_deadline_hands_the_object_out() {
    let (manager, _release) = hanging();
    let pool = ObjectPool::builder(Conns(manager.clone()))
        .max_size(1)
        .check_on_take(true)
        .build()
        .unwrap();
    drop(pool.try_take().unwrap());
    for _ in 0..3 {
        let taken = pool.take(Duration::from_secs(30)).unwrap();
        assert_eq!(*taken, 0, "the same object, checked and reused");
    }
    assert_eq!(pool.stats().failed_take_checks, 0);
    assert_eq!(manager.destroyed.load(Ordering::SeqCst), 0);
}
