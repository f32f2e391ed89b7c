//! Restart intensity, as OTP supervisors keep it: a shard whose worker
//! needed more than `max_restarts` restarts within `restart_window` stays
//! down for the pool's life. A worker's death counts as a restart, and so
//! does each factory call that fails while rebuilding it.
//!
//! Rebuilds back off: the first factory call comes at once after a death
//! (before the caller whose handler panicked hears of it), the next after
//! 1 ms, then 2, 4, 8 ... ms, doubling up to 100 ms between tries. With the defaults (10 restarts in 10 s), a factory that keeps
//! failing puts its shard down for good about a third of a second after the
//! death; the shard admits nothing from the death on.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The default of [`WorkerPoolBuilder::max_restarts`](crate::WorkerPoolBuilder::max_restarts), as OTP's.
///
/// # Examples
///
/// ```
/// assert_eq!(sidejob::DEFAULT_MAX_RESTARTS, 10);
/// ```
pub const DEFAULT_MAX_RESTARTS: u32 = 10;

/// The default of [`WorkerPoolBuilder::restart_window`](crate::WorkerPoolBuilder::restart_window), as OTP's.
///
/// # Examples
///
/// ```
/// assert_eq!(sidejob::DEFAULT_RESTART_WINDOW, std::time::Duration::from_secs(10));
/// ```
pub const DEFAULT_RESTART_WINDOW: Duration = Duration::from_secs(10);

/// The pause before the second factory call of a rebuild; it doubles after
/// each failure.
const FIRST_PAUSE: Duration = Duration::from_millis(1);

/// The longest pause between two factory calls of a rebuild.
const LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// One shard's recent restarts.
#[derive(Debug)]
pub(super) struct RestartIntensity {
    max_restarts: u32,
    window: Duration,
    /// When each restart within the window happened, oldest first.
    recent: VecDeque<Instant>,
}

impl RestartIntensity {
    pub(super) fn new(max_restarts: u32, window: Duration) -> Self {
        RestartIntensity {
            max_restarts,
            window,
            recent: VecDeque::new(),
        }
    }

    /// Counts a restart now; `false` once more than `max_restarts` fell
    /// within the window: the shard must stay down.
    pub(super) fn allow_another(&mut self) -> bool {
        let now = Instant::now();
        while let Some(&oldest) = self.recent.front() {
            if now.duration_since(oldest) < self.window {
                break;
            }
            self.recent.pop_front();
        }
        self.recent.push_back(now);
        self.recent.len() <= self.max_restarts as usize
    }
}

/// The pauses between the factory calls of one rebuild.
#[derive(Debug)]
pub(super) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(super) fn new() -> Self {
        Backoff { next: FIRST_PAUSE }
    }

    /// Sleeps the next pause and doubles it, up to the longest.
    pub(super) fn pause(&mut self) {
        std::thread::sleep(self.next);
        self.next = (self.next * 2).min(LONGEST_PAUSE);
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    #[test]
    fn more_than_max_restarts_within_the_window_gives_up() {
        let mut intensity = RestartIntensity::new(2, Duration::from_secs(60));
        assert!(intensity.allow_another());
        assert!(intensity.allow_another());
        assert!(!intensity.allow_another());
        let mut never = RestartIntensity::new(0, Duration::from_secs(60));
        assert!(!never.allow_another(), "max_restarts(0): never restart");
    }

    #[test]
    fn restarts_older_than_the_window_are_forgotten() {
        let mut intensity = RestartIntensity::new(1, Duration::from_millis(20));
        assert!(intensity.allow_another());
        std::thread::sleep(Duration::from_millis(60));
        assert!(intensity.allow_another());
    }
}
