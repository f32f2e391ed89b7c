//! [`Readiness`]: where a shedding service stands between `poll_ready` and
//! `call`, shared by [`Shed`](super::Shed) and the HTTP flavour.

use std::fmt;
use std::sync::Arc;
use std::task::Poll;

use crate::{OwnedPermit, Priority, Resource};

/// What `poll_ready` left for `call`.
pub(super) enum Readiness {
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

/// What `call` goes on with.
pub(super) enum Decision {
    Admitted(OwnedPermit),
    Overloaded,
}

impl Readiness {
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
            if let Readiness::Deferred = self {
                return Poll::Ready(Ok(()));
            }
            let polled = poll_inner();
            if let Poll::Ready(Ok(())) = polled {
                *self = Readiness::Deferred;
            }
            return polled;
        }
        match self {
            Readiness::Deferred => unreachable!("a deferred admission in an unprioritized service"),
            // Decided: one refusal per request, counted once.
            Readiness::Overloaded => return Poll::Ready(Ok(())),
            Readiness::Admitted(_) => {}
            Readiness::Unready => match resource.try_acquire_owned() {
                Ok(permit) => *self = Readiness::Admitted(permit),
                Err(_) => {
                    *self = Readiness::Overloaded;
                    return Poll::Ready(Ok(()));
                }
            },
        }
        match poll_inner() {
            Poll::Ready(Err(error)) => {
                *self = Readiness::Unready;
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
        match std::mem::replace(self, Readiness::Unready) {
            Readiness::Admitted(permit) => Decision::Admitted(permit),
            Readiness::Overloaded => Decision::Overloaded,
            Readiness::Deferred => match resource.try_acquire_owned_with(priority()) {
                Ok(permit) => Decision::Admitted(permit),
                Err(_) => Decision::Overloaded,
            },
            Readiness::Unready => panic!(
                "{service}::call without poll_ready: call `poll_ready` and wait for \
                 `Ready(Ok(()))` before each `call`"
            ),
        }
    }
}

impl fmt::Debug for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Readiness::Unready => "Unready",
            Readiness::Admitted(_) => "Admitted",
            Readiness::Overloaded => "Overloaded",
            Readiness::Deferred => "Deferred",
        })
    }
}
