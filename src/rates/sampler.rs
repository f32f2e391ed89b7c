//! The process's one sampler thread: once a second, it reads the counts of
//! every live face that keeps rates and ticks its meter. Started by the
//! first face made; a face leaves it when its [`Registration`] is dropped
//! (with the face's last handle), so the sampler never keeps a dropped
//! face's memory. Under loom no thread starts: models do not read rates.
//!
//! # Leaving
//!
//! A sample holds the face's core (its `source`) for a moment. Were a
//! face's last handle dropped then, the core, with whatever the user gave
//! it (an object pool's manager, a worker pool's handlers), would be
//! dropped a moment later on this thread rather than by the user's drop. So
//! each face's feed sits in a slot of its own, locked while it is sampled,
//! and a [`Registration`] empties its slot under that lock: the drop waits
//! out a sample in progress, and no sample starts after it. A face drops
//! its registration before its core (see the faces' field order), so the
//! sampler never holds the last reference to a core.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::meter::RateMeter;
use super::Sample;

/// How often the sampler ticks.
pub(super) const TICK: Duration = Duration::from_secs(1);

/// One face the sampler feeds: reads its counts and ticks its meter. Its
/// core outlives its registration (see `# Leaving`), so the upgrade fails
/// only if a face broke that order; it is then skipped.
type Feed = Box<dyn Fn() + Send>;

/// A face's place in the sampler: its feed until the face leaves.
type Slot = Arc<Mutex<Option<Feed>>>;

/// The faces to sample; the thread runs once this exists. The sampler
/// takes the list out while it samples, so that a face made or dropped
/// meanwhile never waits for the samples of the others.
static SLOTS: OnceLock<Mutex<Vec<Slot>>> = OnceLock::new();

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A face's registration with the sampler: dropping it takes the face out
/// (see `# Leaving`).
pub(super) struct Registration(Slot);

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Registration")
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Waits for a sample of this face in progress; none starts after.
        let feed = lock(&self.0).take();
        drop(feed);
        // Out of the list now, unless the sampler has it out, which drops
        // empty slots when it puts the list back.
        if let Some(slots) = SLOTS.get() {
            lock(slots).retain(|slot| !Arc::ptr_eq(slot, &self.0));
        }
    }
}

/// Adds a face to the sampler, starting the thread on first use: `sample`
/// reads the face's counts from `source` (held weakly) into `meter` (`None`
/// under loom, where nothing samples).
pub(super) fn register<S>(
    source: Weak<S>,
    sample: fn(&S) -> Sample,
    meter: Arc<Mutex<RateMeter>>,
) -> Option<Registration>
where
    S: Send + Sync + 'static,
{
    if cfg!(sidejob_loom) {
        return None;
    }
    let feed: Feed = Box::new(move || {
        if let Some(source) = source.upgrade() {
            let now = sample(&source);
            lock(&meter).tick(now);
        }
    });
    let slots = SLOTS.get_or_init(|| {
        // If the thread cannot start, rates stay at zero (the totals are
        // still exact, read at the call).
        let _ = std::thread::Builder::new()
            .name("sidejob-rates".to_owned())
            .spawn(run);
        Mutex::new(Vec::new())
    });
    let slot: Slot = Arc::new(Mutex::new(Some(feed)));
    lock(slots).push(Arc::clone(&slot));
    Some(Registration(slot))
}

/// Samples one face under its slot's lock; `false` once it has left.
fn feed(slot: &Slot) -> bool {
    match lock(slot).as_ref() {
        Some(sample) => {
            sample();
            true
        }
        None => false,
    }
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
        let Some(slots) = SLOTS.get() else {
            continue;
        };
        let mut taken = std::mem::take(&mut *lock(slots));
        taken.retain(feed);
        let mut slots = lock(slots);
        // Faces made while the list was out were pushed onto the empty one;
        // faces that left meanwhile have empty slots.
        taken.retain(|slot| lock(slot).is_some());
        taken.append(&mut slots);
        *slots = taken;
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crossbeam_channel::{bounded, Receiver, Sender};

    use super::super::meter::RateMeter;
    use super::super::Sample;
    use super::register;

    /// A face's core whose sample stops half way until told to go on.
    struct Stalling {
        sampling: Sender<()>,
        go_on: Receiver<()>,
    }

    fn stalling_sample(core: &Stalling) -> Sample {
        let _ = core.sampling.try_send(());
        let _ = core.go_on.recv();
        Sample::default()
    }

    #[test]
    fn a_registration_dropped_during_a_sample_waits_for_it_and_no_sample_follows() {
        let (sampling, sampled) = bounded(1);
        let (go_on, told) = bounded(16);
        let core = Arc::new(Stalling {
            sampling,
            go_on: told,
        });
        let meter = Arc::new(std::sync::Mutex::new(RateMeter::new()));
        let registration = register(Arc::downgrade(&core), stalling_sample, meter)
            .expect("the sampler runs outside loom");
        // The next tick (within a second) samples the core and stalls.
        sampled
            .recv_timeout(Duration::from_secs(30))
            .expect("the sampler never sampled");
        let (left, leaving) = bounded(1);
        let dropper = {
            let core = Arc::clone(&core);
            std::thread::spawn(move || {
                drop(registration);
                // Nobody but this thread and the test holds the core now.
                let _ = left.send(Arc::strong_count(&core));
            })
        };
        // A drop that did not wait for the sample would be done by now,
        // with the sampler still holding the core; one that waits is let
        // go after this. Either way the core is the test's alone after.
        let early = leaving.recv_timeout(Duration::from_millis(200)).ok();
        go_on.send(()).unwrap();
        let counted = early.unwrap_or_else(|| leaving.recv().unwrap());
        dropper.join().unwrap();
        assert_eq!(
            counted, 2,
            "the sampler still held the core when the drop returned"
        );
        // No sample starts after the drop: two ticks pass without one.
        for _ in 0..4 {
            go_on.send(()).unwrap();
        }
        assert!(sampled.recv_timeout(Duration::from_millis(2500)).is_err());
        assert_eq!(Arc::strong_count(&core), 1);
    }
}
