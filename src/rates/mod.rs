//! Rates and windows, as Erlang sidejob reports them: per face, the in, out
//! and rejected rates of the last whole second, and for the last 60 seconds
//! and since the face was made, the counts with their average and maximum
//! rates and the peak usage.
//!
//! Nothing here touches a fast path. Every face already counts its
//! admissions, refusals and completions exactly (or can derive them: a
//! resource's completions are its grants minus its usage); one sampler
//! thread for the whole process (`sampler.rs`) reads those counts once a
//! second and feeds each face's [`RateMeter`](meter::RateMeter), a ring of
//! the last 60 seconds (`meter.rs`). A face's `rates()` reads its meter and
//! its exact counts at the call.
//!
//! # The window
//!
//! `last_60s` slides: at every tick the oldest second leaves it and the
//! newest enters, so it always covers the 60 whole seconds before the last
//! tick (fewer while the face is younger). Erlang sidejob's window tumbles
//! instead: its counts reset every 60 s, so just after a reset it covers
//! almost nothing. A sliding window never drops a burst at a boundary.

mod meter;
mod sampler;
mod stats;

use std::sync::{Arc, Mutex};

pub use stats::{RateStats, WindowStats};

use meter::RateMeter;
use sampler::Registration;

/// What a face has counted, exactly, at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sample {
    /// Admissions: permits granted, messages accepted, children spawned,
    /// objects taken.
    pub(crate) accepted: u64,
    /// Refusals.
    pub(crate) rejected: u64,
    /// Completions: permits released, messages handled, children ended,
    /// objects returned.
    pub(crate) completed: u64,
    /// Admitted and not yet completed, now.
    pub(crate) usage: usize,
}

/// A face's rate meter, fed once a second by the process's sampler while
/// the face lives. Its lock is taken once a second by the sampler and by
/// `rates()` calls, never by an admission.
///
/// A face keeps this in a field declared before its core's, so that it
/// leaves the sampler before it lets go of the core (see the sampler's
/// `# Leaving`).
#[derive(Debug)]
pub(crate) struct Rates {
    meter: Arc<Mutex<RateMeter>>,
    /// The face's place in the sampler, left when this is dropped.
    _registration: Option<Registration>,
}

impl Rates {
    /// A meter for the face whose counts `sample` reads from `source`, fed
    /// by the process's sampler for as long as this lives (the sampler
    /// holds `source` weakly).
    pub(crate) fn start<S>(source: &Arc<S>, sample: fn(&S) -> Sample) -> Arc<Rates>
    where
        S: Send + Sync + 'static,
    {
        let meter = Arc::new(Mutex::new(RateMeter::new()));
        let registration = sampler::register(Arc::downgrade(source), sample, Arc::clone(&meter));
        Arc::new(Rates {
            meter,
            _registration: registration,
        })
    }

    /// The rates, with the totals exact as of `now`.
    pub(crate) fn stats(&self, now: Sample) -> RateStats {
        self.meter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .stats(now)
    }
}
