//! An [`AsyncManager`] whose creations and checks take a set number of
//! polls (or never finish), and which counts the objects alive and the
//! creations in flight, asserting that together they never exceed the
//! pool's `max_size`; plus a manual poll with a counting waker.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// What the manager's objects and creations report to.
#[derive(Debug, Default)]
pub struct Gauge {
    pub max_size: usize,
    /// Objects made and not yet dropped (destroyed or detached and dropped).
    pub live: AtomicUsize,
    /// Creation futures started and not yet finished or dropped.
    pub creating: AtomicUsize,
    /// Objects alive plus creations in flight, in one count: a creation
    /// that finishes moves from one to the other without changing it, so
    /// one `fetch_add` reads the whole at one instant. (Reading `creating`
    /// and then `live` would count twice a creation finishing in between.)
    pub occupied: AtomicUsize,
    pub made: AtomicUsize,
    pub checks: AtomicUsize,
    /// Polls each creation takes before it finishes.
    pub create_polls: AtomicUsize,
    /// Polls each check takes before it answers.
    pub check_polls: AtomicUsize,
    /// Creations never finish while set.
    pub create_hangs: AtomicBool,
    /// Creations fail while set.
    pub create_fails: AtomicBool,
    /// Checks never answer while set.
    pub check_hangs: AtomicBool,
    /// Ids of the objects checked and found broken.
    pub broken_found: Mutex<Vec<usize>>,
}

impl Gauge {
    fn admit_creation(&self) {
        self.creating.fetch_add(1, Ordering::SeqCst);
        let occupied = self.occupied.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(
            occupied <= self.max_size,
            "{occupied} objects alive or being made exceed max_size {}",
            self.max_size
        );
    }
}

/// A pooled object; `broken` makes its next check fail.
#[derive(Debug)]
pub struct Conn {
    pub id: usize,
    pub broken: bool,
    gauge: Arc<Gauge>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.gauge.live.fetch_sub(1, Ordering::SeqCst);
        self.gauge.occupied.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A creation in flight, counted until it finishes or is dropped.
struct InFlight<'a>(&'a Gauge);

impl InFlight<'_> {
    /// The creation made its object: `occupied` stays as it is.
    fn made(self) {
        self.0.live.fetch_add(1, Ordering::SeqCst);
        self.0.creating.fetch_sub(1, Ordering::SeqCst);
        std::mem::forget(self);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.creating.fetch_sub(1, Ordering::SeqCst);
        self.0.occupied.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The manager.
#[derive(Debug, Clone)]
pub struct Gauged(pub Arc<Gauge>);

impl Gauged {
    pub fn new(max_size: usize) -> Self {
        Gauged(Arc::new(Gauge {
            max_size,
            ..Gauge::default()
        }))
    }

    pub fn live(&self) -> usize {
        self.0.live.load(Ordering::SeqCst)
    }

    pub fn creating(&self) -> usize {
        self.0.creating.load(Ordering::SeqCst)
    }

    pub fn made(&self) -> usize {
        self.0.made.load(Ordering::SeqCst)
    }
}

#[derive(Debug)]
pub struct CreateFailed;

impl std::fmt::Display for CreateFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("create failed")
    }
}

impl std::error::Error for CreateFailed {}

impl sidejob::AsyncManager for Gauged {
    type Object = Conn;
    type Error = CreateFailed;

    fn create(&self) -> impl Future<Output = Result<Conn, CreateFailed>> + Send {
        let gauge = Arc::clone(&self.0);
        async move {
            gauge.admit_creation();
            let flight = InFlight(&gauge);
            if gauge.create_hangs.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            for _ in 0..gauge.create_polls.load(Ordering::SeqCst) {
                yield_once().await;
            }
            if gauge.create_fails.load(Ordering::SeqCst) {
                return Err(CreateFailed);
            }
            flight.made();
            let id = gauge.made.fetch_add(1, Ordering::SeqCst);
            Ok(Conn {
                id,
                broken: false,
                gauge,
            })
        }
    }

    fn check(&self, object: &mut Conn) -> impl Future<Output = bool> + Send {
        let gauge = Arc::clone(&self.0);
        let broken = object.broken;
        let id = object.id;
        async move {
            gauge.checks.fetch_add(1, Ordering::SeqCst);
            for _ in 0..gauge.check_polls.load(Ordering::SeqCst) {
                yield_once().await;
            }
            if gauge.check_hangs.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            if broken {
                gauge.broken_found.lock().unwrap().push(id);
            }
            !broken
        }
    }
}

/// Pending once (waking itself), then ready.
pub async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

/// A waker that counts its wakes.
#[derive(Debug, Default)]
pub struct CountingWaker(pub AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `future` once with `waker`.
pub fn poll_once<F: Future>(future: Pin<&mut F>, waker: &Arc<CountingWaker>) -> Poll<F::Output> {
    let waker = Waker::from(Arc::clone(waker));
    future.poll(&mut Context::from_waker(&waker))
}

/// A current-thread runtime with timers, for one test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}
