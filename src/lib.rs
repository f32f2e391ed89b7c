#![doc = include_str!("../README.md")]
#![warn(missing_docs, missing_debug_implementations)]
#![deny(unsafe_code)]

mod error;
mod home;
mod permit;
mod resource;
mod shard;
mod sync;

pub use error::{BuildError, Overload};
pub use permit::{OwnedPermit, Permit};
pub use resource::{Resource, ResourceBuilder, ResourceStats, ShardStats, MAX_SHARDS};
