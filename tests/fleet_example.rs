//! The fleet budget with real parts (#30): runs `examples/fleet --quick`,
//! which starts `redis-server`, a downstream process that counts the
//! requests it serves at once, and node processes joined to one budget;
//! shifts their demand, `kill -9`s one, stops Redis past a lease, restarts
//! it empty and adds a node. The example checks that the downstream never
//! served more than the capacity, that the ledger never granted more, that
//! shares converged and a dead node's share came back in time, and Redis's
//! script rate; it exits non-zero if one fails.
//!
//! The test has cargo build the example, then runs it; it never skips
//! (`redis-server` missing is a failure).
#![cfg(feature = "redis")]

mod support;

use support::examples::run_example;

#[test]
fn node_processes_keep_one_budget_through_shifts_kills_pauses_and_restarts() {
    run_example(
        "fleet",
        &["--quick"],
        &[
            "n2 killed (kill -9)",
            "redis-server stopped (SIGSTOP)",
            "redis-server restarted empty",
            "n3 joins",
            "every check passed",
        ],
    );
}
