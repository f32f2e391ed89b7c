//! An AsyncObjectPool whose backend is down (#27): the maintenance task
//! retries a failed refill after a backoff and yields every round, so a
//! `create` that fails at once or slowly is called a few dozen times in 2 s
//! at little CPU; a current-thread runtime keeps running another task's
//! 1 ms ticks; and once the backend recovers, the pool refills to
//! `min_idle` within about one maintenance interval.
#![cfg(feature = "tokio")]

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::AsyncObjectPool;
use support::backend::{assert_backed_off, cpu_seconds, AsyncConnect, Backend};
use support::panics::quiet_deliberate_panics;
use support::serial::serial;

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Builds a pool over a backend that is down on `runtime`, runs another
/// task's 1 ms ticks for 2 s, and checks the attempts, the CPU time and
/// the ticks.
fn two_seconds_down(runtime: tokio::runtime::Runtime, backend: Arc<Backend>, delay: Duration) {
    let _machine = serial();
    runtime.block_on(async {
        let cpu_before = cpu_seconds();
        let pool = AsyncObjectPool::builder(AsyncConnect {
            backend: backend.clone(),
            delay,
        })
        .max_size(4)
        .min_idle(2)
        .build()
        .await
        .unwrap();
        let ticker = tokio::spawn(async {
            let start = Instant::now();
            let mut ticks = 0u32;
            while start.elapsed() < Duration::from_secs(2) {
                tokio::time::sleep(Duration::from_millis(1)).await;
                ticks += 1;
            }
            ticks
        });
        let ticks = ticker.await.unwrap();
        // A 1 ms sleep takes 1-2 ms on tokio's timer wheel: a runtime
        // that is not hogged ticks hundreds of times in 2 s.
        assert!(ticks >= 200, "another task ticked {ticks} times in 2 s");
        assert_backed_off(&backend, cpu_before, &pool.stats(), pool.status().size);
    });
}

#[test]
fn a_create_that_fails_at_once_is_retried_a_few_dozen_times_in_two_seconds() {
    two_seconds_down(multi_thread(), Backend::down(), Duration::ZERO);
}

#[test]
fn a_create_that_fails_after_a_millisecond_is_retried_a_few_dozen_times_in_two_seconds() {
    two_seconds_down(multi_thread(), Backend::down(), Duration::from_millis(1));
}

#[test]
fn a_current_thread_runtime_keeps_running_other_tasks_while_create_fails_at_once() {
    two_seconds_down(current_thread(), Backend::down(), Duration::ZERO);
}

#[test]
fn a_current_thread_runtime_keeps_running_other_tasks_while_create_fails_slowly() {
    two_seconds_down(current_thread(), Backend::down(), Duration::from_millis(1));
}

#[test]
fn once_the_backend_recovers_the_pool_refills_to_min_idle_within_about_an_interval() {
    let _machine = serial();
    multi_thread().block_on(async {
        let backend = Backend::down();
        let pool = AsyncObjectPool::builder(AsyncConnect {
            backend: backend.clone(),
            delay: Duration::ZERO,
        })
        .max_size(4)
        .min_idle(2)
        .build()
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        backend.recover();
        let recovered = Instant::now();
        while pool.status().idle < 2 {
            assert!(
                recovered.elapsed() < Duration::from_secs(4),
                "not refilled: {:?}",
                pool.status()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(pool.stats().failed_refills >= 1);
    });
}

#[test]
fn a_create_that_panics_is_retried_a_few_dozen_times_in_two_seconds() {
    quiet_deliberate_panics();
    two_seconds_down(current_thread(), Backend::exploding(), Duration::ZERO);
}
