//! A ledger lost, or restored stale (#37, defects 2, 3, 6 and 12): a
//! leave that reaches an emptied Redis first never sets the budget; a
//! Redis restarted from a snapshot older than the nodes' last renewals
//! learns before it grants, so the nodes never hold more than the budget;
//! a budget nobody renews expires, and a join with other settings then
//! starts fresh, while a join that disagrees with a live budget is told
//! which setting differs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::fleet::Fleet;
use sidejob::Resource;

use super::{hold_the_budget, learning, meta, Busy};
use crate::support::redis_server::{free_port, join, Options, RedisServer, LEASE, REFRESH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_after_the_ledger_was_lost_never_sets_the_budget() {
    let server = RedisServer::start();
    let idle = Arc::new(Resource::new(10));
    let leaving = join(&server, "flushed", 10, "leaving", &idle).await;
    server.run(&["FLUSHALL"]);
    leaving.leave().await;
    assert_eq!(
        meta(&server, "flushed", "capacity"),
        None,
        "a leave created the budget"
    );
    // A node joins with the budget's capacity, and gets it once the
    // learning lease (the ledger was lost) has passed.
    let mut busy = Busy::new();
    busy.join(&server, "flushed", 10, "busy", 12).await;
    assert_eq!(meta(&server, "flushed", "capacity"), Some(10));
    let began = Instant::now();
    while busy.grants()[0] < 10 {
        assert!(
            began.elapsed() < LEASE + REFRESH * 4,
            "{:?}",
            busy.fleets[0].stats()
        );
        tokio::time::sleep(REFRESH / 4).await;
    }
    busy.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restored_from_an_older_snapshot_learns_before_it_grants() {
    let mut server = RedisServer::start_with(free_port(), Options::default());
    let mut busy = Busy::new();
    busy.join(&server, "snapshot", 10, "a", 12).await;
    let began = Instant::now();
    while busy.grants()[0] < 10 {
        assert!(began.elapsed() < LEASE * 2, "{:?}", busy.fleets[0].stats());
        tokio::time::sleep(REFRESH / 4).await;
    }
    // The snapshot: `a` holds the whole budget.
    server.run(&["SAVE"]);
    let saved = Instant::now();
    busy.join(&server, "snapshot", 10, "b", 12).await;
    // The shares settle, and `a`'s lease in the snapshot runs out.
    while saved.elapsed() < LEASE + REFRESH * 2 {
        hold_the_budget(&server, &busy, "snapshot", 10, REFRESH / 4).await;
    }
    let settled = busy.grants();
    assert!(settled.iter().all(|&grant| grant > 0), "{settled:?}");
    server.restart_from_snapshot();
    let restarted = Instant::now();
    let mut learnt = false;
    while restarted.elapsed() < LEASE * 2 {
        hold_the_budget(&server, &busy, "snapshot", 10, Duration::from_millis(20)).await;
        learnt |= learning(&server, "snapshot");
    }
    assert!(learnt, "the restored ledger never learned");
    busy.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_nobody_renews_expires_and_other_settings_start_fresh() {
    let server = RedisServer::start();
    let resource = Arc::new(Resource::new(10));
    let first = join(&server, "settings", 10, "a", &resource).await;

    // While the budget lives, a join with another lease or capacity is
    // told which setting differs.
    let other = Arc::new(Resource::new(10));
    let err = Fleet::builder(&server.url(), "settings")
        .capacity(10)
        .lease(LEASE * 2)
        .refresh(REFRESH)
        .join(&other)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("lease"), "{err}");
    assert!(err.to_string().contains("1500 ms"), "{err}");
    let err = Fleet::builder(&server.url(), "settings")
        .capacity(20)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&other)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("capacity"), "{err}");

    // Once nobody renews it, every key of the budget expires...
    first.leave().await;
    let left = Instant::now();
    let mut connection = server.connection();
    loop {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("{sidejob:fleet:settings}:*")
            .query(&mut connection)
            .unwrap();
        if keys.is_empty() {
            break;
        }
        assert!(left.elapsed() < LEASE * 4, "still there: {keys:?}");
        tokio::time::sleep(REFRESH).await;
    }
    // ... and a join with new settings starts a new budget.
    let fresh = Fleet::builder(&server.url(), "settings")
        .capacity(20)
        .lease(LEASE * 2)
        .refresh(REFRESH)
        .join(&other)
        .await
        .expect("a join with new settings, once the old budget expired");
    assert_eq!(meta(&server, "settings", "capacity"), Some(20));
    fresh.leave().await;
}
