//! Loom models; see loom-tests/run.sh.
#![cfg(sidejob_loom)]
