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

#[cfg(sidejob_loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(sidejob_loom)]
pub(crate) use loom::thread::{current as current_thread, park, yield_now, Thread};

#[cfg(not(sidejob_loom))]
pub(crate) use std::hint::spin_loop;
#[cfg(not(sidejob_loom))]
pub(crate) use std::thread::{current as current_thread, park, park_timeout, yield_now, Thread};

/// Loom models no time: parks until unparked.
#[cfg(sidejob_loom)]
pub(crate) fn park_timeout(_timeout: std::time::Duration) {
    park();
}
#[cfg(not(sidejob_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(sidejob_loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// `std`'s `UnsafeCell` with loom's closure API (`with`, `with_mut`), so
/// code using it runs unchanged under loom, which checks every access to
/// its cells against the others.
#[cfg(not(sidejob_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(sidejob_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a pointer to the contents, for reading.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a pointer to the contents, for writing.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Stands in for what a `SeqCst` access already guarantees in the C++ model
/// but loom does not model (loom treats `SeqCst` accesses as `AcqRel` and
/// models only `SeqCst` fences): a `SeqCst` fence under loom, nothing in an
/// ordinary build.
#[inline(always)]
pub(crate) fn seq_cst_for_loom() {
    #[cfg(sidejob_loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
}

/// A lock for critical sections of a few instructions on a hot path (the
/// idle stacks): unlocking is a plain release store rather than the
/// read-modify-write a futex mutex needs, which halves the atomic operations
/// of an uncontended lock and unlock. A waiter yields its time slice between
/// tries, so a holder that was preempted gets the CPU back. Under loom it is
/// loom's mutex, so the models explore it like any other lock.
#[cfg(not(sidejob_loom))]
pub(crate) type SpinLock<T> = spin::mutex::SpinMutex<T, spin::relax::Yield>;
#[cfg(sidejob_loom)]
pub(crate) type SpinLock<T> = Mutex<T>;

/// Holds a [`SpinLock`].
#[cfg(not(sidejob_loom))]
pub(crate) type SpinGuard<'a, T> = spin::mutex::SpinMutexGuard<'a, T>;
#[cfg(sidejob_loom)]
pub(crate) type SpinGuard<'a, T> = MutexGuard<'a, T>;

/// Locks a [`SpinLock`]. It has no poison: its critical sections run no
/// user code.
#[cfg(not(sidejob_loom))]
#[inline]
pub(crate) fn spin_lock<T>(lock: &SpinLock<T>) -> SpinGuard<'_, T> {
    match lock.try_lock() {
        Some(guard) => guard,
        None => spin_lock_contended(lock),
    }
}

/// The lock was held: wait for it, out of the callers' line.
#[cfg(not(sidejob_loom))]
#[cold]
#[inline(never)]
fn spin_lock_contended<T>(lock: &SpinLock<T>) -> SpinGuard<'_, T> {
    lock.lock()
}

/// Locks a [`SpinLock`] (loom's mutex here).
#[cfg(sidejob_loom)]
pub(crate) fn spin_lock<T>(lock: &SpinLock<T>) -> SpinGuard<'_, T> {
    self::lock(lock)
}

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

/// Locks `mutex` if no one holds it, ignoring poison as [`lock`] does.
pub(crate) fn try_lock<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(guard) => Some(guard),
        Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
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

/// Waits on `condvar` under `mutex` until `ready` says so (checked under
/// the lock, first before any wait) or `deadline` passes (`None`: no
/// deadline); whether it was ready. Whoever makes it ready must do so and
/// notify under `mutex`, so no wake is lost.
pub(crate) fn wait_until<T>(
    mutex: &Mutex<T>,
    condvar: &Condvar,
    deadline: Option<std::time::Instant>,
    ready: impl Fn() -> bool,
) -> bool {
    let mut guard = lock(mutex);
    loop {
        if ready() {
            return true;
        }
        let left = match deadline {
            Some(deadline) => match deadline.checked_duration_since(std::time::Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => return false,
            },
            None => std::time::Duration::from_secs(3600),
        };
        guard = wait_timeout(condvar, guard, left);
    }
}

/// Waits on `condvar`, ignoring poison as [`lock`] does. May wake early;
/// callers re-check their condition.
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    match condvar.wait(guard) {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
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

/// Checks a thread-name prefix given to a builder's `name` setting: the OS
/// cannot take a name with a NUL byte, and a builder says so at `build`
/// rather than failing when its first thread starts.
pub(crate) fn check_thread_name(name: &str) -> Result<(), crate::error::BuildError> {
    if name.contains('\0') {
        return Err(crate::error::BuildError::new(
            "name",
            "must not contain a NUL byte",
        ));
    }
    Ok(())
}

/// The middle of a store-then-load pair between `SeqCst` accesses (a
/// release writing its shard, then reading the reserve's mode; a sweep
/// writing the mode, then reading the shards). C11 and Rust order all
/// `SeqCst` accesses in one total order, so either thread sees the other's
/// store and the pair needs nothing more. Loom models `SeqCst` accesses as
/// `AcqRel` (tokio-rs/loom#180) and would report the pair broken, so under
/// loom this is a `SeqCst` fence, which loom models fully; in a real build
/// it is nothing, and the fast path pays no `mfence`.
#[inline(always)]
pub(crate) fn seqcst_pair() {
    #[cfg(sidejob_loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
}
