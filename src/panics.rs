//! Caught panics: their message, and letting go of user values (panic
//! payloads among them) whose `Drop` may panic again, so that no thread of
//! the crate unwinds out of the guard that caught the first panic.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// How many times a value may panic while dropped (each panic's payload is
/// dropped in turn) before what is left is leaked rather than dropped.
const DROP_TRIES: usize = 8;

/// The text of a caught panic's payload, for error messages.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string panic payload")
}

/// Runs `f` (which lets go of user values: a reply's send drops it when
/// the caller stopped waiting) under `catch_unwind`; the payload of a
/// panic is dropped with [`drop_quietly`]. A user type's `Drop` that
/// panics costs the value, never the thread.
pub(crate) fn run_quietly(f: impl FnOnce()) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(f)) {
        drop_quietly(panic);
    }
}

/// Drops `value` under `catch_unwind`, then the payload of each panic
/// that dropping raised (a payload may panic when dropped too), up to
/// [`DROP_TRIES`] times; a payload past that is leaked.
pub(crate) fn drop_quietly<T>(value: T) {
    let Err(mut panic) = catch_unwind(AssertUnwindSafe(move || drop(value))) else {
        return;
    };
    for _ in 1..DROP_TRIES {
        match catch_unwind(AssertUnwindSafe(move || drop(panic))) {
            Ok(()) => return,
            Err(next) => panic = next,
        }
    }
    std::mem::forget(panic);
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::{drop_quietly, run_quietly};

    /// Panics with `Chain(n - 1)` when dropped, down to 0.
    struct Chain(u32);

    impl Drop for Chain {
        fn drop(&mut self) {
            if self.0 > 0 {
                std::panic::panic_any(Chain(self.0 - 1));
            }
        }
    }

    #[test]
    fn a_drop_that_panics_with_payloads_that_panic_never_escapes() {
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        drop_quietly(Chain(4));
        drop_quietly(Chain(100)); // past the tries: the rest leaks
        run_quietly(|| std::panic::panic_any(Chain(3)));
        std::panic::set_hook(quiet);
    }
}
