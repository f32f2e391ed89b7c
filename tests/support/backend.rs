//! A backend that is down until told otherwise: managers for both pool
//! faces whose `create` fails (at once, or after a delay) while the backend
//! is down and counts every attempt; and the process's CPU time, to show
//! that a pool retrying a backend that is down never spins.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The backend's state, shared by the test and its manager.
#[derive(Debug, Default)]
pub struct Backend {
    /// Whether `create` succeeds.
    pub up: AtomicBool,
    /// Calls to `create`, whatever they came to.
    pub attempts: AtomicU64,
    /// Whether `create` panics (deliberately) while the backend is down,
    /// rather than returning an error.
    pub panics: AtomicBool,
}

impl Backend {
    /// A backend that is down.
    pub fn down() -> Arc<Backend> {
        Arc::new(Backend::default())
    }

    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::SeqCst)
    }

    /// A backend whose `create` panics while it is down.
    pub fn exploding() -> Arc<Backend> {
        let backend = Backend::default();
        backend.panics.store(true, Ordering::SeqCst);
        Arc::new(backend)
    }

    /// What `create` does while the backend is down, after its delay.
    fn refuse(&self) -> Refused {
        if self.panics.load(Ordering::SeqCst) {
            panic!("deliberate: the backend's driver panics");
        }
        Refused
    }

    pub fn recover(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

/// What `create` returns while the backend is down.
#[derive(Debug)]
pub struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection refused")
    }
}

impl std::error::Error for Refused {}

/// A blocking manager over a [`Backend`]; `create` fails after `delay`
/// (a thread sleep) while it is down.
#[derive(Debug)]
pub struct Connect {
    pub backend: Arc<Backend>,
    pub delay: Duration,
}

impl sidejob::Manager for Connect {
    type Object = ();
    type Error = Refused;

    fn create(&self) -> Result<(), Refused> {
        self.backend.attempts.fetch_add(1, Ordering::SeqCst);
        if self.backend.up.load(Ordering::SeqCst) {
            return Ok(());
        }
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        Err(self.backend.refuse())
    }
}

/// An async manager over a [`Backend`]; `create` fails after `delay` (a
/// tokio sleep) while it is down.
#[cfg(feature = "tokio")]
#[derive(Debug)]
pub struct AsyncConnect {
    pub backend: Arc<Backend>,
    pub delay: Duration,
}

#[cfg(feature = "tokio")]
impl sidejob::AsyncManager for AsyncConnect {
    type Object = ();
    type Error = Refused;

    async fn create(&self) -> Result<(), Refused> {
        self.backend.attempts.fetch_add(1, Ordering::SeqCst);
        if self.backend.up.load(Ordering::SeqCst) {
            return Ok(());
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        Err(self.backend.refuse())
    }
}

/// The CPU time this process has used, user and system, in seconds (from
/// `/proc/self/stat`, in clock ticks of 1/100 s).
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which is in parentheses.
    let after_name = &stat[stat.rfind(')').expect("a command name") + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// The most `create` attempts a pool with a backoff makes in 2 s against a
/// backend that is down: the initial creations, then retries after
/// 10 ms, 20 ms, 40 ms... up to 1 s (about nine), with room to spare.
pub const MOST_ATTEMPTS_IN_2S: u64 = 40;

/// The most CPU time the process may use over those 2 s.
pub const MOST_CPU_IN_2S: f64 = 0.2;

/// Checks what a pool over `backend`, down for the 2 s since the process
/// had used `cpu_before` seconds of CPU, did: it retried, a few dozen times
/// at most, at little CPU, counting each failed refill, and holds nothing.
pub fn assert_backed_off(
    backend: &Backend,
    cpu_before: f64,
    stats: &sidejob::ObjectPoolStats,
    size: usize,
) {
    let attempts = backend.attempts();
    let cpu = cpu_seconds() - cpu_before;
    assert!(
        attempts >= 3,
        "the maintenance retried: {attempts} attempts"
    );
    assert!(
        attempts <= MOST_ATTEMPTS_IN_2S,
        "{attempts} create attempts in 2 s"
    );
    assert!(cpu < MOST_CPU_IN_2S, "{cpu} s of CPU in 2 s");
    assert!(stats.failed_refills >= 2, "{stats:?}");
    assert!(stats.failed_refills <= attempts, "{stats:?}");
    assert_eq!(size, 0);
}
