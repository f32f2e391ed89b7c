//! The fleet's script (`src/fleet/renew.lua`) run by a real
//! `redis-server`, called as nodes call it, under the ledger faults an
//! adversarial review of its O(log n) layout found (#41): an `owner`
//! answer after the call forgot expired nodes, the learning lease's
//! `held` records deleted, the wants' tree deleted before a leave, and a
//! ledger that lost the time of its last call.
#![cfg(feature = "redis")]

use std::time::{Duration, Instant};

use crate::support;
use support::redis_server::{ledger_grants, RedisServer};

const SCRIPT: &str = include_str!("../../src/fleet/renew.lua");
const LEASE_MS: u64 = 2_000;
const REFRESH_MS: u64 = 500;

/// What a call answered: its status, or the error it failed with.
#[derive(Debug)]
enum Reply {
    Ok {
        grant: u64,
        target: u64,
        learning: bool,
    },
    Status(String),
    Failed(String),
}

/// One budget's nodes, each remembering its last answer as a node does.
struct Budget {
    name: &'static str,
    capacity: u64,
    connection: redis::Connection,
    /// Per node: the expiry of its last answer and when it sent that call,
    /// and what it may hold (its last target).
    seen: std::collections::HashMap<String, (i64, Instant, u64)>,
}

impl Budget {
    fn new(server: &RedisServer, name: &'static str, capacity: u64) -> Budget {
        Budget {
            name,
            capacity,
            connection: server.connection(),
            seen: Default::default(),
        }
    }

    fn key(&self, key: &str) -> String {
        format!("{{sidejob:fleet:{}}}:{key}", self.name)
    }

    /// A call of node `node` with `token`, mode `mode`, wanting `want`.
    fn call(&mut self, node: &str, token: &str, mode: &str, want: u64) -> Reply {
        let (seen, since, holding) = match self.seen.get(node) {
            Some(&(expiry, sent, holding)) => (expiry, sent.elapsed().as_millis() as i64, holding),
            None => (-1, -1, 0),
        };
        let script = redis::Script::new(SCRIPT);
        let mut invocation = script.prepare_invoke();
        for key in ["meta", "nodes", "expiry", "held", "levels", "order"] {
            invocation.key(self.key(key));
        }
        invocation
            .arg(node)
            .arg(token)
            .arg(self.capacity)
            .arg(LEASE_MS)
            .arg(REFRESH_MS)
            .arg(want)
            .arg(holding)
            .arg(mode)
            .arg(seen)
            .arg(since);
        let sent = Instant::now();
        type Answer = (String, u64, u64, u64, u64, u64, i64, u64, String);
        match invocation.invoke::<Answer>(&mut self.connection) {
            Ok((status, grant, target, _, learning, _, expiry, _, _)) if status == "ok" => {
                self.seen.insert(node.to_owned(), (expiry, sent, target));
                Reply::Ok {
                    grant,
                    target,
                    learning: learning == 1,
                }
            }
            Ok((status, ..)) => Reply::Status(status),
            Err(error) => {
                self.seen.remove(node);
                Reply::Failed(error.to_string())
            }
        }
    }

    /// Node `node` renews under its own token.
    fn renew(&mut self, node: &str, want: u64) -> Reply {
        self.call(node, &format!("token-{node}"), "renew", want)
    }

    /// `nodes` renew every 300 ms for `time`, each wanting the capacity.
    fn renew_for(&mut self, nodes: &[&str], time: Duration) {
        let began = Instant::now();
        while began.elapsed() < time {
            for node in nodes {
                self.renew(node, self.capacity);
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    fn grants(&mut self) -> Vec<(String, u64)> {
        ledger_grants(&mut self.connection, self.name)
    }

    fn meta(&mut self, field: &str) -> Option<u64> {
        redis::cmd("HGET")
            .arg(self.key("meta"))
            .arg(field)
            .query(&mut self.connection)
            .unwrap()
    }
}

#[test]
fn an_owner_answer_after_forgetting_expired_nodes_keeps_the_figures() {
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "owner", 12);
    // Past the first (learning) lease, three busy nodes share the budget.
    budget.renew_for(&["a", "b", "c"], Duration::from_millis(LEASE_MS + 600));
    // `c` stops renewing; its lease runs out while nobody calls, so the
    // next call is the one that forgets it.
    budget.renew_for(&["a", "b"], Duration::from_millis(LEASE_MS - 800));
    std::thread::sleep(Duration::from_millis(1_100));
    // A second process under `a`'s name joins: refused, after the call
    // forgot `c`.
    let intruder = budget.call("a", "another-process", "join", 12);
    assert!(
        matches!(&intruder, Reply::Status(status) if status == "owner"),
        "{intruder:?}"
    );
    // The figures the call changed were kept: they agree with the records,
    // and the budget goes on without a learning lease.
    let grants = budget.grants();
    let total: u64 = grants.iter().map(|(_, grant)| grant).sum();
    assert_eq!(
        budget.meta("granted"),
        Some(total),
        "the running total drifted from the grants {grants:?}"
    );
    assert_eq!(budget.meta("nodes"), Some(2), "the node count drifted");
    let began = Instant::now();
    while began.elapsed() < Duration::from_millis(REFRESH_MS * 4) {
        for node in ["a", "b"] {
            let reply = budget.renew(node, 12);
            assert!(
                matches!(
                    reply,
                    Reply::Ok {
                        learning: false,
                        ..
                    }
                ),
                "{node}: {reply:?}"
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let grants = budget.grants();
    for node in ["a", "b"] {
        match budget.renew(node, 12) {
            Reply::Ok { target, .. } => assert_eq!(target, 6, "{node}: {grants:?}"),
            other => panic!("{node}: {other:?}"),
        }
    }
}

#[test]
fn held_records_lost_while_learning_start_the_learning_over() {
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "held", 12);
    budget.renew_for(&["a", "b", "c"], Duration::from_millis(LEASE_MS + 600));
    for node in ["a", "b", "c"] {
        assert!(matches!(
            budget.renew(node, 12),
            Reply::Ok { target: 4, .. }
        ));
    }
    // The ledger is lost: it learns, each node holding 4.
    server.run(&["FLUSHALL"]);
    let held = budget.key("held");
    for _ in 0..3 {
        budget.renew("a", 12);
        server.run(&["DEL", &held]);
    }
    budget.renew("a", 12);
    server.run(&["HDEL", &held, "a"]);
    for node in ["a", "b", "c", "a", "b", "c"] {
        match budget.renew(node, 12) {
            Reply::Ok { learning, .. } => assert!(learning, "{node} renewed outside learning"),
            other => panic!("{node}: {other:?}"),
        }
        let grants = budget.grants();
        let total: u64 = grants.iter().map(|(_, grant)| grant).sum();
        assert!(total <= 12, "grants {grants:?} past the capacity 12");
    }
}

#[test]
fn a_tree_deleted_before_a_leave_is_found_and_learned_again() {
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "tree", 12);
    budget.renew_for(&["a", "b", "c"], Duration::from_millis(LEASE_MS + 600));
    server.run(&["DEL", &budget.key("levels")]);
    assert!(matches!(
        budget.call("c", "token-c", "leave", 0),
        Reply::Status(status) if status == "left"
    ));
    let mut failed = 0;
    let mut learning = false;
    // Within a quarter lease the audit compares the tree with the figures.
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(LEASE_MS / 8));
        for node in ["a", "b"] {
            match budget.renew(node, 12) {
                Reply::Failed(error) => {
                    assert!(error.contains("CORRUPT"), "{error}");
                    failed += 1;
                }
                Reply::Ok { learning: l, .. } => learning |= l,
                Reply::Status(status) => panic!("{status}"),
            }
        }
    }
    assert!(failed <= 1, "{failed} calls failed");
    assert!(learning, "the budget did not learn again");
}

#[test]
fn a_ledger_without_the_time_of_its_last_call_learns() {
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "last", 12);
    budget.renew_for(&["a", "b"], Duration::from_millis(LEASE_MS + 600));
    assert!(matches!(
        budget.renew("a", 12),
        Reply::Ok {
            learning: false,
            ..
        }
    ));
    server.run(&["HDEL", &budget.key("meta"), "last"]);
    assert!(
        matches!(budget.renew("a", 12), Reply::Ok { learning: true, .. }),
        "a gap the ledger cannot measure is not taken for none"
    );
    let _ = budget.grants();
}

#[test]
fn grants_stay_within_the_capacity_and_shares_fill_it_under_steady_calls() {
    // A sanity run of the helpers above: the grant answered is the one
    // recorded.
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "steady", 10);
    budget.renew_for(&["a", "b"], Duration::from_millis(LEASE_MS + 600));
    let a = budget.renew("a", 10);
    let b = budget.renew("b", 10);
    let (Reply::Ok { grant: ga, .. }, Reply::Ok { grant: gb, .. }) = (a, b) else {
        panic!("renewals failed");
    };
    let mut grants = budget.grants();
    grants.sort();
    assert_eq!(grants, [("a".to_owned(), ga), ("b".to_owned(), gb)]);
    assert_eq!(ga + gb, 10);
}

/// The last targets of `nodes` summed: what they may admit between them.
fn admitted(budget: &Budget, nodes: &[&str]) -> u64 {
    nodes
        .iter()
        .map(|node| budget.seen.get(*node).map_or(0, |seen| seen.2))
        .sum()
}

#[test]
fn a_learning_lease_after_a_resize_down_grants_within_the_new_capacity() {
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "resized", 1000);
    budget.renew_for(&["a", "b"], Duration::from_millis(LEASE_MS + 600));
    assert_eq!(admitted(&budget, &["a", "b"]), 1000);
    budget.renew("b", 1000);
    budget.capacity = 100;
    assert!(matches!(
        budget.call("a", "token-a", "resize", 1000),
        Reply::Ok { .. }
    ));
    // No call for more than three refreshes (and less than a lease): the
    // ledger may be stale, and learns from what the nodes hold (500 each,
    // under the old capacity).
    std::thread::sleep(Duration::from_millis(REFRESH_MS * 3 + 100));
    for node in ["a", "b", "a", "b", "c", "a", "b", "c"] {
        let reply = budget.renew(node, 1000);
        assert!(matches!(reply, Reply::Ok { .. }), "{node}: {reply:?}");
        // Once a and b applied the resize, the three may admit at most
        // the new capacity between them.
        if node == "c" {
            let total = admitted(&budget, &["a", "b", "c"]);
            assert!(total <= 100, "{total} admitted of 100: {:?}", budget.seen);
        }
    }
}

#[test]
fn joins_and_leaves_do_not_put_off_the_audit() {
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "churn", 12);
    budget.renew_for(&["a", "b", "c"], Duration::from_millis(LEASE_MS + 600));
    server.run(&["DEL", &budget.key("nodes")]);
    // A node joins and leaves at every round: the set of nodes keeps
    // changing, and with it the keys' time to live is renewed. The audit
    // still comes a quarter lease apart, finds the figures counting nodes
    // whose records are gone, and the ledger is learned again: the shares
    // are whole once the learning lease is over.
    let began = Instant::now();
    let mut targets = [0; 3];
    while began.elapsed() < Duration::from_millis(LEASE_MS * 2 + 600) {
        for (i, node) in ["a", "b", "c"].into_iter().enumerate() {
            if let Reply::Ok { target, .. } = budget.renew(node, 12) {
                targets[i] = target;
            }
        }
        budget.call("z", "token-z", "join", 1);
        budget.call("z", "token-z", "leave", 0);
        budget.seen.remove("z");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(targets, [4, 4, 4], "the lost records went unseen");
}

#[test]
fn a_level_kept_that_does_not_parse_is_found_again() {
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "water", 12);
    budget.renew_for(&["a", "b", "c"], Duration::from_millis(LEASE_MS + 600));
    let version = budget.meta("version").expect("a version");
    server.run(&[
        "HSET",
        &budget.key("meta"),
        "water",
        &format!("{version} x 0 0"),
    ]);
    for node in ["a", "b", "c", "a", "b", "c"] {
        match budget.renew(node, 12) {
            Reply::Ok { target, .. } => assert_eq!(target, 4, "{node}"),
            other => panic!("{node}: {other:?}"),
        }
    }
}

#[test]
fn a_due_past_any_lease_written_by_hand_does_not_stop_the_purge() {
    let server = RedisServer::start();
    let mut budget = Budget::new(&server, "due", 12);
    budget.renew_for(&["a", "b"], Duration::from_millis(LEASE_MS + 600));
    // No lease ends this late: the next call's own lease brings `due` back
    // (it is at most each lease written), so the look at the leases due is
    // not put off, and `b`, which stops renewing, is forgotten.
    server.run(&["HSET", &budget.key("meta"), "due", "99999999999999999"]);
    budget.renew_for(&["a"], Duration::from_millis(LEASE_MS * 2));
    let names: Vec<String> = budget.grants().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["a"], "b's lease ran out and it was never forgotten");
}
