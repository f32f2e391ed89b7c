//! Adaptive limits: a [`Resource`](crate::Resource) whose capacity finds
//! itself from the latency and drops its permits report.
//!
//! [`ResourceBuilder::adaptive`](crate::ResourceBuilder::adaptive) gives a
//! resource an [`Adaptive`] controller. The builder's capacity is the
//! initial limit; from then on, each [window](Adaptive::window) the
//! controller's [`Algorithm`] sets the capacity within
//! `[min_limit, max_limit]`, through the core's hot resize. The rules:
//! [`Aimd`], [`Gradient`] (Netflix Gradient2's) and [`Vegas`], or your own.
//!
//! The signals are the permits themselves: a permit's hold time is a
//! latency sample; [`Permit::dropped`](crate::Permit::dropped) reports a
//! drop (the guarded call failed from overload downstream: a 503, a shed),
//! [`Permit::cancelled`](crate::Permit::cancelled) a call that ended
//! without its answer (a censored sample, or a drop past
//! [`Adaptive::drop_after`] × the baseline), and
//! [`Permit::ignore`](crate::Permit::ignore) releases without a sample.
//! The tower layers over an adaptive resource report these for you.
//!
//! The baseline the rules compare each window with is a reference of the
//! windows' *mean* latency, so jitter, a steady mix of fast and slow
//! requests and a long tail are not a queue (see
//! [`AdaptiveStats::baseline`]); it is re-learnt when shedding does not
//! bring the latency down, and re-probed at half the limit every
//! [`probe_every`](Adaptive::probe_every) windows.
//!
//! Samples gather on each shard's own cache line, the one its admission
//! writes anyway, and the release that finds the window's time up merges
//! them: no lock, no shared write and no thread on the request path.
//!
//! # Examples
//!
//! ```
//! use sidejob::adaptive::Adaptive;
//!
//! let resource = sidejob::Resource::builder()
//!     .capacity(10) // the initial limit
//!     .adaptive(Adaptive::gradient().min_limit(2).max_limit(100))
//!     .build()?;
//! let permit = resource.try_acquire()?;
//! // ... the guarded call ...
//! drop(permit); // a latency sample
//! let failed = resource.try_acquire()?;
//! failed.dropped(); // the call timed out downstream: back off
//! assert_eq!(resource.adaptive_stats().unwrap().limit, 10); // until a window closes
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod aimd;
mod algorithm;
mod baseline;
mod config;
mod controller;
mod governor;
mod gradient;
mod probe;
mod stats;
mod vegas;
mod window;

#[cfg(all(test, not(sidejob_loom)))]
mod simulation;

pub use aimd::Aimd;
pub use algorithm::Algorithm;
pub use config::{Adaptive, DEFAULT_WINDOW};
pub(crate) use controller::Controller;
pub(crate) use governor::{Governor, STAMP_BITS};
pub use gradient::Gradient;
pub use stats::AdaptiveStats;
pub use vegas::Vegas;
pub use window::Window;
