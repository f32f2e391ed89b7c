//! A fleet's budget changed at run time (#30): `Fleet::set_capacity` on one
//! node, and every node follows at its next renewal: the ledger and the
//! permits held across the nodes come under the new capacity within a few
//! refreshes. `on_grant` lets another face follow the grant. Real
//! `redis-server`; the sleeps are refreshes passing.
#![cfg(feature = "redis")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::support;
use support::redis_server::{join, RedisServer, REFRESH};

use sidejob::Resource;

/// Holds every permit it can get, as a busy node would.
fn hold_all(resource: &Resource) -> Vec<sidejob::Permit<'_>> {
    std::iter::from_fn(|| resource.try_acquire().ok()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lowered_capacity_holds_across_the_fleet_within_a_few_refreshes() {
    let server = RedisServer::start();
    let (a, b) = (Arc::new(Resource::new(12)), Arc::new(Resource::new(12)));
    let fleet_a = join(&server, "resize", 12, "a", &a).await;
    let fleet_b = join(&server, "resize", 12, "b", &b).await;
    let followed = Arc::new(AtomicUsize::new(usize::MAX));
    let seen = Arc::clone(&followed);
    fleet_b.on_grant(move |grant| seen.store(grant, Ordering::SeqCst));
    assert_eq!(followed.load(Ordering::SeqCst), fleet_b.grant()); // told at once

    fleet_a.set_capacity(4).await.unwrap();
    let lowered = Instant::now();
    loop {
        // Busy nodes: each holds what its grant lets it, then lets go.
        let held = hold_all(&a).len() + hold_all(&b).len();
        let ledger: u64 = server.grants("resize").iter().map(|(_, grant)| grant).sum();
        if held <= 4 && ledger <= 4 && fleet_a.grant() + fleet_b.grant() <= 4 {
            break;
        }
        assert!(
            lowered.elapsed() < REFRESH * 6,
            "still {held} held, ledger {ledger}: {:?} {:?}",
            fleet_a.stats(),
            fleet_b.stats()
        );
        tokio::time::sleep(REFRESH / 4).await;
    }
    assert_eq!(followed.load(Ordering::SeqCst), fleet_b.grant());
    fleet_a.leave().await;
    fleet_b.leave().await;
}
