//! An ObjectPool whose backend is down (#27): the maintainer retries a
//! failed refill after a backoff, so a `create` that fails at once or
//! slowly is called a few dozen times in 2 s at little CPU, never millions;
//! takes still call `create` themselves and report its error; the failed
//! refills are counted; and once the backend recovers, the pool refills to
//! `min_idle` within about one maintenance interval.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::{ObjectPool, TakeError};
use support::backend::{assert_backed_off, cpu_seconds, Backend, Connect};
use support::panics::quiet_deliberate_panics;
use support::serial::serial;

/// Builds a pool over a backend that is down, waits 2 s, and checks the
/// attempts and the CPU time they cost.
fn two_seconds_down(backend: Arc<Backend>, delay: Duration) {
    let _machine = serial();
    let cpu_before = cpu_seconds();
    let pool = ObjectPool::builder(Connect {
        backend: backend.clone(),
        delay,
    })
    .max_size(4)
    .min_idle(2)
    .build()
    .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert_backed_off(&backend, cpu_before, &pool.stats(), pool.status().size);
}

#[test]
fn a_create_that_fails_at_once_is_retried_a_few_dozen_times_in_two_seconds() {
    two_seconds_down(Backend::down(), Duration::ZERO);
}

#[test]
fn a_create_that_fails_after_a_millisecond_is_retried_a_few_dozen_times_in_two_seconds() {
    two_seconds_down(Backend::down(), Duration::from_millis(1));
}

#[test]
fn a_take_still_calls_create_and_reports_its_error_while_refills_back_off() {
    let _machine = serial();
    let backend = Backend::down();
    let pool = ObjectPool::builder(Connect {
        backend: backend.clone(),
        delay: Duration::ZERO,
    })
    .max_size(2)
    .min_idle(1)
    .build()
    .unwrap();
    for _ in 0..5 {
        let before = backend.attempts();
        assert!(matches!(pool.try_take(), Err(TakeError::Create(_))));
        // The take's own attempt, and at most one maintenance round's.
        assert!(backend.attempts() > before);
    }
    assert_eq!(pool.status().size, 0);
}

#[test]
fn once_the_backend_recovers_the_pool_refills_to_min_idle_within_about_an_interval() {
    let _machine = serial();
    let backend = Backend::down();
    let pool = ObjectPool::builder(Connect {
        backend: backend.clone(),
        delay: Duration::ZERO,
    })
    .max_size(4)
    .min_idle(2)
    .build()
    .unwrap();
    // Long enough for the backoff to reach its longest delay (1 s).
    std::thread::sleep(Duration::from_millis(1500));
    backend.recover();
    let recovered = Instant::now();
    // One interval (1 s) and its jitter, with a generous margin.
    while pool.status().idle < 2 {
        assert!(
            recovered.elapsed() < Duration::from_secs(4),
            "not refilled: {:?}",
            pool.status()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = pool.stats();
    assert!(stats.failed_refills >= 1, "{stats:?}");
    assert_eq!(stats.creates, 2);
}

#[test]
fn a_create_that_panics_is_retried_a_few_dozen_times_in_two_seconds() {
    quiet_deliberate_panics();
    two_seconds_down(Backend::exploding(), Duration::ZERO);
}
