#![doc = include_str!("../README.md")]
#![warn(missing_docs, missing_debug_implementations)]
#![deny(unsafe_code)]

// Shared by every face: the errors, the std/loom routing, the histograms.
mod error;
mod latency;
mod sync;

// The admission core: shards, the probe, home shards. It knows no face.
mod admission;

// The faces, each over the core.
mod object_pool;
mod resource;
mod supervisor;
mod worker_pool;

pub use admission::MAX_SHARDS;
pub use error::{BuildError, Overload};
pub use latency::LatencyStats;

pub use resource::{OwnedPermit, Permit, Resource, ResourceBuilder, ResourceStats, ShardStats};

#[cfg(not(sidejob_loom))]
pub use worker_pool::CallFuture;
pub use worker_pool::{
    CallError, CastError, NoWorker, Worker, WorkerPool, WorkerPoolBuilder, WorkerPoolStats,
    WorkerShardStats, DEFAULT_CALL_TIMEOUT, DEFAULT_LATENCY_SAMPLE_EVERY,
};

pub use supervisor::{
    ChildContext, ChildHandle, ChildId, ChildPanicked, ShutdownReport, SpawnError, Supervisor,
    SupervisorBuilder, SupervisorShardStats, SupervisorStats,
};

pub use object_pool::{
    DuplicatePool, Manager, ObjectPool, ObjectPoolBuilder, ObjectPoolStats, OwnedPooled,
    PoolConfig, PoolGroup, PoolStatus, PoolTag, Pooled, Removal, TaggedManager, TakeError,
    DEFAULT_QUEUE_MAX,
};
