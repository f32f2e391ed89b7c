//! A node stalled past its lease (#37, found by the adversarial review of
//! the fix): its request threads and its runtime stop (as `SIGSTOP` stops
//! them) while the other node takes the whole budget; when it resumes,
//! its renewal may run before any acquire has seen the deadline. The
//! renewal must fall to the floor first: had it reported its stale grant
//! as held, and the ledger's missing record as a loss, the learning lease
//! held 15 of 10. `floor(0)` on both nodes, the hard limit.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::fleet::Fleet;
use sidejob::Resource;

use super::{learning, ledger_total};
use crate::support::redis_server::{RedisServer, LEASE, REFRESH};

fn expiry_of(server: &RedisServer, budget: &str, node: &str) -> Option<i64> {
    redis::cmd("ZSCORE")
        .arg(format!("{{sidejob:fleet:{budget}}}:expiry"))
        .arg(node)
        .query(&mut server.connection())
        .unwrap()
}

/// Load threads that can be paused (as a SIGSTOP pauses them).
struct PausableLoad {
    stop: Arc<AtomicBool>,
    pause: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl PausableLoad {
    fn start(
        resource: &Arc<Resource>,
        threads: usize,
        in_flight: &Arc<AtomicUsize>,
        most: &Arc<AtomicUsize>,
    ) -> PausableLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let pause = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let (resource, stop, pause) =
                    (Arc::clone(resource), Arc::clone(&stop), Arc::clone(&pause));
                let (in_flight, most) = (Arc::clone(in_flight), Arc::clone(most));
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if pause.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                            continue;
                        }
                        match resource.try_acquire() {
                            Ok(permit) => {
                                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                                most.fetch_max(now, Ordering::SeqCst);
                                std::thread::sleep(Duration::from_millis(5));
                                in_flight.fetch_sub(1, Ordering::SeqCst);
                                drop(permit);
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(1)),
                        }
                    }
                })
            })
            .collect();
        PausableLoad {
            stop,
            pause,
            threads,
        }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads {
            thread.join().unwrap();
        }
    }
}

#[test]
fn a_node_stalled_past_its_lease_resumes_at_its_floor_and_the_ledger_stays_within_the_budget() {
    let server = RedisServer::start();
    let budget = "stalled";
    let capacity = 10;
    let url = server.url();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));

    // Node `a`: its own current-thread runtime on its own thread.
    let resource_a = Arc::new(Resource::new(capacity));
    let (to_test, from_a) = std::sync::mpsc::channel();
    let (stop_a, stopped_a) = tokio::sync::oneshot::channel::<()>();
    let node_a = {
        let (resource, url) = (Arc::clone(&resource_a), url.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let fleet = Fleet::builder(&url, budget)
                    .capacity(capacity)
                    .lease(LEASE)
                    .refresh(REFRESH)
                    .floor(0)
                    .node("a")
                    .join(&resource)
                    .await
                    .unwrap();
                to_test.send(tokio::runtime::Handle::current()).unwrap();
                let _ = stopped_a.await;
                drop(fleet);
            });
        })
    };
    let handle_a = from_a.recv().unwrap();
    let load_a = PausableLoad::start(&resource_a, 12, &in_flight, &most);

    let rt_b = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let resource_b = Arc::new(Resource::new(capacity));
    let fleet_b = rt_b
        .block_on(
            Fleet::builder(&url, budget)
                .capacity(capacity)
                .lease(LEASE)
                .refresh(REFRESH)
                .floor(0)
                .node("b")
                .join(&resource_b),
        )
        .unwrap();
    let load_b = PausableLoad::start(&resource_b, 12, &in_flight, &most);

    let mut found = None;
    for attempt in 0..2 {
        // Settle: both busy, 5 and 5.
        let began = Instant::now();
        while !(resource_a.capacity() == 5
            && resource_b.capacity() == 5
            && !learning(&server, budget))
        {
            assert!(
                began.elapsed() < LEASE * 4,
                "never settled: a {} b {}",
                resource_a.capacity(),
                resource_b.capacity()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(REFRESH * 2);
        let before = most.swap(in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
        assert!(before <= capacity, "{before} held before the stall");
        // Time the stall just before `a`'s next renewal tick.
        let first = expiry_of(&server, budget, "a");
        while expiry_of(&server, budget, "a") == first {
            std::thread::sleep(Duration::from_millis(2));
        }
        let renewed = Instant::now();
        while renewed.elapsed() < REFRESH - Duration::from_millis(25) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // SIGSTOP of `a`: its request threads and its runtime.
        load_a.pause.store(true, Ordering::SeqCst);
        let stall = LEASE + REFRESH * 3;
        handle_a.spawn(async move { std::thread::sleep(stall) });
        std::thread::sleep(stall - Duration::from_millis(50));
        let b_grant = resource_b.capacity();
        let ledger_during = server.grants(budget);
        // Wait for the runtime to resume and let the renewal tick run first.
        let mut trace = Vec::new();
        let t0 = Instant::now();
        // `a`'s renewal reached the ledger (it had been purged) ...
        while expiry_of(&server, budget, "a").is_none() && t0.elapsed() < Duration::from_millis(300)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        // ... and its answer applied: its request threads run again.
        std::thread::sleep(Duration::from_millis(3));
        trace.push((
            t0.elapsed().as_millis(),
            resource_a.capacity(),
            resource_b.capacity(),
            in_flight.load(Ordering::SeqCst),
        ));
        load_a.pause.store(false, Ordering::SeqCst);
        let mut ledger_peak = 0;
        while t0.elapsed() < Duration::from_millis(700) {
            ledger_peak = ledger_peak.max(ledger_total(&server, budget));
            trace.push((
                t0.elapsed().as_millis(),
                resource_a.capacity(),
                resource_b.capacity(),
                in_flight.load(Ordering::SeqCst),
            ));
            std::thread::sleep(Duration::from_millis(4));
        }
        trace.dedup_by(|x, y| (x.1, x.2) == (y.1, y.2));
        println!("(ms, a capacity, b capacity, in flight): {trace:?}");
        // Watch for a while.
        let mut worst_ledger = ledger_peak;
        let mut learnt = false;
        let watch = Instant::now();
        while watch.elapsed() < REFRESH * 3 {
            worst_ledger = worst_ledger.max(ledger_total(&server, budget));
            learnt |= learning(&server, budget);
            std::thread::sleep(Duration::from_millis(5));
        }
        let held = most.load(Ordering::SeqCst);
        println!(
            "attempt {attempt}: b's capacity during the stall {b_grant}, ledger {ledger_during:?}; after resume: learning {learnt}, ledger sum up to {worst_ledger} of {capacity}, most held at once {held} of {capacity}"
        );
        if held > capacity || worst_ledger > capacity as u64 {
            found = Some((held, worst_ledger));
            break;
        }
        // wait out the learning lease before the next attempt
        std::thread::sleep(LEASE);
    }
    load_a.stop();
    load_b.stop();
    drop(fleet_b);
    let _ = stop_a.send(());
    node_a.join().unwrap();
    rt_b.shutdown_timeout(Duration::from_secs(1));
    assert!(
        found.is_none(),
        "with floor(0) everywhere: (most held, ledger sum) = {found:?} of {capacity}"
    );
}
