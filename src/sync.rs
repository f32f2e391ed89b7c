//! Routes the primitives whose interleavings matter to `std` or, under the
//! `sidejob_loom` cfg, to the [loom] model checker.
//!
//! Everything in the crate that takes part in a concurrent protocol imports its
//! atomics, locks and thread-locals from here, never from `std` directly, so the
//! loom models in `loom-tests/` explore the very code that ships.
//!
//! [loom]: https://docs.rs/loom

#[cfg(sidejob_loom)]
pub(crate) use loom::hint::spin_loop;
#[cfg(sidejob_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(sidejob_loom)]
pub(crate) use loom::sync::Mutex;

#[cfg(not(sidejob_loom))]
pub(crate) use std::hint::spin_loop;
#[cfg(not(sidejob_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(sidejob_loom))]
pub(crate) use std::sync::Mutex;

/// Locks `mutex`, ignoring poison.
///
/// Every critical section in this crate leaves its data consistent at each step,
/// so a panic inside one (only a user callback can panic) cannot leave a torn
/// state behind: carrying on is always safe and never wedges a pool.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> impl std::ops::DerefMut<Target = T> + '_ {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(not(sidejob_loom))]
pub(crate) use std::thread::JoinHandle;

#[cfg(sidejob_loom)]
pub(crate) use loom::thread::JoinHandle;

/// Starts a named thread (loom threads have no names).
#[cfg(not(sidejob_loom))]
pub(crate) fn spawn_named<F>(name: String, body: F) -> std::io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new().name(name).spawn(body)
}

/// Starts a named thread (loom threads have no names).
#[cfg(sidejob_loom)]
pub(crate) fn spawn_named<F>(_name: String, body: F) -> std::io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    Ok(loom::thread::spawn(body))
}

/// Whether `handle` is the calling thread's own (joining it would deadlock).
#[cfg(not(sidejob_loom))]
pub(crate) fn is_current(handle: &JoinHandle<()>) -> bool {
    handle.thread().id() == std::thread::current().id()
}

/// Whether `handle` is the calling thread's own (joining it would deadlock).
#[cfg(sidejob_loom)]
pub(crate) fn is_current(_handle: &JoinHandle<()>) -> bool {
    false
}
