//! Loom models of sidejob's concurrent protocols.
//!
//! Built only under `--cfg sidejob_loom`, which swaps the crate's atomics,
//! locks and thread-locals for loom's (see `src/sync.rs`). Run them with
//! `bash loom-tests/run.sh`; an ordinary `cargo test` compiles this file to
//! nothing. One file per face; `Holders` is shared.
#![cfg(sidejob_loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
// The resource is shared through std's `Arc`, as users share it; its
// refcount is not part of sidejob's protocol, so loom need not model it.
use std::sync::Arc;

use loom::thread;

use sidejob::Resource;

/// Counts the permits held right now, checked against a bound at every step.
struct Holders {
    now: AtomicUsize,
    bound: usize,
}

impl Holders {
    fn new(bound: usize) -> Self {
        Holders {
            now: AtomicUsize::new(0),
            bound,
        }
    }

    fn enter(&self) {
        let held = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(held <= self.bound, "{held} holders, bound {}", self.bound);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

mod adaptive;
#[cfg(feature = "tokio")]
mod async_object_pool;
mod expiry;
mod object_pool;
mod resource;
mod supervisor;
mod task_supervisor;
mod worker_pool;
