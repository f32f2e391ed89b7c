//! `Fleet::set_capacity` against a Redis that stopped answering (#30):
//! `SIGSTOP`ped, it neither answers nor refuses, and the call gives up with
//! `FleetError::Redis` (the `redis` crate's response timeout, 500 ms)
//! instead of waiting for ever. Once Redis resumes, the call works. Real
//! `redis-server`.
#![cfg(feature = "redis")]

use std::sync::Arc;

use crate::support;
use support::redis_server::{join, RedisServer, LEASE};

use sidejob::fleet::FleetError;
use sidejob::Resource;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_gives_up_when_redis_does_not_answer() {
    let server = RedisServer::start();
    let resource = Arc::new(Resource::new(8));
    let fleet = join(&server, "unanswered", 8, "a", &resource).await;

    server.signal("-STOP");
    // Far more than the lease: only a call that waits for ever runs out.
    let resized = tokio::time::timeout(LEASE * 10, fleet.set_capacity(4)).await;
    server.signal("-CONT");
    let resized = resized.expect("set_capacity waited past ten leases");
    assert!(matches!(resized, Err(FleetError::Redis(_))), "{resized:?}");

    // Resumed, Redis answers again.
    let resized = tokio::time::timeout(LEASE * 10, fleet.set_capacity(4)).await;
    resized
        .expect("set_capacity answers once Redis runs")
        .expect("set_capacity succeeds once Redis runs");
    assert!(fleet.grant() <= 4, "{:?}", fleet.stats());
    fleet.leave().await;
}
