//! Instruments for `tests/stress.rs`: settings from the environment, a small
//! per-thread PRNG, a record of broken invariants that survives the crate's
//! `catch_unwind`s, a concurrent-holder gauge, and a bound that tracks the
//! capacity a resizing thread sets.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long and how hard one face is stressed.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How long the load runs (`SIDEJOB_STRESS_SECS`, default 2 s).
    pub duration: Duration,
    /// Load threads: four per core.
    pub threads: usize,
    /// `std::thread::available_parallelism`.
    pub cores: usize,
    /// The seed every thread's PRNG is derived from (`SIDEJOB_STRESS_SEED`).
    pub seed: u64,
}

/// Reads the settings and prints them (libtest shows them on failure).
pub fn settings(face: &str) -> Settings {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let secs = match std::env::var("SIDEJOB_STRESS_SECS") {
        Ok(value) => value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|secs| secs.is_finite() && *secs > 0.0)
            .unwrap_or_else(|| panic!("SIDEJOB_STRESS_SECS={value:?}: want seconds above 0")),
        Err(_) => 2.0,
    };
    let seed = match std::env::var("SIDEJOB_STRESS_SEED") {
        Ok(value) => value
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("SIDEJOB_STRESS_SEED={value:?}: want a u64")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x5eed, |since| since.as_nanos() as u64),
    };
    let settings = Settings {
        duration: Duration::from_secs_f64(secs),
        threads: 4 * cores,
        cores,
        seed,
    };
    eprintln!(
        "stress {face}: {} threads on {cores} cores for {secs} s; replay with SIDEJOB_STRESS_SEED={seed}",
        settings.threads
    );
    settings
}

/// The prefix of every injected panic's message.
pub const INJECTED: &str = "injected";

/// Silences injected panics (their messages start with [`INJECTED`]) and
/// leaves every other panic, a failed assertion above all, to the default
/// hook, so that it is still printed.
pub fn quiet_injected_panics() {
    super::panics::quiet_panics_where(is_injected);
}

/// Whether a panic payload is one of the injected panics.
pub fn is_injected(payload: &(dyn std::any::Any + Send)) -> bool {
    super::panics::panic_text(payload).is_some_and(|message| message.starts_with(INJECTED))
}

/// Xorshift64*: small, fast, and good enough to pick faults.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of stream `stream` (a thread's index) of `seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let state = splitmix(seed ^ splitmix(stream.wrapping_add(0x51_7cc1_b727_220a)));
        Rng(state | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n` below 2^32).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }

    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

/// A PRNG shared by threads the test does not own (workers, the pool's
/// maintainer): SplitMix64 over an atomic counter.
#[derive(Debug)]
pub struct SharedRng(AtomicU64);

impl SharedRng {
    pub fn new(seed: u64) -> SharedRng {
        SharedRng(AtomicU64::new(seed))
    }

    pub fn below(&self, n: u64) -> u64 {
        let x = splitmix(self.0.fetch_add(0x9e37_79b9_7f4a_7c15, SeqCst));
        ((x >> 32) * n) >> 32
    }

    pub fn one_in(&self, n: u64) -> bool {
        self.below(n) == 0
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Broken invariants. A check can fail on a thread whose panic the crate
/// catches (a handler, a child, `Manager::create`), so each failure is
/// recorded here as well as raised on the spot, and the test asserts at the
/// end that none was recorded.
#[derive(Debug, Default)]
pub struct Checks {
    failures: Mutex<Vec<String>>,
    /// How many failures there were, also past the first few kept.
    count: AtomicUsize,
}

impl Checks {
    pub fn new() -> Checks {
        Checks::default()
    }

    /// Records and raises a failure unless `ok`.
    #[track_caller]
    pub fn check(&self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.fail(what());
        }
    }

    #[track_caller]
    pub fn fail(&self, what: String) -> ! {
        let location = std::panic::Location::caller();
        let message = format!("{what} (at {location})");
        if self.count.fetch_add(1, SeqCst) < 20 {
            self.failures
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(message.clone());
        }
        panic!("invariant broken: {message}");
    }

    /// Asserts that no check failed anywhere.
    pub fn assert_clean(&self) {
        let failures = self
            .failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        assert!(
            failures.is_empty(),
            "{} invariant failures, the first ones:\n{}",
            self.count.load(SeqCst),
            failures.join("\n")
        );
    }
}

/// Counts concurrent holders (incremented on entering the guarded section,
/// decremented on leaving it) and keeps the peak.
#[derive(Debug, Default)]
pub struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Gauge {
    pub fn new() -> Gauge {
        Gauge::default()
    }

    /// One more holder; returns how many there are now.
    pub fn enter(&self) -> usize {
        let now = self.now.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        now
    }

    pub fn leave(&self) {
        let before = self.now.fetch_sub(1, SeqCst);
        assert!(before > 0, "a gauge left more often than entered");
    }

    pub fn now(&self) -> usize {
        self.now.load(SeqCst)
    }

    pub fn peak(&self) -> usize {
        self.peak.load(SeqCst)
    }
}

/// Leaves a [`Gauge`] when dropped, also while unwinding.
#[derive(Debug)]
pub struct Ticket<'a>(&'a Gauge);

impl<'a> Ticket<'a> {
    /// Enters `gauge`; returns the ticket and the number of holders.
    pub fn enter(gauge: &'a Gauge) -> (Ticket<'a>, usize) {
        let now = gauge.enter();
        (Ticket(gauge), now)
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// The capacity in force, as one resizing thread (the only writer) knows it.
///
/// A raise is published before the capacity grows; a shrink is published
/// only once the usage is seen back under the new capacity (held permits are
/// never revoked, and after a shrink nothing is admitted until usage fits).
/// So a count taken while the bound stood still never exceeds it. The bound
/// is a seqlock: odd while it changes.
#[derive(Debug)]
pub struct Bound {
    seq: AtomicU64,
    value: AtomicUsize,
    /// The most it will ever be: every check is held to it, changing or not.
    hard: usize,
    /// Checks made against a bound that stood still.
    tight: AtomicU64,
}

/// What a reader saw of a [`Bound`] before it counted.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    seq: u64,
    value: usize,
}

impl Bound {
    pub fn new(value: usize, hard: usize) -> Bound {
        assert!(value <= hard);
        Bound {
            seq: AtomicU64::new(0),
            value: AtomicUsize::new(value),
            hard,
            tight: AtomicU64::new(0),
        }
    }

    /// Publishes a new bound (one writer only).
    pub fn set(&self, value: usize) {
        assert!(value <= self.hard);
        self.seq.fetch_add(1, SeqCst);
        self.value.store(value, SeqCst);
        self.seq.fetch_add(1, SeqCst);
    }

    /// Read before counting.
    pub fn seen(&self) -> Seen {
        let seq = self.seq.load(SeqCst);
        let value = self.value.load(SeqCst);
        Seen { seq, value }
    }

    /// Checks `count`, taken after `seen`: against the hard bound always,
    /// and against the bound in force if it stood still meanwhile.
    #[track_caller]
    pub fn check(&self, checks: &Checks, seen: Seen, count: usize, what: &str) {
        checks.check(count <= self.hard, || {
            format!("{what}: {count} above the largest capacity {}", self.hard)
        });
        if seen.seq.is_multiple_of(2) && self.seq.load(SeqCst) == seen.seq {
            self.tight.fetch_add(1, SeqCst);
            checks.check(count <= seen.value, || {
                format!("{what}: {count} above the capacity in force {}", seen.value)
            });
        }
    }

    /// How many checks were made against a bound that stood still.
    pub fn tight_checks(&self) -> u64 {
        self.tight.load(SeqCst)
    }
}

/// Raises a flag when dropped, also while unwinding: threads that run until
/// the flag is up then stop when the thread holding this fails, and the
/// test fails instead of hanging.
#[derive(Debug)]
pub struct RaiseOnDrop<'a>(pub &'a AtomicBool);

impl Drop for RaiseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// Live values: each [`Token`] counts one until dropped.
#[derive(Debug, Clone, Default)]
pub struct Tokens(Arc<AtomicIsize>);

impl Tokens {
    pub fn new() -> Tokens {
        Tokens::default()
    }

    pub fn token(&self) -> Token {
        self.0.fetch_add(1, SeqCst);
        Token(Arc::clone(&self.0))
    }

    pub fn live(&self) -> isize {
        self.0.load(SeqCst)
    }
}

/// One live value of a [`Tokens`] count.
#[derive(Debug)]
pub struct Token(Arc<AtomicIsize>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// Spins (yielding, never sleeping) until `done` holds, for at most `limit`;
/// panics with `what` if it never does.
#[track_caller]
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "not reached within {limit:?}: {what}"
        );
        std::thread::yield_now();
    }
}
