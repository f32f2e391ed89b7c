//! An async take's deadline covers `check_on_take` (#27): with a `check`
//! that never answers, `take(timeout)` returns `Timeout` by its deadline;
//! the check's future is dropped and the object, whose state is unknown,
//! destroyed at once, its slot freed, never handed out.
#![cfg(feature = "tokio")]

use crate::support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use sidejob::{AsyncObjectPool, TakeError};
use support::async_objects::{runtime, Gauged};

#[test]
fn a_take_returns_by_its_deadline_when_check_hangs_and_the_object_is_destroyed() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let gauge = manager.0.clone();
        let pool = AsyncObjectPool::builder(manager)
            .max_size(1)
            .check_on_take(true)
            .build()
            .await
            .unwrap();
        drop(pool.try_take().await.unwrap()); // one idle object
        gauge.check_hangs.store(true, Ordering::SeqCst);

        let taken = pool.take(Duration::from_millis(100)).await;
        assert!(matches!(taken, Err(TakeError::Timeout)), "{taken:?}");
        let stats = pool.stats();
        assert_eq!((stats.timeouts, stats.failed_take_checks), (1, 1));
        assert_eq!((stats.takes, stats.destroyed), (1, 1));
        assert_eq!(pool.status().size, 0, "its slot is free at once");
        assert_eq!(gauge.live.load(Ordering::SeqCst), 0);

        // The next take makes a new object (no idle one to check).
        let fresh = pool.take(Duration::from_secs(5)).await.unwrap();
        assert_eq!(fresh.id, 1);
    });
}
