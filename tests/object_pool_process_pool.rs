//! A pool of real OS processes (#16, item 9): runs `examples/process_pool`,
//! which pools copies of itself as line-protocol workers, kills one from
//! outside with `kill -9`, has `check_on_take` replace it, reloads with
//! `retire_all`, and checks that every process it started was killed once
//! and reaped (no `/proc/<pid>` left, no zombie).
//!
//! `cargo test --all-targets` builds the example before this test runs; run
//! alone, the test says how to build it (it never skips).

use std::path::PathBuf;
use std::process::Command;

/// The example's binary, beside this test's: `target/<profile>/examples`.
fn example() -> PathBuf {
    let test = std::env::current_exe().expect("the test's own path");
    let profile_dir = test
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let binary = profile_dir.join("examples").join("process_pool");
    assert!(
        binary.exists(),
        "{} is not built: run `cargo test --all-targets` (or `cargo build --examples`)",
        binary.display()
    );
    binary
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
