//! Rates from a face's birth (#27): a face's meter starts from the counts
//! it was built with, so what every face admits before the sampler's first
//! tick for it (a server's first burst, a short-lived pool) appears in
//! `last_60s` and the per-second rates once that tick has passed, exactly
//! as in `total`. This waits for real ticks, with a generous deadline.

use std::time::{Duration, Instant};

use sidejob::{Manager, ObjectPool, RateStats, Resource, Supervisor, Worker, WorkerPool};

/// Admissions made before the first tick, per face.
const BURST: u64 = 25;

/// Waits until `rates()` shows the whole burst in the window, polling (a
/// tick may split the burst over two seconds; the sampler ticks once a
/// second), then checks both windows agree exactly.
fn the_burst_is_in_both_windows(face: &str, rates: impl Fn() -> RateStats) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let now = rates();
        if (now.last_60s.accepted, now.last_60s.completed) == (BURST, BURST) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{face}: the burst never reached the window: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let now = rates();
    let (window, total) = (&now.last_60s, &now.total);
    assert_eq!(
        (window.accepted, window.completed, window.rejected),
        (BURST, BURST, 0),
        "{face}: {now:?}"
    );
    assert_eq!(
        (total.accepted, total.completed, total.rejected),
        (BURST, BURST, 0),
        "{face}: {now:?}"
    );
    assert!(window.max_in_rate >= 1.0, "{face}: {now:?}");
    assert!(window.avg_in_rate > 0.0, "{face}: {now:?}");
    assert!(total.avg_in_rate > 0.0, "{face}: {now:?}");
    // The burst fell in one second (or, if a tick split it, two).
    assert!(window.max_in_rate >= BURST as f64 / 2.0, "{face}: {now:?}");
}

#[test]
fn a_resource_shows_its_first_burst_in_the_window() {
    let resource = Resource::builder()
        .capacity(1 << 16)
        .shards(2)
        .build()
        .unwrap();
    for _ in 0..BURST {
        drop(resource.try_acquire().unwrap());
    }
    the_burst_is_in_both_windows("Resource", || resource.rates());
}

/// Echoes its request.
struct Echo;

impl Worker for Echo {
    type Request = u64;
    type Reply = u64;

    fn handle_call(&mut self, request: u64) -> u64 {
        request
    }
}

#[test]
fn a_worker_pool_shows_its_first_burst_in_the_window() {
    let pool = WorkerPool::builder().capacity(4).build(|_| Echo).unwrap();
    for message in 0..BURST {
        assert_eq!(pool.call(message).unwrap(), message);
    }
    the_burst_is_in_both_windows("WorkerPool", || pool.rates());
}

#[test]
fn a_supervisor_shows_its_first_burst_in_the_window() {
    let supervisor = Supervisor::new(4);
    for _ in 0..BURST {
        supervisor.spawn(|_| ()).unwrap().join().unwrap();
    }
    the_burst_is_in_both_windows("Supervisor", || supervisor.rates());
}

struct Conns;

impl Manager for Conns {
    type Object = u8;
    type Error = std::io::Error;

    fn create(&self) -> std::io::Result<u8> {
        Ok(0)
    }
}

#[test]
fn an_object_pool_shows_its_first_burst_in_the_window() {
    let pool = ObjectPool::builder(Conns).max_size(2).build().unwrap();
    for _ in 0..BURST {
        drop(pool.try_take().unwrap());
    }
    the_burst_is_in_both_windows("ObjectPool", || pool.rates());
}

#[cfg(feature = "tokio")]
mod async_faces {
    use super::*;

    struct AsyncConns;

    impl sidejob::AsyncManager for AsyncConns {
        type Object = u8;
        type Error = std::io::Error;

        async fn create(&self) -> std::io::Result<u8> {
            Ok(0)
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn an_async_object_pool_shows_its_first_burst_in_the_window() {
        let runtime = runtime();
        let pool = runtime.block_on(async {
            let pool = sidejob::AsyncObjectPool::builder(AsyncConns)
                .max_size(2)
                .build()
                .await
                .unwrap();
            for _ in 0..BURST {
                drop(pool.try_take().await.unwrap());
            }
            pool
        });
        the_burst_is_in_both_windows("AsyncObjectPool", || pool.rates());
    }

    #[test]
    fn a_task_supervisor_shows_its_first_burst_in_the_window() {
        let runtime = runtime();
        let supervisor = sidejob::TaskSupervisor::new(4);
        runtime.block_on(async {
            for _ in 0..BURST {
                supervisor.try_spawn(|_| async {}).unwrap().await.unwrap();
            }
        });
        the_burst_is_in_both_windows("TaskSupervisor", || supervisor.rates());
    }
}
