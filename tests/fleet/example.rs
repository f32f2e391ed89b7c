//! The fleet budget with real parts (#30): runs `examples/fleet --quick`,
//! which starts `redis-server`, a downstream process that counts the
//! requests it serves at once, and node processes joined to one budget;
//! shifts their demand, `kill -9`s one, stops Redis past a lease, restarts
//! it empty and adds a node. The example checks that the downstream never
//! served more than the capacity, that the ledger never granted more, that
//! shares converged and a dead node's share came back in time, and Redis's
//! script rate; it exits non-zero if one fails.
//!
//! A second test runs a minute of its fault campaign (`--nemesis 60`,
//! #41): random faults (nodes killed and stopped, Redis stopped,
//! restarted empty or from an older snapshot, its clock stepped, the
//! network slowed or cut) against the same checks; on a failure it
//! prints the seed that replays the campaign's choices.
//!
//! The tests have cargo build the example, then run it; they never skip
//! (`redis-server` or `cc` missing is a failure).
#![cfg(feature = "redis")]

use crate::support;

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

#[test]
fn a_minute_of_random_faults_keeps_the_budget_and_every_node_returns() {
    run_example(
        "fleet",
        &["--nemesis", "60"],
        &["the campaign ends", "every check passed"],
    );
}
