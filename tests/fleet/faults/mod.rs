//! A fleet's budget under the faults an adversarial review found (#37),
//! each against a real `redis-server` started by the test: more busy nodes
//! than slots, a ledger lost or restored stale, a step of Redis's clock,
//! two processes under one name, a budget left behind, bounds on `join`
//! and `set_capacity`, an outage past the lease, a node leaving with
//! permits still held, and a primary demoted behind the address the nodes
//! use, and bad data in Redis. Each node is a `Resource` in this process with its own `Fleet`;
//! the sleeps are leases and refreshes passing.
#![cfg(feature = "redis")]

use crate::support;

mod bad_data;
mod bounds;
mod clock_step;
mod concurrent_calls;
mod deployment;
mod drain;
mod failover;
mod ledger_lost;
mod node_names;
mod outage;
mod oversubscribed;
mod partition;
mod stalled_node;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::fleet::Fleet;
use sidejob::Resource;
use support::fleet_load::Load;
use support::redis_server::{join, RedisServer};

/// Busy nodes of one budget, each a resource, its fleet and its load,
/// counting the permits held across all of them at once.
struct Busy {
    resources: Vec<Arc<Resource>>,
    fleets: Vec<Fleet>,
    loads: Vec<Load>,
    in_flight: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Busy {
    fn new() -> Busy {
        Busy {
            resources: Vec::new(),
            fleets: Vec::new(),
            loads: Vec::new(),
            in_flight: Arc::new(AtomicUsize::new(0)),
            most: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Joins node `name` to `budget` of `capacity` on `server` with the
    /// tests' lease and refresh, and loads it with `threads` threads.
    async fn join(
        &mut self,
        server: &RedisServer,
        budget: &str,
        capacity: usize,
        name: &str,
        threads: usize,
    ) {
        let resource = Arc::new(Resource::new(capacity));
        let fleet = join(server, budget, capacity, name, &resource).await;
        self.add(resource, fleet, threads);
    }

    fn add(&mut self, resource: Arc<Resource>, fleet: Fleet, threads: usize) {
        self.loads
            .push(Load::start(&resource, threads, &self.in_flight, &self.most));
        self.resources.push(resource);
        self.fleets.push(fleet);
    }

    fn grants(&self) -> Vec<usize> {
        self.fleets.iter().map(Fleet::grant).collect()
    }

    /// The most permits held at once across the nodes so far.
    fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }

    fn stop(self) {
        for load in self.loads {
            load.stop();
        }
    }
}

/// The sum of the grants in `budget`'s ledger.
fn ledger_total(server: &RedisServer, budget: &str) -> u64 {
    server.grants(budget).iter().map(|(_, grant)| grant).sum()
}

/// Watches for `time`: every 10 ms the ledger sums to at most `capacity`,
/// and the permits held across `busy`'s nodes never exceeded it.
async fn hold_the_budget(
    server: &RedisServer,
    busy: &Busy,
    budget: &str,
    capacity: usize,
    time: Duration,
) {
    let began = Instant::now();
    while began.elapsed() < time {
        let ledger = ledger_total(server, budget);
        assert!(
            ledger <= capacity as u64,
            "the ledger grants {ledger} of {capacity}: {:?}",
            server.grants(budget)
        );
        assert!(
            busy.most() <= capacity,
            "{} held at once of {capacity}; grants {:?}",
            busy.most(),
            busy.grants()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads field `field` of `budget`'s `meta` hash.
fn meta(server: &RedisServer, budget: &str, field: &str) -> Option<u64> {
    redis::cmd("HGET")
        .arg(format!("{{sidejob:fleet:{budget}}}:meta"))
        .arg(field)
        .query(&mut server.connection())
        .expect("HGET answers")
}

/// Whether `budget` is learning now, by its `meta` and the server's clock.
fn learning(server: &RedisServer, budget: &str) -> bool {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME")
        .query(&mut server.connection())
        .expect("TIME answers");
    let now = seconds * 1000 + micros / 1000;
    meta(server, budget, "learn_until").is_some_and(|until| now < until)
}
