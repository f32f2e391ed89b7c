//! Rates and windows (#20): every face's `rates()` has exact totals at the
//! call, and the process's sampler, ticking once a second, fills in the
//! last whole second and the window (this waits for real ticks, with a
//! generous deadline). Reading rates never holds up an admission.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::{Manager, ObjectPool, Resource, Supervisor, Worker, WorkerPool};

/// Echoes its request.
struct Echo;

impl Worker for Echo {
    type Request = u32;
    type Reply = u32;

    fn handle_call(&mut self, request: u32) -> u32 {
        request
    }
}

/// Waits until `done` holds, polling; the sampler ticks once a second.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < deadline, "never saw: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_resource_reports_exact_totals_and_the_sampled_window() {
    let resource = Resource::builder().capacity(3).shards(1).build().unwrap();
    let held: Vec<_> = (0..3).map(|_| resource.try_acquire().unwrap()).collect();
    for _ in 0..2 {
        assert!(resource.try_acquire().is_err());
    }
    drop(held);
    let rates = resource.rates();
    let total = &rates.total;
    assert_eq!((total.accepted, total.rejected, total.completed), (3, 2, 3));
    assert!(total.peak_usage <= 3);

    // Two permits held across ticks: a whole second ends with usage 2.
    let held: Vec<_> = (0..2).map(|_| resource.try_acquire().unwrap()).collect();
    eventually("usage 2 sampled in the window", || {
        resource.rates().last_60s.peak_usage == 2
    });
    // From here on every admission lands in a whole second of the window.
    let third = resource.try_acquire().unwrap();
    assert!(resource.try_acquire().is_err());
    drop(third);
    drop(held);
    eventually("the admission, refusal and releases in the window", || {
        let window = resource.rates().last_60s;
        window.accepted >= 1 && window.rejected >= 1 && window.completed >= 3
    });
    let rates = resource.rates();
    assert!(rates.last_60s.max_in_rate >= 1.0, "{rates:?}");
    assert!(rates.last_60s.avg_in_rate > 0.0, "{rates:?}");
    let total = &rates.total;
    assert_eq!((total.accepted, total.rejected, total.completed), (6, 3, 6));
    // The brief peaks of 3 fell between samples; the held 2 did not.
    assert!(total.peak_usage >= 2 && total.peak_usage >= rates.last_60s.peak_usage);
    assert!(total.max_in_rate >= rates.last_60s.max_in_rate);
}

#[test]
fn every_face_counts_in_out_and_rejected() {
    let pool = WorkerPool::builder().capacity(2).build(|_| Echo).unwrap();
    for message in 0..3 {
        assert_eq!(pool.call(message).unwrap(), message);
    }
    let total = pool.rates().total;
    assert_eq!((total.accepted, total.completed), (3, 3));

    let supervisor = Supervisor::new(1);
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let child = supervisor.spawn(move |_| wait.recv().ok()).unwrap();
    assert!(supervisor.spawn(|_| ()).is_err());
    let total = supervisor.rates().total;
    assert_eq!(
        (total.accepted, total.rejected, total.peak_usage),
        (1, 1, 1)
    );
    release.send(()).unwrap();
    child.join().unwrap();
    assert_eq!(supervisor.rates().total.completed, 1);

    struct Conns;
    impl Manager for Conns {
        type Object = u8;
        type Error = std::io::Error;
        fn create(&self) -> std::io::Result<u8> {
            Ok(0)
        }
    }
    let objects = ObjectPool::builder(Conns).max_size(1).build().unwrap();
    let held = objects.try_take().unwrap();
    assert!(objects.try_take().is_err());
    assert!(objects.take(Duration::from_millis(1)).is_err());
    let total = objects.rates().total;
    assert_eq!(
        (
            total.accepted,
            total.rejected,
            total.completed,
            total.peak_usage
        ),
        (1, 2, 0, 1)
    );
    drop(held);
    assert_eq!(objects.rates().total.completed, 1);
}

#[test]
fn reading_rates_never_holds_up_an_admission() {
    let resource = Arc::new(Resource::builder().capacity(4).build().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let acquired = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (resource, stop) = (Arc::clone(&resource), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let rates = resource.rates();
                    assert!(rates.total.completed <= rates.total.accepted);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let acquirers: Vec<_> = (0..2)
        .map(|_| {
            let (resource, acquired) = (Arc::clone(&resource), Arc::clone(&acquired));
            std::thread::spawn(move || {
                for _ in 0..50_000 {
                    if let Ok(permit) = resource.try_acquire() {
                        acquired.fetch_add(1, Ordering::Relaxed);
                        drop(permit);
                    }
                }
            })
        })
        .collect();
    for acquirer in acquirers {
        acquirer.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().unwrap() > 0);
    }
    let total = resource.rates().total;
    assert_eq!(total.accepted, acquired.load(Ordering::Relaxed));
    assert_eq!(total.completed, total.accepted);
}
