//! Running the crate's examples from a test: `cargo test` builds examples
//! only as test harnesses, not their `main`, so a test that runs one has
//! cargo build it first.

use std::path::PathBuf;
use std::process::Command;

/// Builds example `name` with every feature (the features of the run that
/// builds the tests, so nothing is rebuilt) and returns its binary, which
/// cargo places beside this test's directory: `target/<profile>/examples`.
pub fn example(name: &str) -> PathBuf {
    let built = Command::new(env!("CARGO"))
        .args(["build", "--example", name, "--all-features"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(built.success(), "cargo build --example {name} failed");
    let test = std::env::current_exe().expect("the test's own path");
    test.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>")
        .join("examples")
        .join(name)
}

/// Runs example `name` with `args` to its end and checks it: it exits
/// with success, prints each of `expected`, and prints no `FAILED`.
/// Returns what it printed.
pub fn run_example(name: &str, args: &[&str], expected: &[&str]) -> String {
    let output = Command::new(example(name))
        .args(args)
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    // The verdict first (its failed checks and the seed that replays a
    // campaign), so a log cut to its head still shows why.
    let verdict: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains("FAILED") || line.starts_with("seed "))
        .collect();
    assert!(
        output.status.success(),
        "the example failed ({}):\n{}\n\nwhat it printed:\n{stdout}\n{}",
        output.status,
        verdict.join("\n"),
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in expected {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    assert!(!stdout.contains("FAILED"), "{stdout}");
    stdout
}
