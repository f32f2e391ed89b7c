//! A pool of real OS processes (#16, item 9): runs `examples/process_pool`,
//! which pools copies of itself as line-protocol workers, kills one from
//! outside with `kill -9`, has `check_on_take` replace it, reloads with
//! `retire_all`, and checks that every process it started was killed once
//! and reaped (no `/proc/<pid>` left, no zombie).
//!
//! The test has cargo build the example (`cargo test` builds examples only
//! as test harnesses), then runs it; it never skips.

use crate::support;

use support::examples::run_example;

#[test]
fn a_pool_of_real_processes_replaces_a_killed_one_and_reaps_them_all() {
    run_example(
        "process_pool",
        &["--clients", "4", "--max-size", "3", "--docs", "50"],
        &[
            "check_on_take found the dead one and destroyed it",
            "no zombie",
            "each was killed exactly once",
            "all checks passed",
        ],
    );
}
