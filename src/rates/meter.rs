//! [`RateMeter`]: one face's last 60 seconds and its running maxima, fed
//! one sample per tick.

use std::collections::VecDeque;

use super::stats::{RateStats, WindowStats};
use super::Sample;

/// The seconds the window keeps.
pub(super) const WINDOW_SECONDS: usize = 60;

/// What happened in one whole second.
#[derive(Debug, Clone, Copy, Default)]
struct Second {
    accepted: u64,
    rejected: u64,
    completed: u64,
    /// The usage sampled at its end.
    usage: usize,
}

/// One face's per-second history.
#[derive(Debug)]
pub(super) struct RateMeter {
    /// The counts at the last tick; at first, the counts the face was
    /// built with (all zero), so the first tick's second, which began part
    /// way in at the face's birth, counts everything the face did before
    /// it, like any other second.
    last: Sample,
    /// The last `WINDOW_SECONDS` seconds, oldest first.
    window: VecDeque<Second>,
    /// Since the face's birth: the seconds ticked (the first one partial),
    /// and what they held.
    seconds: u64,
    whole: Second,
    max_in: u64,
    max_out: u64,
    peak_usage: usize,
}

impl RateMeter {
    pub(super) fn new() -> Self {
        RateMeter {
            last: Sample::default(),
            window: VecDeque::new(),
            seconds: 0,
            whole: Second::default(),
            max_in: 0,
            max_out: 0,
            peak_usage: 0,
        }
    }

    /// The sampler's tick, a second after the previous one: the counts
    /// `now`, from which the second's deltas follow.
    pub(super) fn tick(&mut self, now: Sample) {
        self.peak_usage = self.peak_usage.max(now.usage);
        let last = std::mem::replace(&mut self.last, now);
        let second = Second {
            accepted: now.accepted.saturating_sub(last.accepted),
            rejected: now.rejected.saturating_sub(last.rejected),
            completed: now.completed.saturating_sub(last.completed),
            usage: now.usage,
        };
        if self.window.len() == WINDOW_SECONDS {
            self.window.pop_front();
        }
        self.window.push_back(second);
        self.seconds += 1;
        self.whole.accepted += second.accepted;
        self.whole.completed += second.completed;
        self.max_in = self.max_in.max(second.accepted);
        self.max_out = self.max_out.max(second.completed);
    }

    /// The rates, the window as of the last tick, and the totals exact as
    /// of `now`.
    pub(super) fn stats(&self, now: Sample) -> RateStats {
        let latest = self.window.back().copied().unwrap_or_default();
        let mut last_60s = WindowStats::empty();
        for second in &self.window {
            last_60s.accepted += second.accepted;
            last_60s.rejected += second.rejected;
            last_60s.completed += second.completed;
            last_60s.max_in_rate = last_60s.max_in_rate.max(second.accepted as f64);
            last_60s.max_out_rate = last_60s.max_out_rate.max(second.completed as f64);
            last_60s.peak_usage = last_60s.peak_usage.max(second.usage);
        }
        let covered = self.window.len() as f64;
        if covered > 0.0 {
            last_60s.avg_in_rate = last_60s.accepted as f64 / covered;
            last_60s.avg_out_rate = last_60s.completed as f64 / covered;
        }
        let mut total = WindowStats {
            accepted: now.accepted,
            rejected: now.rejected,
            completed: now.completed,
            max_in_rate: self.max_in as f64,
            max_out_rate: self.max_out as f64,
            peak_usage: self.peak_usage.max(now.usage),
            ..WindowStats::empty()
        };
        if self.seconds > 0 {
            total.avg_in_rate = self.whole.accepted as f64 / self.seconds as f64;
            total.avg_out_rate = self.whole.completed as f64 / self.seconds as f64;
        }
        RateStats {
            in_rate: latest.accepted as f64,
            out_rate: latest.completed as f64,
            rejected_rate: latest.rejected as f64,
            last_60s,
            total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(accepted: u64, rejected: u64, completed: u64, usage: usize) -> Sample {
        Sample {
            accepted,
            rejected,
            completed,
            usage,
        }
    }

    #[test]
    fn the_first_tick_counts_the_partial_second_since_birth_and_each_next_one_a_second() {
        let mut meter = RateMeter::new();
        // Before any tick: totals exact, nothing in the window yet.
        let rates = meter.stats(sample(5, 1, 4, 1));
        assert_eq!((rates.in_rate, rates.last_60s.accepted), (0.0, 0));
        assert_eq!((rates.total.accepted, rates.total.avg_in_rate), (5, 0.0));

        meter.tick(sample(5, 1, 4, 1)); // the partial first second, from zero
        let rates = meter.stats(sample(5, 1, 4, 1));
        assert_eq!((rates.in_rate, rates.last_60s.accepted), (5.0, 5));
        assert_eq!((rates.last_60s.rejected, rates.last_60s.completed), (1, 4));
        assert_eq!(rates.total.avg_in_rate, 5.0);

        meter.tick(sample(15, 3, 12, 3)); // second 2: +10 in, +2 rejected, +8 out
        meter.tick(sample(45, 3, 40, 5)); // second 3: +30 in, +0 rejected, +28 out
        let rates = meter.stats(sample(46, 4, 40, 6));
        assert_eq!(
            (rates.in_rate, rates.out_rate, rates.rejected_rate),
            (30.0, 28.0, 0.0)
        );
        let window = &rates.last_60s;
        assert_eq!(
            (window.accepted, window.rejected, window.completed),
            (45, 3, 40)
        );
        assert_eq!((window.avg_in_rate, window.max_in_rate), (15.0, 30.0));
        assert_eq!(
            (window.avg_out_rate, window.max_out_rate),
            (40.0 / 3.0, 28.0)
        );
        assert_eq!(window.peak_usage, 5);
        // Totals: exact at the call; averages over the seconds ticked.
        let total = &rates.total;
        assert_eq!(
            (total.accepted, total.rejected, total.completed),
            (46, 4, 40)
        );
        assert_eq!(
            (total.avg_in_rate, total.max_in_rate, total.peak_usage),
            (15.0, 30.0, 6)
        );
    }

    #[test]
    fn a_burst_before_the_first_tick_averages_over_the_seconds_covered() {
        // 3000 in the first (partial) second, then two quiet ones: a face
        // 3.2 s old averages 1000/s, not 3000/60.
        let mut meter = RateMeter::new();
        for _ in 0..3 {
            meter.tick(sample(3000, 0, 3000, 0));
        }
        let rates = meter.stats(sample(3000, 0, 3000, 0));
        assert_eq!(rates.last_60s.accepted, 3000);
        assert_eq!(rates.last_60s.avg_in_rate, 1000.0);
        assert_eq!(rates.last_60s.max_in_rate, 3000.0);
        assert_eq!(rates.total.avg_in_rate, 1000.0);
    }

    #[test]
    fn the_window_slides_past_old_seconds_while_the_total_keeps_them() {
        let mut meter = RateMeter::new();
        meter.tick(sample(0, 0, 0, 0)); // a quiet first second
                                        // One busy second (100 in, usage 9), then 60 quiet ones of 1 in.
        meter.tick(sample(100, 7, 100, 9));
        let mut accepted = 100;
        for _ in 0..59 {
            accepted += 1;
            meter.tick(sample(accepted, 7, accepted, 1));
        }
        let rates = meter.stats(sample(accepted, 7, accepted, 1));
        assert_eq!(
            rates.last_60s.max_in_rate, 100.0,
            "the busy second is 60 s old"
        );
        assert_eq!(rates.last_60s.peak_usage, 9);
        accepted += 1;
        meter.tick(sample(accepted, 7, accepted, 1)); // the busy second leaves
        let rates = meter.stats(sample(accepted, 7, accepted, 1));
        let window = &rates.last_60s;
        assert_eq!(
            (window.accepted, window.rejected, window.max_in_rate),
            (60, 0, 1.0)
        );
        assert_eq!((window.avg_in_rate, window.peak_usage), (1.0, 1));
        let total = &rates.total;
        assert_eq!(
            (total.accepted, total.rejected, total.max_in_rate),
            (160, 7, 100.0)
        );
        assert_eq!(total.peak_usage, 9);
        assert!((total.avg_in_rate - 160.0 / 62.0).abs() < 1e-9);
    }
}
