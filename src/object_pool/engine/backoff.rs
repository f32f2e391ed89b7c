//! How long the maintenance waits after a failed refill: [`RefillBackoff`].
//!
//! A refill (topping up to `min_idle`) or a replenishment that fails (the
//! backend is down, a connection is refused) is retried no sooner than a
//! delay that starts at [`FIRST_DELAY`] and doubles, with jitter, after each
//! failure, up to the larger of the maintenance interval and
//! [`LONGEST_DELAY`]; the first success resets it. While it runs, nudges
//! (a freed slot, a take that left the pool short) do not bring the retry
//! forward: they are exactly what a failed creation causes, and honouring
//! them is what made a pool retry millions of times a second. Reaping keeps
//! its own rhythm meanwhile, one round per maintenance interval.
//!
//! Takes are not held back: a take that needs an object still calls
//! `create` itself and reports its error.

use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

/// The delay after a first failure.
pub(in crate::object_pool) const FIRST_DELAY: Duration = Duration::from_millis(10);

/// The delay stops doubling here, or at the maintenance interval if that is
/// longer: a pool with a short interval (a short `idle_timeout`) still
/// retries a backend that is down at most about once a second.
pub(in crate::object_pool) const LONGEST_DELAY: Duration = Duration::from_secs(1);

/// The maintenance's refill schedule: when the next refill may run.
#[derive(Debug)]
pub(in crate::object_pool) struct RefillBackoff {
    /// The delay the next failure waits (before jitter); `FIRST_DELAY`
    /// after a success.
    next: Duration,
    /// No refill before this instant; `None` when the last refill did not
    /// fail.
    retry_at: Option<Instant>,
    /// A refill failed and none has made an object since: refills are
    /// failing (an outage), whatever rounds had nothing to make meanwhile.
    failing: bool,
    /// Mixed into the jitter so that pools, and successive failures, differ.
    failures: u64,
    hasher: RandomState,
}

impl Default for RefillBackoff {
    fn default() -> Self {
        RefillBackoff {
            next: FIRST_DELAY,
            retry_at: None,
            failing: false,
            failures: 0,
            hasher: RandomState::new(),
        }
    }
}

/// What the maintenance does next, once a round is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::object_pool) enum Pause {
    /// Sleep until nudged or `interval` passes (no refill is held back).
    UntilNudged(Duration),
    /// Sleep this long whatever nudges come (a refill is held back): until
    /// the retry, or the next reaping round if that comes first.
    Fixed(Duration),
}

/// What the async task asks of a pause (the blocking thread matches on it).
#[cfg(feature = "tokio")]
impl Pause {
    /// The longest the maintenance sleeps.
    pub(in crate::object_pool) fn length(self) -> Duration {
        match self {
            Pause::UntilNudged(length) | Pause::Fixed(length) => length,
        }
    }

    /// Whether a nudge ends the sleep.
    pub(in crate::object_pool) fn ends_when_nudged(self) -> bool {
        matches!(self, Pause::UntilNudged(_))
    }
}

impl RefillBackoff {
    /// Whether a refill may run now.
    pub(in crate::object_pool) fn due(&self, now: Instant) -> bool {
        self.retry_at.is_none_or(|retry_at| now >= retry_at)
    }

    /// A refill failed at `now`: the next one waits the current delay, plus
    /// up to half of it at random (capped), and the delay doubles.
    pub(in crate::object_pool) fn failed(&mut self, now: Instant, interval: Duration) {
        let longest = interval.max(LONGEST_DELAY);
        let base = self.next.min(longest);
        self.failures = self.failures.wrapping_add(1);
        let half = u64::try_from(base.as_nanos() / 2)
            .unwrap_or(u64::MAX)
            .max(1);
        let jitter = Duration::from_nanos(self.hasher.hash_one(self.failures) % half);
        let delay = (base + jitter).min(longest);
        self.retry_at = Some(now + delay);
        self.next = base.saturating_mul(2).min(longest);
        self.failing = true;
    }

    /// Whether refills are failing: one failed and none has made an
    /// object since.
    pub(in crate::object_pool) fn is_failing(&self) -> bool {
        self.failing
    }

    /// A refill made an object: the outage, if any, is over, and the next
    /// failure starts from the first delay again.
    pub(in crate::object_pool) fn succeeded(&mut self) {
        self.next = FIRST_DELAY;
        self.retry_at = None;
        self.failing = false;
    }

    /// A refill had nothing to make (the pool was full enough): nothing is
    /// held back now, but an outage is not over and its delay stays, so a
    /// backend that is down is not retried sooner because takes and
    /// returns come and go between its failures.
    pub(in crate::object_pool) fn idle(&mut self) {
        self.retry_at = None;
    }

    /// How the maintenance sleeps after a round at `now`, with reaping every
    /// `interval`.
    pub(in crate::object_pool) fn pause(&self, now: Instant, interval: Duration) -> Pause {
        match self.retry_at {
            None => Pause::UntilNudged(interval),
            Some(retry_at) => {
                let until_retry = retry_at.saturating_duration_since(now);
                if until_retry.is_zero() {
                    // Due now: the next round retries at once.
                    Pause::Fixed(Duration::ZERO)
                } else {
                    Pause::Fixed(until_retry.min(interval))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_with_nothing_to_make_ends_neither_the_outage_nor_its_delay() {
        let mut backoff = RefillBackoff::default();
        let start = Instant::now();
        let interval = Duration::from_secs(1);
        backoff.failed(start, interval);
        backoff.failed(start, interval);
        let next = backoff.next;
        backoff.idle();
        assert!(backoff.is_failing(), "still an outage");
        assert!(backoff.due(start), "nothing held back");
        assert_eq!(backoff.next, next, "the delay stays");
        backoff.failed(start, interval);
        assert_eq!(backoff.next, (next * 2).min(LONGEST_DELAY));
        backoff.succeeded();
        assert!(!backoff.is_failing());
        assert_eq!(backoff.next, FIRST_DELAY);
    }

    #[test]
    fn the_delay_starts_small_doubles_with_jitter_and_stops_at_the_longest() {
        let mut backoff = RefillBackoff::default();
        let start = Instant::now();
        let interval = Duration::from_secs(1);
        let mut expected = FIRST_DELAY;
        for _ in 0..12 {
            backoff.failed(start, interval);
            let waited = backoff.retry_at.unwrap() - start;
            assert!(
                waited >= expected.min(LONGEST_DELAY),
                "{waited:?} < {expected:?}"
            );
            assert!(waited <= (expected + expected / 2).min(LONGEST_DELAY));
            assert!(!backoff.due(start));
            assert!(backoff.due(start + waited));
            expected = (expected * 2).min(LONGEST_DELAY);
        }
        backoff.succeeded();
        assert!(backoff.due(start));
        backoff.failed(start, interval);
        assert!(backoff.retry_at.unwrap() - start < FIRST_DELAY * 2);
    }

    #[test]
    fn a_held_back_refill_ignores_nudges_but_not_the_reaping_interval() {
        let mut backoff = RefillBackoff::default();
        let now = Instant::now();
        let interval = Duration::from_millis(5);
        assert_eq!(backoff.pause(now, interval), Pause::UntilNudged(interval));
        for _ in 0..10 {
            backoff.failed(now, interval);
        }
        // Past the interval: reaping rounds every 5 ms, no refill until due.
        assert_eq!(backoff.pause(now, interval), Pause::Fixed(interval));
        assert!(!backoff.due(now + interval));
        // A short interval does not shorten the longest delay.
        assert!(backoff.retry_at.unwrap() - now >= LONGEST_DELAY / 2);
    }
}
