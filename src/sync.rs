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
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(sidejob_loom))]
pub(crate) use std::hint::spin_loop;
#[cfg(not(sidejob_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(sidejob_loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Locks `mutex`, ignoring poison.
///
/// Every critical section in this crate leaves its data consistent at each step,
/// so a panic inside one (only a user callback can panic) cannot leave a torn
/// state behind: carrying on is always safe and never wedges a pool.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Waits on `condvar` for at most `timeout`, ignoring poison as [`lock`]
/// does. May wake early; callers re-check their condition.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: std::time::Duration,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout(guard, timeout) {
        Ok((guard, _)) => guard,
        Err(poisoned) => poisoned.into_inner().0,
    }
}

#[cfg(not(sidejob_loom))]
pub(crate) use std::thread::JoinHandle;

#[cfg(sidejob_loom)]
pub(crate) use loom::thread::JoinHandle;

/// Starts a named thread, with the given stack size if any.
#[cfg(not(sidejob_loom))]
pub(crate) fn spawn_named<F, T>(
    name: String,
    stack_size: Option<usize>,
    body: F,
) -> std::io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let mut builder = std::thread::Builder::new().name(name);
    if let Some(size) = stack_size {
        builder = builder.stack_size(size);
    }
    builder.spawn(body)
}

/// Starts a loom thread (loom ignores names and stack sizes).
#[cfg(sidejob_loom)]
pub(crate) fn spawn_named<F, T>(
    _name: String,
    _stack_size: Option<usize>,
    body: F,
) -> std::io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Ok(loom::thread::spawn(body))
}

/// Whether `handle` is the calling thread's own (joining it would deadlock).
#[cfg(not(sidejob_loom))]
pub(crate) fn is_current<T>(handle: &JoinHandle<T>) -> bool {
    handle.thread().id() == std::thread::current().id()
}

/// Whether `handle` is the calling thread's own (joining it would deadlock).
#[cfg(sidejob_loom)]
pub(crate) fn is_current<T>(_handle: &JoinHandle<T>) -> bool {
    false
}
