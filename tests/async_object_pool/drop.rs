//! An `AsyncObjectPool` dropped with its objects drops its manager at once,
//! on the dropping thread: its maintenance task holds the pool's core only
//! while it runs a round, never while it sleeps, so the manager does not
//! wait for the task's next poll (which never comes once its runtime stops
//! being driven).
#![cfg(feature = "tokio")]

use crate::support;

use std::sync::Arc;

use sidejob::AsyncObjectPool;
use support::async_objects::{runtime, Gauged};

/// References to the manager's state besides the test's own clone: the
/// pool's manager and the objects alive.
fn others(manager: &Gauged) -> usize {
    Arc::strong_count(&manager.0) - 1
}

#[test]
fn the_manager_is_dropped_with_the_pool_and_its_last_object() {
    let runtime = runtime();
    runtime.block_on(async {
        let manager = Gauged::new(2);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(2)
            .min_idle(1)
            .build()
            .await
            .unwrap();
        let out = pool.try_take_owned().await.unwrap();
        // The maintenance task runs its rounds and goes to sleep.
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            others(&manager),
            1 + manager.live(),
            "the pool's manager and each object alive"
        );
        drop(pool); // idle objects are destroyed; the one out keeps the core
        assert_eq!(manager.live(), 1);
        assert_eq!(others(&manager), 2, "the pool's manager and the object out");
        drop(out);
        assert_eq!(manager.live(), 0);
        assert_eq!(others(&manager), 0, "the manager went with the last object");
    });
}

#[test]
fn the_manager_is_dropped_with_a_pool_whose_maintenance_never_ran() {
    let runtime = runtime();
    let manager = Gauged::new(2);
    let pool = runtime.block_on(async {
        AsyncObjectPool::builder(manager.clone())
            .max_size(2)
            .build()
            .await
            .unwrap()
    });
    // The runtime is not driven again: the task spawned by `build` never
    // runs.
    drop(pool);
    assert_eq!(others(&manager), 0, "the manager went with the pool");
    drop(runtime);
}
