//! Each rule finds a downstream's concurrency from real threads (#29): a
//! downstream of `K` workers, each request `BASE` long, queueing beyond `K`;
//! clients offering 4 × K at once through an adaptive resource that starts
//! far from K. Margins are wide (a 2-core CI machine runs other tests
//! meanwhile, and a scheduling delay of a few ms inflates every latency;
//! requests of 8 ms keep that small beside them): over the last second the limit stays within [K / 2, 6 K],
//! where a limit that did not adapt would sit at its start or its maximum.
//! (Starting from above, the first window, which begins the baseline, is a
//! queue: the baseline stayed that high until the first probe, 64 windows
//! in, and the limit with it, at 6-7 K in about one CI run in five. The
//! first probes now come every 16 windows and take a mean more than an
//! eighth lower whole:
//! here they settle it at 1.5 K before the second measured.)
//! The sleeps are the downstream's work.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use sidejob::adaptive::{Adaptive, Aimd};
use sidejob::Resource;

const K: usize = 4;
const BASE: Duration = Duration::from_millis(8);

/// `K` workers: a request waits for one, in turn, then takes `BASE`.
struct Downstream {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Downstream {
    fn serve(&self) {
        let mut free = self.free.lock().unwrap();
        while *free == 0 {
            free = self.freed.wait(free).unwrap();
        }
        *free -= 1;
        drop(free);
        thread::sleep(BASE);
        *self.free.lock().unwrap() += 1;
        self.freed.notify_one();
    }
}

fn limits_over_the_last_second(adaptive: Adaptive, start: usize) -> Vec<usize> {
    let resource = Arc::new(
        Resource::builder()
            .capacity(start)
            .adaptive(adaptive.window(Duration::from_millis(50)).max_limit(64))
            .build()
            .unwrap(),
    );
    let downstream = Arc::new(Downstream {
        free: Mutex::new(K),
        freed: Condvar::new(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4 * K)
        .map(|_| {
            let (resource, downstream, stop) = (
                Arc::clone(&resource),
                Arc::clone(&downstream),
                Arc::clone(&stop),
            );
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match resource.try_acquire() {
                        Ok(permit) => {
                            downstream.serve();
                            drop(permit);
                        }
                        // Refused: come back a little later, as a client would.
                        Err(_) => thread::sleep(BASE / 4),
                    }
                }
            })
        })
        .collect();
    let began = Instant::now();
    thread::sleep(Duration::from_secs(3));
    let mut limits = Vec::new();
    while began.elapsed() < Duration::from_secs(4) {
        limits.push(resource.capacity());
        thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().unwrap();
    }
    assert_eq!(resource.usage(), 0);
    limits
}

fn assert_found_k(name: &str, limits: &[usize]) {
    assert!(
        limits.iter().all(|&limit| (K / 2..=6 * K).contains(&limit)),
        "{name}: the limit left [{}, {}]: {limits:?}",
        K / 2,
        6 * K
    );
}

#[test]
fn gradient_finds_k_from_above() {
    assert_found_k(
        "gradient",
        &limits_over_the_last_second(Adaptive::gradient(), 48),
    );
}

#[test]
fn vegas_finds_k_from_below() {
    assert_found_k("vegas", &limits_over_the_last_second(Adaptive::vegas(), 1));
}

#[test]
fn aimd_finds_k_with_a_timeout() {
    let aimd = Adaptive::from(Aimd::default().timeout(BASE * 2));
    assert_found_k("aimd", &limits_over_the_last_second(aimd, 48));
}
