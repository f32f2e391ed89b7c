//! The admission core: capacity split across shards, each an atomic usage
//! word on its own cache line, and the probe that admits through them.
//!
//! Every face is built on these parts and none of them knows a face:
//!
//! | part | what it is |
//! |---|---|
//! | [`Shard`](shard::Shard) | one usage word: usage, limit and grant count, admitted by one CAS |
//! | [`SplitShard`] | a shard whose slots one thread gives back: senders and releaser on separate lines |
//! | [`probe`] | admission over a row of shards: home first, then each other once; refuses only when all were full at once |
//! | [`home`] | each thread's stable starting shard |
//! | [`sizing`] | how a capacity spreads exactly over shards, and the limits on both |
//! | [`ShardedCounter`] | a row of [`Shard`](shard::Shard)s with one capacity, resizable at run time ([`rebalance`]) |
//!
//! `Resource`, `Supervisor` and `ObjectPool` admit through a
//! [`ShardedCounter`]; the worker pool, whose slots are all given back by one
//! worker per shard, through [`SplitShard`]s and the [`probe`] directly.
//!
//! The modules whose atomics interact each carry an `# Orderings` section:
//! [`shard`], [`split_shard`], [`probe`], [`counter`] and [`rebalance`].

mod counter;
mod home;
mod probe;
mod rebalance;
mod shard;
mod sizing;
mod split_shard;

pub(crate) use counter::ShardedCounter;
pub(crate) use home::home_shard;
pub(crate) use probe::admit;
#[cfg(test)]
pub(crate) use probe::AdmissionShard;
pub use sizing::MAX_SHARDS;
pub(crate) use sizing::{check_capacity, limit_for, Sizing};
pub(crate) use split_shard::SplitShard;
