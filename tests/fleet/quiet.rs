//! Quiet renewals (#41): a node whose share stands renews with plain
//! commands (`src/fleet/quiet.rs`), not the script, and a ledger that is
//! not what the node last heard sends it to the script at once, which then
//! learns as it would have had the node called it directly. Against a real
//! `redis-server`; the sleeps are refreshes and leases passing.
#![cfg(feature = "redis")]

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::fleet::Fleet;
use sidejob::Resource;

use crate::support::fleet_load::Load;
use crate::support::redis_server::{join, RedisServer, LEASE, REFRESH};

/// The script's calls so far (`EVALSHA`, and the `EVAL` redis-rs falls
/// back to), from `INFO commandstats`.
fn script_calls(server: &RedisServer) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.connection())
        .expect("INFO answers");
    info.lines()
        .filter_map(|line| {
            line.strip_prefix("cmdstat_evalsha:")
                .or_else(|| line.strip_prefix("cmdstat_eval:"))
        })
        .filter_map(|stats| {
            stats
                .split(',')
                .find_map(|field| field.strip_prefix("calls="))
                .and_then(|calls| calls.parse::<u64>().ok())
        })
        .sum()
}

fn renewals(fleets: &[Fleet]) -> u64 {
    fleets.iter().map(|fleet| fleet.stats().renewals).sum()
}

/// Whether `budget` is learning now, by its `meta` and the server's clock.
fn learning(server: &RedisServer, budget: &str) -> bool {
    let mut connection = server.connection();
    let (seconds, micros): (u64, u64) = redis::cmd("TIME")
        .query(&mut connection)
        .expect("TIME answers");
    let until: Option<u64> = redis::cmd("HGET")
        .arg(format!("{{sidejob:fleet:{budget}}}:meta"))
        .arg("learn_until")
        .query(&mut connection)
        .expect("HGET answers");
    until.is_some_and(|until| seconds * 1000 + micros / 1000 < until)
}

/// Joins `nodes` idle nodes to `budget` and waits out its first (learning)
/// lease.
async fn settled(server: &RedisServer, budget: &str, nodes: usize) -> Vec<Fleet> {
    let mut fleets = Vec::new();
    for node in 0..nodes {
        let resource = Arc::new(Resource::new(8));
        fleets.push(join(server, budget, 8, &format!("n{node}"), &resource).await);
    }
    tokio::time::sleep(LEASE + REFRESH * 2).await;
    fleets
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_whose_shares_stand_renews_without_the_script() {
    let server = RedisServer::start();
    let fleets = settled(&server, "steady", 3).await;
    let (scripts, renewed) = (script_calls(&server), renewals(&fleets));
    tokio::time::sleep(REFRESH * 10).await;
    let scripts = script_calls(&server) - scripts;
    let renewed = renewals(&fleets) - renewed;
    // Three nodes, ten refreshes: about thirty renewals. The script still
    // runs now and then (the keys' time to live every half lease, leases
    // due): a few times, not at every renewal as before.
    assert!(renewed >= 24, "{renewed} renewals");
    assert!(
        scripts * 3 <= renewed,
        "{scripts} script calls for {renewed} renewals"
    );
    for fleet in &fleets {
        let stats = fleet.stats();
        assert_eq!(stats.failed_renewals, 0, "{stats:?}");
        assert!(stats.since_renewal < REFRESH * 2, "{stats:?}");
    }
    assert!(!learning(&server, "steady"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_rewritten_behind_a_quiet_node_is_seen_and_learned() {
    let server = RedisServer::start();
    let fleets = settled(&server, "rewritten", 2).await;
    assert!(!learning(&server, "rewritten"));
    // A write the ledger lost (a restore, a replica behind): `n0`'s record
    // is not the one the script last answered it with.
    let nodes = "{sidejob:fleet:rewritten}:nodes";
    let record: String = redis::cmd("HGET")
        .arg(nodes)
        .arg("n0")
        .query(&mut server.connection())
        .expect("n0's record");
    let mut fields: Vec<&str> = record.split(' ').collect();
    fields[1] = "1";
    server.run(&["HSET", nodes, "n0", &fields.join(" ")]);
    let began = Instant::now();
    while !learning(&server, "rewritten") {
        assert!(
            began.elapsed() < REFRESH * 3,
            "the ledger never learned: {:?}",
            fleets[0].stats()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(fleets);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_key_deleted_behind_a_quiet_node_is_set_again_by_script() {
    let server = RedisServer::start();
    let fleets = settled(&server, "deleted", 1).await;
    let lease_key = |connection: &mut redis::Connection| -> Vec<String> {
        redis::cmd("KEYS")
            .arg("{sidejob:fleet:deleted}:lease:*")
            .query(connection)
            .expect("KEYS answers")
    };
    let mut connection = server.connection();
    let keys = lease_key(&mut connection);
    assert_eq!(keys.len(), 1, "{keys:?}");
    server.run(&["DEL", &keys[0]]);
    // The next quiet renewal finds no lease to extend, and the node renews
    // by script, which sets its lease key again (learning too, if the
    // record it finds is older than the lease the node last heard of).
    let began = Instant::now();
    while lease_key(&mut connection).is_empty() {
        assert!(
            began.elapsed() < REFRESH * 3,
            "the lease was not renewed: {:?}",
            fleets[0].stats()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(lease_key(&mut connection), keys);
    tokio::time::sleep(REFRESH * 2).await;
    let stats = fleets[0].stats();
    assert_eq!(stats.failed_renewals, 0, "{stats:?}");
    assert!(stats.since_renewal < REFRESH * 2, "{stats:?}");
    drop(fleets);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_renewal_redis_answers_with_an_error_is_followed_by_the_script() {
    #[cfg(feature = "tracing")]
    crate::support::tracing_capture::install();
    let server = RedisServer::start();
    let fleets = settled(&server, "wrongtype", 2).await;
    // The nodes' records replaced by a string: the quiet renewal's `HGET`
    // is answered `WRONGTYPE`, and the script, which the node calls at
    // once, finds the ledger corrupt (at its audit, a quarter lease at
    // most), forgets it and learns it again.
    let nodes = "{sidejob:fleet:wrongtype}:nodes";
    server.run(&["DEL", nodes]);
    server.run(&["SET", nodes, "not a hash"]);
    let began = Instant::now();
    loop {
        let kind: String = redis::cmd("TYPE")
            .arg(nodes)
            .query(&mut server.connection())
            .expect("TYPE answers");
        if kind == "hash" {
            break;
        }
        assert!(
            began.elapsed() < LEASE / 2 + REFRESH * 3,
            "the ledger was never made again: {:?}",
            fleets[0].stats()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(LEASE + REFRESH * 3).await;
    for fleet in &fleets {
        let stats = fleet.stats();
        assert!(stats.since_renewal < REFRESH * 2, "{stats:?}");
        assert!(!stats.at_floor, "{stats:?}");
    }
    // Each node told it: Redis refused a quiet renewal (`WRONGTYPE`, which
    // redis-rs names no code for), so it renews by script for a while.
    #[cfg(feature = "tracing")]
    {
        let events = crate::support::tracing_capture::events_where("budget", "wrongtype");
        let refused = events
            .iter()
            .filter(|event| event.message.contains("refused a quiet renewal"))
            .count();
        assert!(refused >= 1, "{events:?}");
    }
    drop(fleets);
}

/// Waits up to `bound` for `done`, naming `what` if it never is.
async fn until(bound: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let began = Instant::now();
    while !done() {
        assert!(began.elapsed() < bound, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_want_that_fell_is_kept_while_none_is_capped_and_given_back_once_one_is() {
    let server = RedisServer::start();
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (a, b) = (Arc::new(Resource::new(8)), Arc::new(Resource::new(8)));
    let fleet_a = join(&server, "kept", 16, "a", &a).await;
    let fleet_b = join(&server, "kept", 16, "b", &b).await;
    // `a` holds 8 of the budget's 16: no want is capped.
    let load = Load::holding(&a, 8, &in_flight, &most);
    until(LEASE * 2 + REFRESH * 10, "a never held 8", || {
        a.usage() == 8 && fleet_a.stats().wants == 8 && !learning(&server, "kept")
    })
    .await;
    // Its demand falls to nothing. No node waits for the slots it would
    // free: it reports its want as it was, keeps its slots in the ledger,
    // and renews on; its own capacity follows what it wants.
    load.stop();
    let renewed = fleet_a.stats().renewals;
    tokio::time::sleep(REFRESH * 5).await;
    let stats = fleet_a.stats();
    assert!(stats.renewals >= renewed + 3, "{stats:?}");
    assert_eq!((stats.wants, stats.grant), (8, 0), "{stats:?}");
    assert_eq!(a.capacity(), 0);
    let grants = server.grants("kept");
    assert!(grants.contains(&("a".to_owned(), 8)), "{grants:?}");
    // `b` now wants more than the 8 left: the level caps it, `a` reads that
    // at its next renewal and reports what it wants now, and `b` gets the
    // slots `a` held.
    let (b_in_flight, b_most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = Load::holding(&b, 14, &b_in_flight, &b_most);
    until(REFRESH * 12, "b never got the slots a kept", || {
        b.usage() == 14
    })
    .await;
    assert_eq!(fleet_a.stats().wants, 0, "{:?}", fleet_a.stats());
    assert!(a.capacity() + b.capacity() <= 16);
    load.stop();
    drop((fleet_a, fleet_b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_keeping_a_want_admits_only_what_it_wants_after_a_resize_down() {
    let server = RedisServer::start();
    let (a, b) = (Arc::new(Resource::new(16)), Arc::new(Resource::new(1)));
    let fleet_a = join(&server, "burst", 16, "a", &a).await;
    let fleet_b = join(&server, "burst", 16, "b", &b).await;
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = Load::holding(&a, 16, &in_flight, &most);
    until(LEASE * 2 + REFRESH * 10, "a never held 16", || {
        a.usage() == 16
    })
    .await;
    // `a` goes idle, keeping its want of 16 (no want is capped).
    load.stop();
    tokio::time::sleep(REFRESH * 5).await;
    assert_eq!(fleet_a.stats().wants, 16, "{:?}", fleet_a.stats());
    // The budget falls to 4 while `a` is between two renewals, and a burst
    // comes: `a` admits what it wanted (nothing), not the 16 it kept in the
    // ledger, until its next renewal tells it the budget fell.
    fleet_b.set_capacity(4).await.expect("the budget resized");
    let (burst_in_flight, burst_most) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let burst = Load::holding(&a, 16, &burst_in_flight, &burst_most);
    tokio::time::sleep(REFRESH * 4).await;
    let most = burst_most.load(std::sync::atomic::Ordering::SeqCst);
    burst.stop();
    assert!(
        most <= 4,
        "a admitted {most} > 4 after the budget fell to 4"
    );
    drop((fleet_a, fleet_b));
}
