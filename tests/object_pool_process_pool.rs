//! A pool of real OS processes (#16, item 9): runs `examples/process_pool`,
//! which pools copies of itself as line-protocol workers, kills one from
//! outside with `kill -9`, has `check_on_take` replace it, reloads with
//! `retire_all`, and checks that every process it started was killed once
//! and reaped (no `/proc/<pid>` left, no zombie).
//!
//! The test has cargo build the example (`cargo test` builds examples only
//! as test harnesses), then runs it; it never skips.

mod support;

use std::process::Command;

use support::examples::example;

#[test]
fn a_pool_of_real_processes_replaces_a_killed_one_and_reaps_them_all() {
    let output = Command::new(example("process_pool"))
        .args(["--clients", "4", "--max-size", "3", "--docs", "50"])
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the example failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "check_on_take found the dead one and destroyed it",
        "no zombie",
        "each was killed exactly once",
        "all checks passed",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    assert!(!stdout.contains("FAILED"), "{stdout}");
}
