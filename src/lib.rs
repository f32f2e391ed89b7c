#![doc = include_str!("../README.md")]
#![warn(missing_docs, missing_debug_implementations)]
#![deny(unsafe_code)]

mod child;
mod error;
mod home;
mod latency;
mod mailbox;
mod permit;
mod reply;
mod resource;
mod shard;
mod supervisor;
mod sync;
mod worker;
mod worker_pool;

pub use child::{ChildContext, ChildHandle, ChildId, ChildPanicked};
pub use error::{BuildError, CallError, CastError, Overload, SpawnError};
pub use latency::LatencyStats;
pub use permit::{OwnedPermit, Permit};
pub use resource::{Resource, ResourceBuilder, ResourceStats, ShardStats, MAX_SHARDS};
pub use supervisor::{
    ShutdownReport, Supervisor, SupervisorBuilder, SupervisorShardStats, SupervisorStats,
};
pub use worker::Worker;
#[cfg(not(sidejob_loom))]
pub use worker_pool::CallFuture;
pub use worker_pool::{
    NoWorker, WorkerPool, WorkerPoolBuilder, WorkerPoolStats, WorkerShardStats,
    DEFAULT_CALL_TIMEOUT,
};
