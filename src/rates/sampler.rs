//! The process's one sampler thread: once a second, it reads the counts of
//! every live face that keeps rates and ticks its meter. Started by the
//! first face made; a face leaves it when its meter is dropped (with the
//! face's last handle), so the sampler never keeps a dropped face's memory.
//! Under loom no thread starts: models do not read rates.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::{Rates, Sample};

/// How often the sampler ticks.
pub(super) const TICK: Duration = Duration::from_secs(1);

/// One face the sampler feeds: reads its counts and ticks its meter while
/// both live; `false` once either is gone.
type Feed = Box<dyn Fn() -> bool + Send>;

/// The faces to sample.
#[derive(Default)]
struct Feeds {
    next_id: u64,
    /// Each face's feed, by the id its meter keeps.
    list: Vec<(u64, Feed)>,
    /// Faces that left while the sampler had the list out, to drop when
    /// it puts the list back.
    left: Vec<u64>,
}

/// The faces; the thread runs once this exists.
static FEEDS: OnceLock<Mutex<Feeds>> = OnceLock::new();

fn lock(feeds: &Mutex<Feeds>) -> MutexGuard<'_, Feeds> {
    feeds.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Adds a face to the sampler, starting the thread on first use; returns
/// the id [`unregister`] takes (`None` under loom, where nothing samples).
pub(super) fn register<S>(
    source: Weak<S>,
    sample: fn(&S) -> Sample,
    rates: Weak<Rates>,
) -> Option<u64>
where
    S: Send + Sync + 'static,
{
    if cfg!(sidejob_loom) {
        return None;
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
        Mutex::new(Feeds::default())
    });
    let mut feeds = lock(feeds);
    let id = feeds.next_id;
    feeds.next_id += 1;
    feeds.list.push((id, feed));
    Some(id)
}

/// Takes a face out of the sampler: its feed, and with it the weak
/// references that kept the face's memory, is dropped now (or, if the
/// sampler has the list out, as soon as it puts it back).
pub(super) fn unregister(id: u64) {
    let Some(feeds) = FEEDS.get() else {
        return;
    };
    let removed = {
        let mut feeds = lock(feeds);
        match feeds.list.iter().position(|(each, _)| *each == id) {
            Some(index) => Some(feeds.list.swap_remove(index)),
            None => {
                feeds.left.push(id);
                None
            }
        }
    };
    // Dropped outside the lock.
    drop(removed);
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
        // Sampled without the list's lock, so that a face made or dropped
        // meanwhile (perhaps under a lock a sample takes, or by the sample
        // itself dropping a face's last handle) never waits for a sample.
        let mut taken = std::mem::take(&mut lock(feeds).list);
        taken.retain(|(_, feed)| feed());
        let gone = {
            let mut feeds = lock(feeds);
            let left = std::mem::take(&mut feeds.left);
            let (gone, mut kept): (Vec<_>, Vec<_>) =
                taken.into_iter().partition(|(id, _)| left.contains(id));
            kept.append(&mut feeds.list);
            feeds.list = kept;
            gone
        };
        drop(gone);
    }
}
