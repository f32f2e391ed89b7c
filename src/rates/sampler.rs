//! The process's one sampler thread: once a second, it reads the counts of
//! every live face that keeps rates and ticks its meter. Started by the
//! first face made; a face is dropped from it once gone (it is held
//! weakly). Under loom no thread starts: models do not read rates.

use std::sync::{Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::{Rates, Sample};

/// How often the sampler ticks.
pub(super) const TICK: Duration = Duration::from_secs(1);

/// One face the sampler feeds: reads its counts and ticks its meter while
/// both live; `false` once either is gone.
type Feed = Box<dyn Fn() -> bool + Send>;

/// The faces to sample; the thread runs once this exists.
static FEEDS: OnceLock<Mutex<Vec<Feed>>> = OnceLock::new();

/// Adds a face to the sampler, starting the thread on first use.
pub(super) fn register<S>(source: Weak<S>, sample: fn(&S) -> Sample, rates: Weak<Rates>)
where
    S: Send + Sync + 'static,
{
    if cfg!(sidejob_loom) {
        return;
    }
    let feed: Feed = Box::new(move || match (source.upgrade(), rates.upgrade()) {
        (Some(source), Some(rates)) => {
            rates.tick(sample(&source));
            true
        }
        _ => false,
    });
    let feeds = FEEDS.get_or_init(|| {
        // If the thread cannot start, rates stay at zero (the totals are
        // still exact, read at the call).
        let _ = std::thread::Builder::new()
            .name("sidejob-rates".to_owned())
            .spawn(run);
        Mutex::new(Vec::new())
    });
    feeds
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(feed);
}

/// The thread: ticks on a fixed schedule (a late tick does not shift the
/// next ones).
fn run() {
    let mut next = Instant::now() + TICK;
    loop {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += TICK;
        let Some(feeds) = FEEDS.get() else {
            continue;
        };
        // Sampled without the list's lock, so that a face made meanwhile
        // (perhaps under a lock a sample takes) never waits for a sample.
        let lock = || {
            feeds
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let mut taken = std::mem::take(&mut *lock());
        taken.retain(|feed| feed());
        let mut feeds = lock();
        taken.append(&mut feeds);
        *feeds = taken;
    }
}
