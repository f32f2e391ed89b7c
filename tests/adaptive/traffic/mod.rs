//! The adaptive limit under real traffic (#38): closed-loop client
//! threads through an adaptive `Resource` to a downstream whose latency the
//! test shapes (jitter, a mix of fast and slow requests, a lasting step, a
//! stall its clients give up on), as the adversarial reviews drove it.
//! The sleeps are the downstream's work and the windows' time passing;
//! margins are wide, for a 2-core CI machine running other tests.

mod aimd_timeout;
mod bimodal;
mod cancelled;
mod growth;
mod outlier;
mod set_capacity;
mod shares;
mod stride;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sidejob::adaptive::Adaptive;
use sidejob::Resource;

/// An adaptive resource starting at `capacity`, its windows `window` long.
fn adaptive(capacity: usize, adaptive: Adaptive, window: Duration) -> Arc<Resource> {
    Arc::new(
        Resource::builder()
            .capacity(capacity)
            .adaptive(adaptive.window(window))
            .build()
            .unwrap(),
    )
}

/// How a client's call ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The downstream answered after the given time.
    Answered(Duration),
    /// The client gave up after the given time: a timeout.
    Cancelled(Duration),
}

/// Client threads calling in a closed loop until dropped: each acquires,
/// lets `call(n)` say how its `n`th call ends, sleeps that long and
/// releases as the outcome says; a refused client comes back after 1 ms.
struct Clients {
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Clients {
    fn start(
        resource: &Arc<Resource>,
        clients: usize,
        call: impl Fn(u64) -> Outcome + Send + Sync + 'static,
    ) -> Clients {
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicU64::new(0));
        let call = Arc::new(call);
        let threads = (0..clients)
            .map(|_| {
                let (resource, stop, calls, call) = (
                    Arc::clone(resource),
                    Arc::clone(&stop),
                    Arc::clone(&calls),
                    Arc::clone(&call),
                );
                thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let Ok(permit) = resource.try_acquire() else {
                            thread::sleep(Duration::from_millis(1));
                            continue;
                        };
                        match call(calls.fetch_add(1, Ordering::Relaxed)) {
                            Outcome::Answered(took) => {
                                thread::sleep(took);
                                drop(permit);
                            }
                            Outcome::Cancelled(after) => {
                                thread::sleep(after);
                                permit.cancelled();
                            }
                        }
                    }
                })
            })
            .collect();
        Clients { stop, threads }
    }
}

impl Drop for Clients {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            thread.join().unwrap();
        }
    }
}

/// The resource's limit every 10 ms for `how_long`.
fn limits_for(resource: &Resource, how_long: Duration) -> Vec<usize> {
    let began = Instant::now();
    let mut limits = Vec::new();
    while began.elapsed() < how_long {
        limits.push(resource.capacity());
        thread::sleep(Duration::from_millis(10));
    }
    limits
}

/// Waits up to `most` for `done` to hold of the resource's limit; the
/// limits seen on the way.
fn until(resource: &Resource, most: Duration, done: impl Fn(usize) -> bool) -> Vec<usize> {
    let began = Instant::now();
    let mut limits = vec![resource.capacity()];
    while !done(*limits.last().unwrap()) && began.elapsed() < most {
        thread::sleep(Duration::from_millis(10));
        limits.push(resource.capacity());
    }
    limits
}

/// Drops taking `resource`'s limit down to its minimum: every call
/// reports one, from `clients` threads, until it is there.
fn sink_with_drops(resource: &Arc<Resource>, clients: usize) {
    let min = 1;
    let sinking: Vec<_> = (0..clients)
        .map(|_| {
            let resource = Arc::clone(resource);
            thread::spawn(move || {
                let began = Instant::now();
                while resource.capacity() > min && began.elapsed() < Duration::from_secs(10) {
                    match resource.try_acquire() {
                        Ok(permit) => {
                            thread::sleep(Duration::from_millis(1));
                            permit.dropped();
                        }
                        Err(_) => thread::sleep(Duration::from_millis(1)),
                    }
                }
            })
        })
        .collect();
    for thread in sinking {
        thread.join().unwrap();
    }
    assert_eq!(resource.capacity(), min, "drops did not sink the limit");
}
