//! [`Readiness`]: where a shedding service stands between `poll_ready` and
//! `call`, shared by [`Shed`](super::Shed) and the HTTP flavour.

use std::fmt;
use std::sync::Arc;
use std::task::Poll;

use crate::{OwnedPermit, Priority, Resource};

/// What `poll_ready` left for `call`. A permit it reserved and no `call`
/// used (the inner service failed to get ready, or the readied service was
/// dropped, or replaced by a clone and dropped) is released with no latency
/// sample: no request was made with it, so its hold time says nothing of the
/// downstream.
pub(super) struct Readiness {
    state: State,
}

/// Where the service stands.
enum State {
    /// `poll_ready` has not answered `Ready` since the last `call`.
    Unready,
    /// A permit is held; the inner service is ready, or being polled.
    Admitted(OwnedPermit),
    /// Every shard was full: the next `call` refuses.
    Overloaded,
    /// The inner service is ready and the permit waits for `call`, where
    /// the request's priority is known (see `Prioritize`).
    Deferred,
}

impl Drop for Readiness {
    /// A permit reserved in `poll_ready` and never used: no sample.
    fn drop(&mut self) {
        self.release_unused();
    }
}

/// What `call` goes on with.
pub(super) enum Decision {
    Admitted(OwnedPermit),
    Overloaded,
}

impl Readiness {
    /// Unready: nothing reserved.
    pub(super) fn new() -> Self {
        Readiness {
            state: State::Unready,
        }
    }

    /// Back to unready; a reserved permit goes back with no sample.
    fn release_unused(&mut self) {
        if let State::Admitted(permit) = std::mem::replace(&mut self.state, State::Unready) {
            permit.ignore();
        }
    }

    /// `poll_ready`: a permit first, then the inner service's readiness
    /// (`poll_inner`), polled only with a permit held. An inner error
    /// releases the permit. With `at_call`, only the inner service is
    /// polled, and the permit waits for `call`.
    #[inline]
    pub(super) fn poll_ready<E>(
        &mut self,
        resource: &Arc<Resource>,
        at_call: bool,
        poll_inner: impl FnOnce() -> Poll<Result<(), E>>,
    ) -> Poll<Result<(), E>> {
        if at_call {
            if let State::Deferred = self.state {
                return Poll::Ready(Ok(()));
            }
            let polled = poll_inner();
            if let Poll::Ready(Ok(())) = polled {
                self.state = State::Deferred;
            }
            return polled;
        }
        match self.state {
            State::Deferred => unreachable!("a deferred admission in an unprioritized service"),
            // Decided: one refusal per request, counted once.
            State::Overloaded => return Poll::Ready(Ok(())),
            State::Admitted(_) => {}
            State::Unready => match resource.try_acquire_owned() {
                Ok(permit) => self.state = State::Admitted(permit),
                Err(_) => {
                    self.state = State::Overloaded;
                    return Poll::Ready(Ok(()));
                }
            },
        }
        match poll_inner() {
            Poll::Ready(Err(error)) => {
                self.release_unused();
                Poll::Ready(Err(error))
            }
            polled => polled,
        }
    }

    /// `call`: what `poll_ready` decided, or for a deferred admission, a
    /// permit of `priority` now; the service is unready again.
    ///
    /// # Panics
    ///
    /// If `poll_ready` did not answer `Ready(Ok(()))` first.
    #[inline]
    pub(super) fn take_for_call(
        &mut self,
        service: &str,
        resource: &Arc<Resource>,
        priority: impl FnOnce() -> Priority,
    ) -> Decision {
        match std::mem::replace(&mut self.state, State::Unready) {
            State::Admitted(permit) => Decision::Admitted(permit),
            State::Overloaded => Decision::Overloaded,
            State::Deferred => match resource.try_acquire_owned_with(priority()) {
                Ok(permit) => Decision::Admitted(permit),
                Err(_) => Decision::Overloaded,
            },
            State::Unready => panic!(
                "{service}::call without poll_ready: call `poll_ready` and wait for \
                 `Ready(Ok(()))` before each `call`"
            ),
        }
    }
}

impl fmt::Debug for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.state {
            State::Unready => "Unready",
            State::Admitted(_) => "Admitted",
            State::Overloaded => "Overloaded",
            State::Deferred => "Deferred",
        })
    }
}
