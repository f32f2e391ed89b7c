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
