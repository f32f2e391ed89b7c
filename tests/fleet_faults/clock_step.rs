//! A step of Redis's wall clock (#37, defect 4): the script reads `TIME`,
//! wall time, so a step ahead would make live leases look expired and a
//! step back would make dead ones outlive their lease. redis-server runs
//! with a preloaded clock shim (`tests/support/clock_shim.c`, built here
//! with `cc`) whose offset the test sets; the ledger sees the jump and
//! learns, and the nodes never hold more than the budget.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::redis_server::{free_port, Options, RedisServer, LEASE, REFRESH};
use crate::{hold_the_budget, learning, Busy};

/// The shim built into `dir`, and the file holding its offset (ms).
fn build_shim(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let source = dir.join("clock_shim.c");
    std::fs::write(&source, include_str!("../support/clock_shim.c")).unwrap();
    let library = dir.join("clock_shim.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&library)
        .arg(&source)
        .arg("-ldl")
        .status()
        .expect("cc runs (the clock shim is C)");
    assert!(built.success(), "the clock shim did not build");
    let offset = dir.join("offset");
    std::fs::write(&offset, 0i64.to_le_bytes()).unwrap();
    (library, offset)
}

/// Steps the shimmed clock to `offset_ms` ahead of the real one.
fn step(offset: &Path, offset_ms: i64) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(offset)
        .unwrap();
    // In place, never truncated: the server maps the file.
    file.write_all_at(&offset_ms.to_le_bytes(), 0).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_of_the_servers_clock_starts_a_learning_lease_and_frees_no_live_lease() {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("sidejob-clock-{}-{port}", std::process::id()));
    let (library, offset) = build_shim(&dir);
    let options = Options {
        env: vec![
            ("LD_PRELOAD".into(), library.display().to_string()),
            ("SIDEJOB_CLOCK_OFFSET".into(), offset.display().to_string()),
        ],
        ..Options::default()
    };
    let server = RedisServer::start_with(port, options);
    let mut busy = Busy::new();
    busy.join(&server, "clock", 10, "a", 12).await;
    busy.join(&server, "clock", 10, "b", 12).await;
    hold_the_budget(&server, &busy, "clock", 10, REFRESH * 4).await;
    assert!(!learning(&server, "clock"));

    // Two seconds ahead: more than the lease's margin, less than the keys'
    // time to live, so the ledger must tell the jump itself.
    step(&offset, 2000);
    let mut learnt = false;
    for _ in 0..(LEASE * 2).as_millis() / 20 {
        hold_the_budget(&server, &busy, "clock", 10, Duration::from_millis(20)).await;
        learnt |= learning(&server, "clock");
    }
    assert!(learnt, "a step ahead went unseen");

    // And back again.
    step(&offset, 0);
    let mut learnt = false;
    for _ in 0..(LEASE * 2).as_millis() / 20 {
        hold_the_budget(&server, &busy, "clock", 10, Duration::from_millis(20)).await;
        learnt |= learning(&server, "clock");
    }
    assert!(learnt, "a step back went unseen");
    let grants = busy.grants();
    assert!(grants.iter().all(|&grant| grant > 0), "{grants:?}");
    busy.stop();
    let _ = std::fs::remove_dir_all(dir);
}
