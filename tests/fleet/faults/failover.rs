//! A primary demoted behind the address the nodes use (#37, defect 13):
//! after a failover behind a virtual IP, a DNS name or a proxy, the old
//! primary answers every write with `READONLY` on the connections it still
//! has. A node's failed call drops its connection, so its next one goes to
//! the new primary, and the node keeps its grant. Two real redis-servers,
//! one replicating the other, behind a TCP proxy.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sidejob::fleet::Fleet;
use sidejob::Resource;

use super::Busy;
use crate::support::redis_server::{RedisServer, LEASE, REFRESH};
use crate::support::tcp_proxy::TcpProxy;

fn replication(server: &RedisServer) -> String {
    redis::cmd("INFO")
        .arg("replication")
        .query(&mut server.connection())
        .expect("INFO answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_follows_a_failover_behind_its_address() {
    let (old, new) = (RedisServer::start(), RedisServer::start());
    let proxy = TcpProxy::start(old.port);
    let resource = Arc::new(Resource::new(10));
    let fleet = Fleet::builder(&proxy.url(), "failover")
        .capacity(10)
        .lease(LEASE)
        .refresh(REFRESH)
        .node("a")
        .join(&resource)
        .await
        .expect("joins through the proxy");
    let mut busy = Busy::new();
    busy.add(resource, fleet, 4);

    // The new server replicates the old one, then takes over.
    new.run(&["REPLICAOF", "127.0.0.1", &old.port.to_string()]);
    let began = Instant::now();
    while !replication(&new).contains("master_link_status:up") {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{}",
            replication(&new)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(REFRESH).await; // the last renewal replicated
    proxy.retarget(new.port);
    new.run(&["REPLICAOF", "NO", "ONE"]);
    old.run(&["REPLICAOF", "127.0.0.1", &new.port.to_string()]);
    let renewals = busy.fleets[0].stats().renewals;

    // Well past the lease: the node renews on the new primary and never
    // falls to its floor.
    let switched = Instant::now();
    while switched.elapsed() < LEASE * 2 {
        let stats = busy.fleets[0].stats();
        assert!(!stats.at_floor, "{stats:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stats = busy.fleets[0].stats();
    assert!(stats.renewals > renewals + 4, "{stats:?}");
    assert!(!new.grants("failover").is_empty());
    busy.stop();
}
