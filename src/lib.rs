#![doc = include_str!("../README.md")]
#![warn(missing_docs, missing_debug_implementations)]
#![deny(unsafe_code)]

mod child;
mod error;
mod home;
mod idle;
mod latency;
mod mailbox;
mod maintainer;
mod manager;
mod object_pool;
mod owned_pooled;
mod permit;
mod pool_builder;
mod pool_clock;
mod pool_config;
mod pool_group;
mod pool_status;
mod pool_tag;
mod pooled;
mod probe;
mod reply;
mod resource;
mod shard;
mod split_shard;
mod supervisor;
mod sync;
mod tag_index;
mod wait_queue;
mod worker;
mod worker_pool;

pub use child::{ChildContext, ChildHandle, ChildId, ChildPanicked};
pub use error::{BuildError, CallError, CastError, DuplicatePool, Overload, SpawnError, TakeError};
pub use latency::LatencyStats;
pub use manager::{Manager, TaggedManager};
pub use object_pool::ObjectPool;
pub use owned_pooled::OwnedPooled;
pub use permit::{OwnedPermit, Permit};
pub use pool_builder::ObjectPoolBuilder;
pub use pool_config::{PoolConfig, DEFAULT_QUEUE_MAX};
pub use pool_group::{PoolGroup, Removal};
pub use pool_status::{ObjectPoolStats, PoolStatus};
pub use pool_tag::PoolTag;
pub use pooled::Pooled;
pub use resource::{Resource, ResourceBuilder, ResourceStats, ShardStats, MAX_SHARDS};
pub use supervisor::{
    ShutdownReport, Supervisor, SupervisorBuilder, SupervisorShardStats, SupervisorStats,
};
pub use worker::Worker;
#[cfg(not(sidejob_loom))]
pub use worker_pool::CallFuture;
pub use worker_pool::{
    NoWorker, WorkerPool, WorkerPoolBuilder, WorkerPoolStats, WorkerShardStats,
    DEFAULT_CALL_TIMEOUT, DEFAULT_LATENCY_SAMPLE_EVERY,
};
