//! A step of Redis's wall clock (#37, defect 4): the script reads `TIME`,
//! wall time, so a step ahead would make live leases look expired and a
//! step back would make dead ones outlive their lease. redis-server runs
//! with a preloaded clock shim (`tests/support/clock_shim.c`, built here
//! with `cc`) whose offset the test sets; the ledger sees the jump and
//! learns, and the nodes never hold more than the budget.

use std::time::Duration;

use super::{hold_the_budget, learning, Busy};
use crate::support::clock_shim::ClockShim;
use crate::support::redis_server::{free_port, Options, RedisServer, LEASE, REFRESH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_of_the_servers_clock_starts_a_learning_lease_and_frees_no_live_lease() {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("sidejob-clock-{}-{port}", std::process::id()));
    let shim = ClockShim::build(&dir);
    let options = Options {
        env: shim.env(),
        ..Options::default()
    };
    let server = RedisServer::start_with(port, options);
    let mut busy = Busy::new();
    busy.join(&server, "clock", 10, "a", 12).await;
    busy.join(&server, "clock", 10, "b", 12).await;
    hold_the_budget(&server, &busy, "clock", 10, REFRESH * 4).await;
    assert!(!learning(&server, "clock"));

    // Two seconds ahead: more than the lease's margin, less than the keys'
    // time to live, so the ledger must tell the jump itself.
    shim.step(2000);
    let mut learnt = false;
    for _ in 0..(LEASE * 2).as_millis() / 20 {
        hold_the_budget(&server, &busy, "clock", 10, Duration::from_millis(20)).await;
        learnt |= learning(&server, "clock");
    }
    assert!(learnt, "a step ahead went unseen");

    // And back again.
    shim.step(0);
    let mut learnt = false;
    for _ in 0..(LEASE * 2).as_millis() / 20 {
        hold_the_budget(&server, &busy, "clock", 10, Duration::from_millis(20)).await;
        learnt |= learning(&server, "clock");
    }
    assert!(learnt, "a step back went unseen");
    let grants = busy.grants();
    assert!(grants.iter().all(|&grant| grant > 0), "{grants:?}");
    busy.stop();
    let _ = std::fs::remove_dir_all(dir);
}
