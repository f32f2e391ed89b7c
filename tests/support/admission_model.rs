//! A sequential reference of the admission core (`src/admission/`): the
//! shards' leases, the reserve, and how an acquire, a release and a resize
//! move them, written by hand from docs/design.md ("How capacity moves").
//! The model tests of the faces built on the core check against it.

use proptest::test_runner::TestCaseError;
use sidejob::Overload;

/// Where a released slot goes (the reserve's mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Spread,
    Scarce,
}

/// The sequential reference of a sharded counter: what each shard leases
/// and holds, and the reserve.
#[derive(Debug)]
pub struct Slots {
    pub capacity: usize,
    /// Slots no shard leases; negative while a shrink's debt is unpaid.
    pub reserve: i64,
    pub mode: Mode,
    /// Permits held per shard.
    pub usage: Vec<u64>,
    /// Per-shard limits: the shard's lease (0 for a shard a shrink closed).
    pub limit: Vec<u64>,
    pub accepted: Vec<u64>,
    /// Refusals, by the shard where the probe started.
    pub rejected: Vec<u64>,
}

impl Slots {
    /// A fresh resource of `capacity` over `shards` shards: the capacity
    /// spread exactly, the remainder one each to the lowest shards (10 over
    /// 4 = [3, 3, 2, 2]), and an empty reserve.
    pub fn new(shards: usize, capacity: usize) -> Slots {
        Slots {
            capacity,
            reserve: 0,
            mode: Mode::Spread,
            usage: vec![0; shards],
            limit: (0..shards)
                .map(|i| (capacity / shards + usize::from(i < capacity % shards)) as u64)
                .collect(),
            accepted: vec![0; shards],
            rejected: vec![0; shards],
        }
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.usage.len()
    }

    /// Permits held in all.
    pub fn total_usage(&self) -> usize {
        self.usage.iter().sum::<u64>() as usize
    }

    /// Free slots on shard `i`.
    pub fn slack(&self, i: usize) -> u64 {
        self.limit[i].saturating_sub(self.usage[i])
    }

    /// Admits one on shard `shard`, bringing `lease` slots with it: a lease
    /// lifts the limit to `max(usage, limit) + lease`, reopening a shard a
    /// shrink closed.
    fn admit(&mut self, shard: usize, lease: u64) -> Result<usize, Overload> {
        if lease > 0 {
            self.limit[shard] = self.usage[shard].max(self.limit[shard]) + lease;
        }
        self.usage[shard] += 1;
        self.accepted[shard] += 1;
        Ok(shard)
    }

    /// An acquire from `start`: its own free slot; else a lease from the
    /// reserve (a share of it over the shard count while plentiful, one
    /// while scarce; scarcity ends when half the capacity is free); else,
    /// unless scarce, a free slot of the first shard with one in probe
    /// order, moved home; else a refusal, after which capacity is scarce.
    pub fn acquire(&mut self, start: usize) -> Result<usize, Overload> {
        self.acquire_ticket(start).map(|(shard, _)| shard)
    }

    /// [`acquire`](Self::acquire) as a `Resource` admits: also whether the
    /// slot was leased while capacity stays scarce, which its release then
    /// hands straight back to the reserve (see [`release_ticket`](Self::release_ticket)).
    /// The other faces release through the mode, as [`release`](Self::release).
    pub fn acquire_ticket(&mut self, start: usize) -> Result<(usize, bool), Overload> {
        let n = self.shards();
        let start = start % n;
        if self.slack(start) > 0 {
            return self.admit(start, 0).map(|shard| (shard, false));
        }
        if self.reserve > 0 {
            let lease = match self.mode {
                Mode::Spread => (self.reserve / n as i64).max(1),
                Mode::Scarce => {
                    if self.reserve >= 2 && self.reserve >= (self.capacity / 2) as i64 {
                        self.mode = Mode::Spread;
                    }
                    1
                }
            };
            self.reserve -= lease;
            let scarce = self.mode == Mode::Scarce;
            return self.admit(start, lease as u64).map(|shard| (shard, scarce));
        }
        if self.mode == Mode::Spread {
            if let Some(from) = (1..n).map(|k| (start + k) % n).find(|&i| self.slack(i) > 0) {
                self.limit[from] -= 1;
                return self.admit(start, 1).map(|shard| (shard, false));
            }
        }
        self.rejected[start] += 1;
        // Scarce from here on: the next refusals read the reserve alone.
        if self.mode == Mode::Spread {
            self.sweep();
        }
        Err(Overload)
    }

    /// Every shard's free slots to the reserve; while the reserve is in
    /// debt, each shard is closed (limit 0). Capacity is scarce after.
    pub fn sweep(&mut self) {
        for i in 0..self.shards() {
            let freed = self.slack(i);
            if self.reserve < 0 {
                self.limit[i] = 0;
            } else {
                self.limit[i] -= freed;
            }
            self.reserve += freed as i64;
        }
        self.mode = Mode::Scarce;
    }

    /// Releases a slot held on `shard`, leased under scarcity if `scarce`:
    /// then the slot leaves the shard for the reserve whatever the mode.
    pub fn release_ticket(&mut self, shard: usize, scarce: bool) {
        if !scarce {
            return self.release(shard);
        }
        if self.usage[shard] <= self.limit[shard] {
            self.limit[shard] -= 1;
        }
        self.usage[shard] -= 1;
        self.reserve += 1;
    }

    /// Releases a slot held on `shard`: a shard over its limit pays the
    /// slot to the reserve; while scarce, the free slot goes there too.
    pub fn release(&mut self, shard: usize) {
        let over = self.usage[shard] > self.limit[shard];
        self.usage[shard] -= 1;
        if over {
            self.reserve += 1;
        } else if self.mode == Mode::Scarce {
            let freed = self.slack(shard);
            self.limit[shard] -= freed;
            self.reserve += freed as i64;
        }
    }

    /// `set_capacity`: through the reserve; into debt, a closing sweep.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.reserve += capacity as i64 - self.capacity as i64;
        self.capacity = capacity;
        if self.reserve < 0 {
            self.sweep();
        }
    }

    /// The model's own invariant (design.md): each shard's `max(usage,
    /// limit)` plus the reserve sum to the capacity; a shard is over its
    /// limit only while closed after a shrink.
    pub fn check_invariant(&self) -> Result<(), TestCaseError> {
        let footprint: i64 = (0..self.shards())
            .map(|i| self.usage[i].max(self.limit[i]) as i64)
            .sum();
        proptest::prop_assert_eq!(
            footprint + self.reserve,
            self.capacity as i64,
            "model broke its own invariant: {:?}",
            self
        );
        Ok(())
    }
}
