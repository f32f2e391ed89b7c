//! A node that leaves, or is dropped, while its permits are still held
//! (#37, defect 9): it admits only its floor at once, but keeps renewing
//! what it still holds until the permits are back, so the ledger never
//! hands those slots to another node; then it gives its grant back.

use std::sync::Arc;
use std::time::Duration;

use sidejob::Resource;

use super::{ledger_total, Busy};
use crate::support::redis_server::{join, RedisServer, LEASE, REFRESH};

/// Watches for `time`: the ledger grants at most the budget (10), and `b`
/// never holds more than the budget less `a`'s `held` permits.
async fn keeps_held(server: &RedisServer, busy: &Busy, budget: &str, held: usize, time: Duration) {
    let began = std::time::Instant::now();
    while began.elapsed() < time {
        let ledger = ledger_total(server, budget);
        assert!(ledger <= 10, "{:?}", server.grants(budget));
        assert!(
            busy.most() + held <= 10,
            "b held {} beside a's {held}: {:?}",
            busy.most(),
            server.grants(budget)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Node `a` holds `held` permits of budget `budget` (10) while `b` is
/// busy; `a` then goes (by `go`), and for two leases the ledger must keep
/// `a`'s permits: `b`'s grant plus them never pass the budget. Then `a`
/// lets them go, and `b` gets the whole budget.
async fn goes_while_holding(budget: &str, held: usize, go: impl FnOnce(sidejob::fleet::Fleet)) {
    let server = RedisServer::start();
    let a = Arc::new(Resource::new(10));
    let fleet_a = join(&server, budget, 10, "a", &a).await;
    let permits: Vec<_> = (0..held).map(|_| a.try_acquire().unwrap()).collect();
    let mut busy = Busy::new();
    busy.join(&server, budget, 10, "b", 12).await;
    keeps_held(&server, &busy, budget, held, REFRESH * 4).await;

    go(fleet_a);
    let went = std::time::Instant::now();
    while a.capacity() > 0 {
        // (A spawned `leave` lowers it when it first runs.)
        assert!(
            went.elapsed() < REFRESH,
            "a node that goes admits nothing more"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // Well past the lease: the ledger still keeps what `a` holds.
    keeps_held(&server, &busy, budget, held, LEASE * 2).await;
    let ledger = server.grants(budget);
    assert!(
        ledger
            .iter()
            .any(|(node, grant)| node == "a" && *grant as usize >= held),
        "{ledger:?}"
    );

    drop(permits);
    let mut waited = Duration::ZERO;
    while busy.grants()[0] < 10 {
        assert!(
            waited < LEASE,
            "{:?} {:?}",
            busy.grants(),
            server.grants(budget)
        );
        tokio::time::sleep(REFRESH / 4).await;
        waited += REFRESH / 4;
    }
    assert!(server.grants(budget).iter().all(|(node, _)| node != "a"));
    busy.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_leaving_with_permits_held_keeps_them_in_the_ledger_until_they_are_back() {
    goes_while_holding("leave", 4, |fleet| {
        // `leave` waits for the permits: it runs on, in the background.
        tokio::spawn(fleet.leave());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_dropped_with_permits_held_keeps_them_in_the_ledger_until_they_are_back() {
    goes_while_holding("drop", 4, drop).await;
}
