#![doc = include_str!("../README.md")]
#![warn(missing_docs, missing_debug_implementations)]
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Shared by every face: the errors, caught panics, the std/loom routing,
// the process's one clock, the histograms.
mod clock;
#[cfg(sidejob_loom)]
#[doc(hidden)]
pub use clock::advance_loom_clock;
mod error;
mod events;
mod latency;
mod panics;
mod sync;
pub use error::{BuildError, Overload};
pub use latency::LatencyStats;

// The admission core: shards and their leases, the reserve, home shards,
// priorities. It knows no face.
mod admission;
pub use admission::{Priority, MAX_SHARDS};

// What operators see of every face: rates over windows, and the figures an
// exporter reads.
mod rates;
pub use rates::{RateStats, WindowStats};

mod metered;
pub use metered::{Figure, FigureValue, Metered, Snapshot};

// Where a resource's capacity can come from: an adaptive limit that finds
// itself from latency and drops.
pub mod adaptive;

// Resource: the sharded admission counter.
mod resource;
pub use resource::{
    CapacityLease, OwnedPermit, Permit, PriorityCounts, Resource, ResourceBuilder, ResourceStats,
    ShardStats,
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

// What both supervisors share: child ids, spawn errors, shutdown reports.
mod children;
pub use children::{ChildId, ShutdownReport, SpawnError};

// Supervisor: a bounded, tracked set of child threads.
mod supervisor;
pub use supervisor::{
    ChildContext, ChildHandle, ChildPanicked, Supervisor, SupervisorBuilder, SupervisorShardStats,
    SupervisorStats,
};

// TaskSupervisor: a bounded, tracked set of async tasks.
mod task_supervisor;
pub use task_supervisor::{
    TaskContext, TaskShardStats, TaskSupervisor, TaskSupervisorBuilder, TaskSupervisorStats,
    Tracked,
};
#[cfg(feature = "tokio")]
pub use task_supervisor::{TaskError, TaskHandle};

// ObjectPool and AsyncObjectPool: reusable objects with hard and soft
// limits, waiters, tags and groups.
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

// Exporters of the faces' figures, the tower layers, and one budget for a
// fleet of nodes: each behind its feature.
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
