//! AsyncObjectPool's creations and checks (#19): `create_timeout` drops a
//! hung creation and frees its slot at once, a failed creation frees its
//! slot, `check_on_take` replaces a broken idle object (never checking one
//! handed from a returner), `build` makes `init_size` and refuses to run
//! outside a runtime, and the maintenance task refills `min_idle` and reaps.
#![cfg(feature = "tokio")]

use crate::support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use sidejob::{AsyncObjectPool, TakeError};
use support::async_objects::{runtime, Gauged};

#[test]
fn a_creation_past_create_timeout_is_dropped_and_its_slot_freed_at_once() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        manager.0.create_hangs.store(true, Ordering::SeqCst);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(1)
            .create_timeout(Duration::from_millis(20))
            .build()
            .await
            .unwrap();
        let taken = pool.try_take().await;
        assert!(matches!(taken, Err(TakeError::CreateTimeout)), "{taken:?}");
        assert_eq!((pool.status().size, manager.creating()), (0, 0));
        let stats = pool.stats();
        assert_eq!((stats.create_failures, stats.create_timeouts), (1, 1));

        // A take's own, earlier deadline answers `Timeout`.
        let taken = pool.take(Duration::from_millis(5)).await;
        assert!(matches!(taken, Err(TakeError::Timeout)), "{taken:?}");
        assert_eq!(pool.status().size, 0);

        manager.0.create_hangs.store(false, Ordering::SeqCst);
        assert!(pool.try_take().await.is_ok(), "the slot is whole");
    });
}

#[test]
fn a_failed_creation_frees_its_slot() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        manager.0.create_fails.store(true, Ordering::SeqCst);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(1)
            .build()
            .await
            .unwrap();
        assert!(matches!(pool.try_take().await, Err(TakeError::Create(_))));
        assert_eq!((pool.status().size, pool.stats().create_failures), (0, 1));
        manager.0.create_fails.store(false, Ordering::SeqCst);
        assert!(pool.try_take().await.is_ok());
    });
}

#[test]
fn check_on_take_replaces_a_broken_idle_object_even_at_max_size() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(1)
            .init_size(1)
            .check_on_take(true)
            .build()
            .await
            .unwrap();
        let mut conn = pool.try_take().await.unwrap();
        let broken_id = conn.id;
        conn.broken = true;
        drop(conn);
        let fresh = pool.try_take().await.unwrap();
        assert_ne!(fresh.id, broken_id);
        assert_eq!(*manager.0.broken_found.lock().unwrap(), [broken_id]);
        let stats = pool.stats();
        assert_eq!(
            (stats.failed_take_checks, stats.creates, stats.destroyed),
            (1, 2, 1)
        );
        assert_eq!(manager.live(), 1);
    });
}

#[test]
fn an_object_handed_from_a_returner_to_a_waiter_is_not_checked() {
    runtime().block_on(async {
        let manager = Gauged::new(1);
        let pool = Arc::new(
            AsyncObjectPool::builder(manager.clone())
                .max_size(1)
                .check_on_take(true)
                .build()
                .await
                .unwrap(),
        );
        let held = pool.try_take_owned().await.unwrap();
        let waiter = tokio::spawn({
            let pool = Arc::clone(&pool);
            async move { pool.take(Duration::from_secs(30)).await.map(|conn| conn.id) }
        });
        while pool.status().waiting == 0 {
            tokio::task::yield_now().await;
        }
        let checks_before = manager.0.checks.load(Ordering::SeqCst);
        drop(held);
        assert_eq!(waiter.await.unwrap().unwrap(), 0);
        assert_eq!(manager.0.checks.load(Ordering::SeqCst), checks_before);
    });
}

#[test]
fn build_makes_init_size_and_fails_outside_a_runtime() {
    let manager = Gauged::new(4);
    let outside = support::block_on::block_on(
        AsyncObjectPool::builder(manager.clone())
            .max_size(4)
            .init_size(2)
            .build(),
    );
    let error = outside.unwrap_err();
    assert_eq!(error.setting(), "runtime");
    assert!(error.to_string().contains("tokio runtime"), "{error}");
    assert_eq!(manager.made(), 0);

    runtime().block_on(async {
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(4)
            .init_size(2)
            .build()
            .await
            .unwrap();
        assert_eq!((pool.status().idle, manager.made()), (2, 2));
        let error = AsyncObjectPool::builder(manager.clone())
            .max_size(2)
            .init_size(3)
            .build()
            .await
            .unwrap_err();
        assert_eq!(error.setting(), "init_size");
    });
}

#[test]
fn the_maintenance_task_refills_min_idle_and_reaps_idle_objects() {
    runtime().block_on(async {
        let manager = Gauged::new(4);
        let pool = AsyncObjectPool::builder(manager.clone())
            .max_size(4)
            .min_idle(2)
            .build()
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.status().idle < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "min_idle was not refilled"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let a = pool.try_take().await.unwrap();
        let b = pool.try_take().await.unwrap();
        while pool.status().idle < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "min_idle was not refilled after takes"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop((a, b));
        assert_eq!(pool.status().idle, 4);
        // Idle objects past `idle_timeout` above min_idle are reaped.
        pool.reconfigure(|config| {
            config.idle_timeout = Some(Duration::from_millis(20));
            config.soft_limit = Some(2);
        })
        .unwrap();
        while pool.status().idle > 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "idle objects were not reaped"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(pool.stats().reaped, 2);
        assert_eq!(manager.live(), 2);
    });
}
