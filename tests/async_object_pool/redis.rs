//! AsyncObjectPool on a real Redis (#19): runs `examples/redis_pool`,
//! which starts `redis-server` on a free port of 127.0.0.1, runs SET/GET
//! round trips from more tasks than connections, kills and restarts the
//! server, and has `check_on_take` replace the broken connections.
//!
//! It needs `redis-server` on the `PATH` (`.ci/run` installs Debian's
//! package); without it the test fails, it never skips. The test has cargo
//! build the example (`cargo test` builds examples only as test harnesses).
#![cfg(feature = "tokio")]

use crate::support;

use std::process::Command;

use support::examples::run_example;

#[test]
fn a_pool_of_real_redis_connections_survives_a_server_restart() {
    let found = Command::new("redis-server").arg("--version").output();
    assert!(
        found.is_ok_and(|output| output.status.success()),
        "redis-server is not installed: this test needs it (Debian: apt-get install redis-server)"
    );
    run_example(
        "redis_pool",
        &["--tasks", "16", "--max-size", "3", "--rounds", "20"],
        &[
            "every round trip of the first wave succeeded",
            "tasks beyond max_size waited their turn",
            "check_on_take found the broken connections and destroyed them",
            "no caller was handed a broken connection",
            "all checks passed",
        ],
    );
}
