//! The `tracing` events of the faces' state changes (feature `tracing`):
//! one event when something changes state, never one per request or per
//! admission. Each macro expands to nothing without the feature, arguments
//! included, so the admission paths are the same either way.
//!
//! Every event's target is `sidejob::<face>` and its fields carry the
//! face's `name`; `docs/operations.md` lists them with their levels.

/// An event at `INFO`: a face's state changed as expected (joined, left,
/// recovered, restarted).
macro_rules! info_event {
    ($($arg:tt)+) => {
        #[cfg(feature = "tracing")]
        {
            ::tracing::info!($($arg)+);
        }
    };
}

/// An event at `WARN`: something failed and the face copes (a renewal
/// failed, refills back off, a worker or a child panicked).
macro_rules! warn_event {
    ($($arg:tt)+) => {
        #[cfg(feature = "tracing")]
        {
            ::tracing::warn!($($arg)+);
        }
    };
}

/// An event at `ERROR`: a part of a face is down for good (a shard past
/// its restart intensity).
macro_rules! error_event {
    ($($arg:tt)+) => {
        #[cfg(feature = "tracing")]
        {
            ::tracing::error!($($arg)+);
        }
    };
}

/// An event at `DEBUG`: a figure an operator may follow moved (a grant,
/// an adaptive limit).
#[allow(unused_macros)] // its callers may all be behind features
macro_rules! debug_event {
    ($($arg:tt)+) => {
        #[cfg(feature = "tracing")]
        {
            ::tracing::debug!($($arg)+);
        }
    };
}

#[allow(unused_imports)] // as `debug_event`
pub(crate) use {debug_event, error_event, info_event, warn_event};
