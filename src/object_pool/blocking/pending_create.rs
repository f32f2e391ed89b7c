//! [`PendingCreate`]: a creation run on a helper thread, so that whoever
//! waits for it can stop waiting at a deadline while the call goes on.
//!
//! # Protocol
//!
//! The cell starts `Running` and moves once, under its mutex: to `Done` when
//! the helper finishes first (the waiter then takes the result), or to
//! `Abandoned` when the waiter's deadline passes first (the helper then gets
//! its result back from [`finish`](PendingCreate::finish) and disposes of it:
//! destroys the late object, which frees its slot). Both moves happen under
//! the one lock, so exactly one side owns the result: a late object is never
//! both handed out and destroyed, nor lost. The mutex orders everything; no
//! atomics are involved.

use std::time::Instant;

use crate::sync::{lock, wait_timeout, Condvar, Mutex};

/// A result one thread makes and another waits for, until a deadline.
#[derive(Debug)]
pub(in crate::object_pool) struct PendingCreate<T> {
    state: Mutex<State<T>>,
    finished: Condvar,
}

#[derive(Debug)]
enum State<T> {
    /// The helper is still in the call.
    Running,
    /// The helper finished before the waiter gave up.
    Done(T),
    /// The waiter gave up (or took the result).
    Abandoned,
}

impl<T> PendingCreate<T> {
    pub(in crate::object_pool) fn new() -> Self {
        PendingCreate {
            state: Mutex::new(State::Running),
            finished: Condvar::new(),
        }
    }

    /// The helper's side: hands `result` to the waiter, or back to the
    /// helper (`Err`) if the waiter gave up first.
    pub(in crate::object_pool) fn finish(&self, result: T) -> Result<(), T> {
        let mut state = lock(&self.state);
        if let State::Abandoned = *state {
            return Err(result);
        }
        *state = State::Done(result);
        drop(state);
        self.finished.notify_one();
        Ok(())
    }

    /// The waiter's side: the result, or `None` once `deadline` passed
    /// without one; the helper then keeps the result. `abandon` runs
    /// when the waiter gives up, under the cell's lock: before the helper
    /// can learn that it did.
    pub(in crate::object_pool) fn wait_until(
        &self,
        deadline: Instant,
        abandon: impl FnOnce(),
    ) -> Option<T> {
        let mut state = lock(&self.state);
        loop {
            if let State::Done(_) = *state {
                // Taken: the helper has finished with the cell.
                if let State::Done(result) = std::mem::replace(&mut *state, State::Abandoned) {
                    return Some(result);
                }
            }
            let now = Instant::now();
            if now >= deadline {
                *state = State::Abandoned;
                abandon();
                return None;
            }
            state = wait_timeout(&self.finished, state, deadline - now);
        }
    }
}
