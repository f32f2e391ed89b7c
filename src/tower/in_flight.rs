//! [`InFlight`]: a request's permit between `call` and the end of its
//! response, reporting to an adaptive limit how the request went.

use crate::OwnedPermit;

/// A request's permit from `call` on. Its hold time is a latency sample
/// (when the resource is adaptive) if the response completes:
/// [`finish`](Self::finish) releases it sampled; [`fail`](Self::fail)
/// reports a drop, or releases it as a call that ended without its
/// answer, and so does dropping it unfinished (the request was cancelled,
/// a timeout fired): a censored sample, or a drop past
/// `Adaptive::drop_after` (see [`OwnedPermit::cancelled`]), so the calls
/// that never answer still tell the limit the downstream is slow.
#[derive(Debug)]
pub(super) struct InFlight(Option<OwnedPermit>);

impl InFlight {
    /// The request starts now: a sample runs from here, not from
    /// `poll_ready`, where the permit may have been taken long before.
    #[inline]
    pub(super) fn start(mut permit: OwnedPermit) -> Self {
        permit.restart();
        InFlight(Some(permit))
    }

    #[cfg(feature = "http")]
    /// Nothing in flight (a 503's body).
    pub(super) fn none() -> Self {
        InFlight(None)
    }

    /// The response completed: release the permit, a latency sample.
    #[inline]
    pub(super) fn finish(&mut self) {
        drop(self.0.take());
    }

    /// The request failed: release the permit, as a drop (overload
    /// downstream) or as a call that ended without its answer.
    pub(super) fn fail(&mut self, dropped: bool) {
        if let Some(permit) = self.0.take() {
            if dropped {
                permit.dropped();
            } else {
                permit.cancelled();
            }
        }
    }

    #[cfg(feature = "http")]
    /// The response says overload downstream: report a drop now, and
    /// release the permit, unsampled, when the body ends.
    pub(super) fn mark_dropped(&mut self) {
        if let Some(permit) = &mut self.0 {
            permit.mark_dropped();
        }
    }

    #[cfg(feature = "http")]
    /// Hands the permit on (to the response body).
    pub(super) fn hand_on(&mut self) -> InFlight {
        InFlight(self.0.take())
    }

    #[cfg(feature = "http")]
    /// A started request's permit, back from where it waited (an upgrade
    /// request's shared slot), its sample still running.
    pub(super) fn resume(permit: Option<OwnedPermit>) -> InFlight {
        InFlight(permit)
    }

    #[cfg(feature = "http")]
    /// Takes the started permit out (into an upgrade request's shared
    /// slot); this holds none after.
    pub(super) fn take_permit(&mut self) -> Option<OwnedPermit> {
        self.0.take()
    }

    #[cfg(feature = "http")]
    /// Whether the permit's resource has an adaptive limit to tell.
    pub(super) fn adapts(&self) -> bool {
        self.0.as_ref().is_some_and(OwnedPermit::adapts)
    }

    /// Whether a permit is still held.
    pub(super) fn holds(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for InFlight {
    /// Unfinished: the request was cancelled, so its hold time is only a
    /// lower bound of its latency.
    fn drop(&mut self) {
        if let Some(permit) = self.0.take() {
            permit.cancelled();
        }
    }
}
