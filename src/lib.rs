#![doc = include_str!("../README.md")]
#![warn(missing_docs, missing_debug_implementations)]
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Shared by every face: the errors, the std/loom routing, the histograms.
mod error;
mod latency;
mod panics;
mod sync;
pub use error::{BuildError, Overload};
pub use latency::LatencyStats;

// The admission core: shards and their leases, the reserve, home shards,
// priorities. It knows no face.
mod admission;
pub use admission::{Priority, MAX_SHARDS};

mod rates;
pub use rates::{RateStats, WindowStats};

mod metered;
pub use metered::{Figure, FigureValue, Metered, Snapshot};

// Resource: the sharded admission counter.
pub mod adaptive;

mod resource;
#[cfg(sidejob_loom)]
#[doc(hidden)]
pub use resource::advance_loom_clock;
pub use resource::{
    OwnedPermit, Permit, PriorityCounts, Resource, ResourceBuilder, ResourceStats, ShardStats,
};

// WorkerPool: bounded mailboxes served by worker threads.
mod worker_pool;
#[cfg(not(sidejob_loom))]
pub use worker_pool::CallFuture;
pub use worker_pool::{
    CallError, CastError, NoWorker, Worker, WorkerPool, WorkerPoolBuilder, WorkerPoolStats,
    WorkerShardStats, DEFAULT_CALL_TIMEOUT, DEFAULT_LATENCY_SAMPLE_EVERY, DEFAULT_MAX_RESTARTS,
    DEFAULT_RESTART_WINDOW,
};

// Supervisor: a bounded, tracked set of child threads.
mod children;
pub use children::{ChildId, ShutdownReport, SpawnError};

mod supervisor;
pub use supervisor::{
    ChildContext, ChildHandle, ChildPanicked, Supervisor, SupervisorBuilder, SupervisorShardStats,
    SupervisorStats,
};

// ObjectPool: reusable objects with hard and soft limits, waiters, tags and groups.
mod task_supervisor;
pub use task_supervisor::{
    TaskContext, TaskShardStats, TaskSupervisor, TaskSupervisorBuilder, TaskSupervisorStats,
    Tracked,
};
#[cfg(feature = "tokio")]
pub use task_supervisor::{TaskError, TaskHandle};

mod object_pool;
#[cfg(feature = "tokio")]
pub use object_pool::{
    AsyncManaged, AsyncManager, AsyncObjectPool, AsyncObjectPoolBuilder, AsyncOwnedPooled,
    AsyncPooled, AsyncTaggedManager,
};
pub use object_pool::{
    DuplicatePool, Manager, ObjectPool, ObjectPoolBuilder, ObjectPoolStats, OwnedPooled,
    PoolConfig, PoolGroup, PoolStatus, PoolTag, Pooled, Removal, TaggedManager, TakeError,
    DEFAULT_QUEUE_MAX,
};

#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;

#[cfg(feature = "prometheus")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
pub mod prometheus;

#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod fleet;
