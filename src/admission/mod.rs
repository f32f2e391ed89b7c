//! The admission core: capacity split across shards, each an atomic usage
//! word on its own cache line, and the probe that admits through them.
//!
//! Every face is built on these parts and none of them knows a face:
//!
//! | part | what it is |
//! |---|---|
//! | [`Shard`](shard::Shard) | one usage word: usage, limit (the shard's lease) and grant count, admitted by one CAS |
//! | [`Reserve`](reserve::Reserve) | the capacity no shard leases, and whether capacity is plentiful or scarce, in one word |
//! | [`ShardedCounter`] | a capacity leased to a row of shards; the fast path and release ([`counter`]) |
//! | [`lease`] | an admission's slow path: lease from the reserve, move a free slot home, or refuse |
//! | [`sweep`] | free slots back to the reserve; resizes through the reserve |
//! | [`Priority`] | which requests may fill how much of the capacity |
//! | [`samples`] | an adaptive limit's latency samples and drops, gathered per shard |
//! | [`SplitShard`] | a shard whose slots one thread gives back: senders and releaser on separate lines |
//! | [`probe`] | admission over a fixed row of shards: home first, then each other once; refuses only when all were full at once |
//! | [`home`] | each thread's stable starting shard |
//! | [`sizing`] | how a capacity spreads exactly over shards, and the limits on both |
//!
//! `Resource`, `Supervisor`, `TaskSupervisor` and `ObjectPool` admit
//! through a [`ShardedCounter`], whose capacity follows demand across the
//! shards. The worker pool, whose slots are all given back by one worker per
//! shard, keeps a fixed split: a message is served by its shard's worker, so
//! its slots cannot move. It admits through [`SplitShard`]s and the
//! [`probe`] directly.
//!
//! The modules whose atomics interact each carry an `# Orderings` section:
//! [`shard`], [`reserve`], [`counter`], [`samples`], [`lease`], [`sweep`],
//! [`split_shard`] and [`probe`].

mod counter;
mod home;
mod lease;
mod priority;
mod probe;
mod reserve;
mod samples;
mod shard;
mod sizing;
mod split_shard;
mod sweep;

pub(crate) use counter::{shard_of, ShardedCounter, FROM_RESERVE};
pub(crate) use home::home_shard;
pub use priority::Priority;
pub(crate) use priority::{Shares, PRIORITIES};
pub(crate) use probe::admit;
#[cfg(test)]
pub(crate) use probe::AdmissionShard;
pub(crate) use samples::{SampleTotals, SQUARE_UNIT_NANOS};
// The simulated downstream squares its holds as a shard does.
#[cfg(all(test, not(sidejob_loom)))]
pub(crate) use samples::square;
pub use sizing::MAX_SHARDS;
pub(crate) use sizing::{check_capacity, limit_for, Sizing};
pub(crate) use split_shard::SplitShard;
