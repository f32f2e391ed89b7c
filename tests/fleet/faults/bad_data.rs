//! Bad data in Redis (#41): a key of another kind, a value that is no
//! count, a key deleted by hand, a ledger of the older layout. Each is
//! found (at a call that touches it, or at the audit a quarter lease
//! apart), costs at most a failed call per node and a learning lease, and
//! never a grant past the budget nor a budget that fails for good.

use std::time::Instant;

use super::{hold_the_budget, learning, ledger_total, Busy};
use crate::support::redis_server::{RedisServer, LEASE, REFRESH};

const CAPACITY: usize = 10;

/// The budget's keys, as `renew.lua` names them.
const KEYS: [&str; 6] = ["meta", "nodes", "expiry", "held", "levels", "order"];

/// Two busy nodes on `budget`, their grants settled at the whole budget.
async fn settled(server: &RedisServer, budget: &str) -> Busy {
    let mut busy = Busy::new();
    busy.join(server, budget, CAPACITY, "a", 12).await;
    busy.join(server, budget, CAPACITY, "b", 12).await;
    until(server, &busy, budget, "the grants settle").await;
    busy
}

/// Waits, holding the budget, until the nodes renew again and their
/// grants take the whole budget, outside any learning lease.
async fn until(server: &RedisServer, busy: &Busy, budget: &str, what: &str) {
    let began = Instant::now();
    loop {
        let grants: usize = busy.grants().iter().sum();
        if grants == CAPACITY
            && ledger_total(server, budget) == CAPACITY as u64
            && !learning(server, budget)
        {
            return;
        }
        assert!(
            began.elapsed() < LEASE * 4,
            "{what}: grants {:?}, ledger {:?}, {:?}",
            busy.grants(),
            server.grants(budget),
            busy.fleets.iter().map(|f| f.stats()).collect::<Vec<_>>()
        );
        hold_the_budget(server, busy, budget, CAPACITY, REFRESH / 4).await;
    }
}

/// The renewals that failed across `busy`'s nodes so far.
fn failed(busy: &Busy) -> u64 {
    busy.fleets.iter().map(|f| f.stats().failed_renewals).sum()
}

/// Damages a settled budget with `commands`, then holds the budget for
/// two leases while the nodes run on, and waits for the fleet to settle
/// again. Returns the renewals that failed meanwhile, and whether the
/// budget learned.
async fn damage(budget: &str, commands: &[&[&str]]) -> (u64, bool) {
    let server = RedisServer::start();
    let busy = settled(&server, budget).await;
    let failed_before = failed(&busy);
    for command in commands {
        server.run(command);
    }
    let began = Instant::now();
    let mut learned = false;
    while began.elapsed() < LEASE * 2 {
        hold_the_budget(&server, &busy, budget, CAPACITY, REFRESH / 10).await;
        learned |= learning(&server, budget);
    }
    until(&server, &busy, budget, "the fleet settles again").await;
    // Every node renews again.
    let renewed: Vec<u64> = busy.fleets.iter().map(|f| f.stats().renewals).collect();
    tokio::time::sleep(REFRESH * 3).await;
    for (fleet, before) in busy.fleets.iter().zip(renewed) {
        let stats = fleet.stats();
        assert!(
            stats.renewals > before && !stats.at_floor,
            "a node stopped renewing: {stats:?}"
        );
    }
    // Every key of the budget has its time to live again.
    for name in KEYS {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key(budget, name))
            .query(&mut server.connection())
            .expect("PTTL answers");
        assert!(ttl == -2 || ttl > 0, "`{name}` has no time to live ({ttl})");
    }
    let failures = failed(&busy) - failed_before;
    busy.stop();
    (failures, learned)
}

fn key(budget: &str, name: &str) -> String {
    format!("{{sidejob:fleet:{budget}}}:{name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_of_another_kind_fails_a_call_and_the_budget_is_learned_again() {
    let budget = "kind";
    let order = key(budget, "order");
    let (failures, learned) = damage(budget, &[&["DEL", &order], &["SET", &order, "x"]]).await;
    assert!(failures > 0, "no call reported the key");
    assert!(learned, "the budget was not learned again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_that_is_no_count_fails_a_call_and_the_budget_is_learned_again() {
    let budget = "count";
    let (failures, learned) =
        damage(budget, &[&["HSET", &key(budget, "nodes"), "a", "many"]]).await;
    assert!(failures > 0, "no call reported the value");
    assert!(learned, "the budget was not learned again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_total_that_is_no_count_fails_a_call_and_the_budget_is_learned_again() {
    let budget = "total";
    let (failures, learned) =
        damage(budget, &[&["HSET", &key(budget, "meta"), "granted", "-3"]]).await;
    assert!(failures > 0, "no call reported the total");
    assert!(learned, "the budget was not learned again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_deleted_by_hand_are_found_and_learned_again() {
    // What the running figures count and one renewal does not write
    // whole again: the budget learns.
    for deleted in ["levels", "nodes", "order"] {
        let budget = format!("deleted-{deleted}");
        let (_, learned) = damage(&budget, &[&["DEL", &key(&budget, deleted)]]).await;
        assert!(
            learned,
            "`{deleted}` deleted: the budget was not learned again"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_leases_are_written_again() {
    // Every live node writes its lease at each renewal: deleted, the
    // leases are whole again after one refresh (or the audit finds them
    // short first, and the budget learns).
    damage(
        "deleted-expiry",
        &[&["DEL", &key("deleted-expiry", "expiry")]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_of_the_older_layout_is_learned_over() {
    // The older layout kept the leases in a hash, and no running figures.
    let budget = "older";
    let expiry = key(budget, "expiry");
    let far = (u64::MAX >> 12).to_string();
    let (_, learned) = damage(
        budget,
        &[
            &["DEL", &expiry],
            &["HSET", &expiry, "a", &far, "b", &far],
            &["HDEL", &key(budget, "meta"), "layout"],
        ],
    )
    .await;
    assert!(learned, "the budget was not learned again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flushed_redis_is_learned_again() {
    let (_, learned) = damage("flushall", &[&["FLUSHALL"]]).await;
    assert!(learned, "the budget was not learned again");
}
