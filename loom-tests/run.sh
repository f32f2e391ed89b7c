#!/usr/bin/env bash
# Model-checks sidejob's concurrent protocols with loom.
#
#   bash loom-tests/run.sh            # every model
#   bash loom-tests/run.sh probe      # models whose name contains "probe"
#
# Release mode with debug assertions, so the crate's internal asserts run at
# speed. LOOM_MAX_PREEMPTIONS bounds the search (default 2, as CI runs it);
# raise it for a deeper, slower search. The build goes to its own target
# directory, so it never invalidates the ordinary one.
set -euo pipefail
cd "$(dirname "$0")/.."

export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export RUSTFLAGS="${RUSTFLAGS:-} --cfg sidejob_loom -C debug-assertions"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}"

cargo test --release --features tokio --test loom -- --test-threads="$(nproc)" "$@"
