//! A Redis outage longer than the lease (#37, defect 8): by default each
//! node falls to its safe share, the budget over the nodes it saw at its
//! last renewal (Doorman's safe capacity), so the fleet keeps serving
//! within the budget; the ledger, silent for longer than a few refreshes,
//! learns once Redis is back, and the nodes get their grants again.

use std::time::{Duration, Instant};

use super::{hold_the_budget, Busy};
use crate::support::redis_server::{RedisServer, LEASE, REFRESH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_cut_off_together_keep_their_safe_shares_within_the_budget() {
    let server = RedisServer::start();
    let mut busy = Busy::new();
    busy.join(&server, "outage", 10, "a", 12).await;
    busy.join(&server, "outage", 10, "b", 12).await;
    hold_the_budget(&server, &busy, "outage", 10, REFRESH * 4).await;

    server.signal("-STOP");
    let stopped = Instant::now();
    while stopped.elapsed() < LEASE + REFRESH * 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(busy.most() <= 10, "{} held at once", busy.most());
    }
    let cut_off = busy.grants();
    let stats: Vec<_> = busy.fleets.iter().map(|fleet| fleet.stats()).collect();
    server.signal("-CONT");
    assert_eq!(cut_off, vec![5, 5], "{stats:?}");
    assert!(stats.iter().all(|stats| stats.at_floor), "{stats:?}");

    // Back: renewals answer again and the nodes leave their floor.
    let resumed = Instant::now();
    while busy.fleets.iter().any(|fleet| fleet.stats().at_floor) {
        assert!(resumed.elapsed() < LEASE, "{:?}", busy.grants());
        hold_the_budget(&server, &busy, "outage", 10, REFRESH / 4).await;
    }
    hold_the_budget(&server, &busy, "outage", 10, LEASE + REFRESH * 2).await;
    busy.stop();
}
