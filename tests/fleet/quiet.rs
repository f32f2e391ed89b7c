//! Quiet renewals (#41): a node whose share stands renews with plain
//! commands (`src/fleet/quiet.rs`), not the script, and a ledger that is
//! not what the node last heard sends it to the script at once, which then
//! learns as it would have had the node called it directly. Against a real
//! `redis-server`; the sleeps are refreshes and leases passing.
#![cfg(feature = "redis")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::fleet::Fleet;
use sidejob::Resource;

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
async fn a_redis_that_refuses_the_quiet_renewal_is_renewed_by_script() {
    let server = RedisServer::start();
    // The ACL of the version before quiet renewals: the script's commands
    // only (no `MULTI`, `PEXPIRETIME` or `SET` outside the script).
    let acl = "ACL SETUSER fleet on >secret ~{sidejob:fleet:* +evalsha +script|load +time \
               +type +exists +unlink +del +pexpire +pexpiretime +set +hget +hmget +hset \
               +hsetnx +hdel +hgetall +hlen +hexists +hincrby +zadd +zrem +zscore +zcard \
               +zcount +zrank +zrange +zrangebyscore";
    server.run(&acl.split_whitespace().collect::<Vec<_>>());
    let url = format!("redis://fleet:secret@127.0.0.1:{}/", server.port);
    let resource = Arc::new(Resource::new(8));
    let fleet = Fleet::builder(&url, "refused")
        .capacity(8)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&resource)
        .await
        .expect("joins");
    tokio::time::sleep(LEASE + REFRESH * 6).await;
    let stats = fleet.stats();
    assert_eq!(stats.failed_renewals, 0, "{stats:?}");
    assert!(stats.renewals >= 8, "{stats:?}");
    assert!(stats.since_renewal < REFRESH * 2, "{stats:?}");
    assert!(!stats.at_floor, "{stats:?}");
    fleet.leave().await;
}
