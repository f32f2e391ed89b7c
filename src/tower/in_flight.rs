//! [`InFlight`]: a request's permit between `call` and the end of its
//! response, reporting to an adaptive limit how the request went.
//!
//! # Design
//!
//! `src/tower/` puts a `Resource` in front of a tower service, through the
//! resource's public API only (an owned permit per request), so it is a face
//! of its own over the `Resource` face rather than over the core.
//!
//! * **Readiness** (`readiness.rs`, shared by `Shed` and `HttpShed`):
//!   `poll_ready` takes a permit first and polls the inner service only with
//!   one. A full resource is decided once, as `Overloaded`: `poll_ready`
//!   answers `Ready(Ok(()))` without polling the inner service, and the next
//!   `call` refuses. So the layer is never `Pending` because of overload and
//!   keeps no queue of its own, unlike tower's `ConcurrencyLimit`, and it
//!   refuses on the count of requests in flight rather than on the inner
//!   service being pending, unlike tower's `LoadShed` (tower#793). An inner
//!   `Pending` keeps the permit (the request is in flight while it waits): so
//!   under an inner service that queues (`Buffer`, `ConcurrencyLimit`,
//!   `ReadyCache`) the unprioritized layer bounds that queue with the
//!   requests served, by the capacity. A prioritized layer takes the permit
//!   in `call`, so it waits on a pending inner service with none. A
//!   permit `poll_ready` reserved and no `call` used (an inner error, a
//!   readied service dropped) goes back with no latency sample: `Readiness`
//!   releases it with `ignore` in its `Drop`. `call` without
//!   `poll_ready` panics naming it, as tower's own middleware does; a clone
//!   starts unreadied, since a permit is never copied.
//! * **The permit's life after `call`.** It moves into the response future
//!   (`pin-project-lite`, no `unsafe` of ours) and is dropped when the inner
//!   future completes or the response future is dropped, polled or not. In
//!   the HTTP flavour it moves on into the response body, a `PermitBody`,
//!   which drops it when the body ends or is dropped: a streaming response
//!   counts as in flight while it streams. The end is `poll_frame`'s `None`,
//!   `is_end_stream`, or the data frames reaching the declared length (the
//!   `Content-Length`, else an exact size hint), counted per frame, since
//!   hyper 1 stops at that length and drops the body unpolled; a response
//!   with no body (`HEAD`, `1xx`, `204`, `304`, a `CONNECT`'s `2xx`) ends
//!   at its head.
//! * **Upgrades** (`http/upgrade.rs`). The layer cannot see an upgraded
//!   session end, so a request that asks for an upgrade (an `Upgrade`
//!   header, or `CONNECT`; only those, so others allocate nothing) gets its
//!   permit in a shared slot, an `UpgradePermit` in its extensions; the
//!   handler takes it into the session's task, unsampled. The response
//!   future holds the slot's other handle: at the response (or its drop) it
//!   takes the permit back if nobody took it, so each permit has one
//!   releaser, and a permit nobody took ends with the `101`'s head, as
//!   before.
//! * **One bound per layer.** The layer holds an `Arc<Resource>`; every
//!   service it makes and every clone shares it, so the bound is global
//!   across routes and across the router clones axum makes per connection
//!   (where a `ConcurrencyLimitLayer` gives each clone its own semaphore,
//!   axum#2582).
//! * **Owned permits that scale.** A permit must be `'static` here. It keeps
//!   the counter alive through an anchor of its thread's home shard (an
//!   `Arc` per shard, cache-padded, each holding one reference to the
//!   counter), not through the resource's own `Arc`, so threads on different
//!   shards share no line; and a dropped permit's reference stays in a
//!   thread-local slot for the thread's next owned acquire, so acquiring and
//!   dropping on one thread costs about what a borrowed permit does
//!   (`resource/anchor.rs`; figures in `docs/benchmarks/history.md`).
//! * **HTTP.** `HttpShed` keeps the inner error type (axum routers need
//!   `Infallible`) and answers overload with `503 Service Unavailable`, a
//!   `Retry-After` in whole seconds rounded up, and no body (a
//!   `PermitBody` over `None`, so any body type will do).

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
