//! A pool of real OS processes (#16, item 9): runs `examples/process_pool`,
//! which pools copies of itself as line-protocol workers, kills one from
//! outside with `kill -9`, has `check_on_take` replace it, reloads with
//! `retire_all`, and checks that every process it started was killed once
//! and reaped (no `/proc/<pid>` left, no zombie).
//!
//! The test has cargo build the example (`cargo test` builds examples only
//! as test harnesses), then runs it; it never skips.

use std::path::PathBuf;
use std::process::Command;

/// Builds the example and returns its binary. `cargo test` builds examples
/// only as test harnesses, not their `main`, so this asks cargo for the
/// real one (a link at most after `cargo test --all-targets`), which cargo
/// places beside this test's directory: `target/<profile>/examples`.
fn example() -> PathBuf {
    let built = Command::new(env!("CARGO"))
        .args(["build", "--example", "process_pool"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(built.success(), "cargo build --example process_pool failed");
    let test = std::env::current_exe().expect("the test's own path");
    test.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>")
        .join("examples")
        .join("process_pool")
}

#[test]
fn a_pool_of_real_processes_replaces_a_killed_one_and_reaps_them_all() {
    let output = Command::new(example())
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
