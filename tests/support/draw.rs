//! A small generator (xorshift), so a seed replays a run's choices: the
//! examples' random demand and faults.

use std::time::Duration;

pub struct Draw(pub u64);

impl Draw {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A duration between `low` and `high`.
    pub fn between(&mut self, low: Duration, high: Duration) -> Duration {
        low + (high - low).mul_f64(self.below(1_000) as f64 / 1_000.0)
    }
}
