//! [`UpgradePermit`]: the permit of a request that asks for an upgrade, for
//! its handler to take into the upgraded session.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use http::{header, Method, Request};

use crate::tower::in_flight::InFlight;
use crate::OwnedPermit;

/// The permit of an admitted request that asks for an upgrade (a WebSocket
/// handshake, any request with an `Upgrade` header, or a `CONNECT`), found
/// in the request's [extensions](http::Request::extensions). The handler
/// [takes](Self::take) it and moves it into the task that serves the
/// upgraded connection, so the session holds its slot of the resource until
/// that task drops it: with capacity `n`, at most `n` requests and sessions
/// run at once.
///
/// The layer cannot see an upgraded session end, only the handler can: a
/// permit nobody takes is released with the response, as any request's
/// (for a `101 Switching Protocols`, or a `CONNECT`'s `2xx`, at the
/// response's head, since it has no body), and the session it opened is
/// not bounded. Holding it until the request's extensions are dropped
/// would bound nothing more, since a handler lets go of its request as it
/// answers; holding it until some later signal would leak it whenever the
/// signal never comes. So taking it is how a server bounds its sessions.
///
/// Every permit is released exactly once: by the response (it ended, or its
/// future was dropped) when nobody took it first, or else by whoever holds
/// the taken [`OwnedPermit`]. Once the response has released it, `take`
/// answers `None`. A taken permit is no latency sample of an adaptive
/// resource: its hold time is the session's, not the downstream's.
///
/// Only requests that ask for an upgrade carry one (ordinary requests pay
/// no allocation for it); a request refused with a 503 never reaches the
/// handler. A clone shares the one permit.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use http::{header, Request, Response, StatusCode};
/// use sidejob::tower::UpgradePermit;
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let layer = sidejob::tower::HttpShedLayer::with_capacity(1)?;
/// let (close, closed) = tokio::sync::watch::channel(false);
/// let service = layer.layer(service_fn(move |request: Request<()>| {
///     // Into the task that serves the upgraded connection (with hyper, the
///     // one that awaits `hyper::upgrade::on(request)`).
///     let permit = request.extensions().get::<UpgradePermit>().and_then(UpgradePermit::take);
///     let mut closed = closed.clone();
///     tokio::spawn(async move {
///         let _permit = permit; // held for the session
///         let _ = closed.wait_for(|closed| *closed).await;
///     });
///     let mut response = Response::new(String::new());
///     *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
///     std::future::ready(Ok::<_, Infallible>(response))
/// }));
/// let request = Request::get("/chat")
///     .header(header::CONNECTION, "upgrade")
///     .header(header::UPGRADE, "websocket")
///     .body(())?;
/// let response = service.oneshot(request).await?;
/// assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
/// drop(response);
/// assert_eq!(layer.resource().usage(), 1); // the session holds it
/// close.send(true)?;
/// while layer.resource().usage() > 0 {
///     tokio::task::yield_now().await; // the session's task ends
/// }
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// # }).unwrap();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
#[derive(Clone)]
pub struct UpgradePermit {
    slot: Arc<Mutex<Option<OwnedPermit>>>,
}

impl UpgradePermit {
    /// A slot holding `permit`, whose sample has started.
    fn new(permit: OwnedPermit) -> Self {
        UpgradePermit {
            slot: Arc::new(Mutex::new(Some(permit))),
        }
    }

    /// Takes the request's permit out, for the upgraded session to hold
    /// until it drops it; `None` when it was taken already or the response
    /// has ended (or been dropped) first and released it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use http::{header, Request, Response};
    /// use sidejob::{tower::UpgradePermit, OwnedPermit};
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(2)?;
    /// let (sender, taken) = std::sync::mpsc::channel::<Option<OwnedPermit>>();
    /// let service = layer.layer(service_fn(move |request: Request<()>| {
    ///     let handle = request.extensions().get::<UpgradePermit>().unwrap();
    ///     sender.send(handle.take()).unwrap();
    ///     assert!(handle.take().is_none()); // once only
    ///     std::future::ready(Ok::<_, Infallible>(Response::new(String::new())))
    /// }));
    /// let request = Request::get("/").header(header::UPGRADE, "echo").body(())?;
    /// drop(service.oneshot(request).await?);
    /// let permit = taken.recv()?.expect("the request's permit");
    /// assert_eq!(layer.resource().usage(), 1);
    /// drop(permit);
    /// assert_eq!(layer.resource().usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn take(&self) -> Option<OwnedPermit> {
        let mut permit = self.lock().take()?;
        // The session's hold time is no latency of the downstream.
        permit.unsample();
        Some(permit)
    }

    /// Whether the permit is still in the slot: neither taken nor released
    /// by the response.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use http::{header, Request, Response};
    /// use sidejob::tower::UpgradePermit;
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let layer = sidejob::tower::HttpShedLayer::with_capacity(1)?;
    /// let (sender, handles) = std::sync::mpsc::channel::<UpgradePermit>();
    /// let service = layer.layer(service_fn(move |request: Request<()>| {
    ///     let handle = request.extensions().get::<UpgradePermit>().unwrap();
    ///     assert!(handle.holds());
    ///     sender.send(handle.clone()).unwrap(); // kept, never taken
    ///     std::future::ready(Ok::<_, Infallible>(Response::new(String::new())))
    /// }));
    /// let request = Request::connect("example.com:443").body(())?;
    /// service.oneshot(request).await?; // a CONNECT's 200: the tunnel's head
    /// let handle = handles.recv()?;
    /// assert!(!handle.holds()); // released with the response
    /// assert!(handle.take().is_none());
    /// assert_eq!(layer.resource().usage(), 0);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// # }).unwrap();
    /// ```
    pub fn holds(&self) -> bool {
        self.lock().is_some()
    }

    /// The slot; a panic elsewhere never leaves it half changed, so a
    /// poisoned lock is taken as it is.
    fn lock(&self) -> MutexGuard<'_, Option<OwnedPermit>> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for UpgradePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpgradePermit")
            .field("holds", &self.holds())
            .finish()
    }
}

/// What the response needs to know of its request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked {
    /// A `HEAD`: the response has no body.
    head: bool,
    /// A `CONNECT`: a `2xx` starts a tunnel, and has no body.
    connect: bool,
}

impl Asked {
    /// What `request` asks; and whether it asks for an upgrade.
    #[inline]
    pub(super) fn of<B>(request: &Request<B>) -> (Asked, bool) {
        let method = request.method();
        let asked = Asked {
            head: method == Method::HEAD,
            connect: method == Method::CONNECT,
        };
        let headers = request.headers();
        // `is_empty` first: cheaper than the lookup, which hashes the name.
        let upgrade =
            asked.connect || (!headers.is_empty() && headers.contains_key(header::UPGRADE));
        (asked, upgrade)
    }

    /// Whether a response of `status` to this request ends at its head: it
    /// has no body (`HEAD`, `1xx`, `204`, `304`), or what follows it is an
    /// upgraded connection, not the response (`101`, a `CONNECT`'s `2xx`).
    #[inline]
    pub(super) fn ends_at_head(self, status: http::StatusCode) -> bool {
        self.head
            || status.is_informational()
            || status == http::StatusCode::NO_CONTENT
            || status == http::StatusCode::NOT_MODIFIED
            || (self.connect && status.is_success())
    }
}

/// Where an admitted request's permit waits for its response: with the
/// response future, or, for a request that asks for an upgrade, in a slot
/// its handler may take it from.
pub(super) enum Held {
    /// With the future; its sample runs.
    Here(InFlight),
    /// In the request's [`UpgradePermit`]: the future takes it back at the
    /// response, unless the handler took it, and releases it if dropped
    /// before.
    Offered(Claim),
}

impl Held {
    /// Puts `in_flight`'s permit in a slot, inserted into `request`'s
    /// extensions for its handler to take.
    #[cold]
    pub(super) fn offer<B>(request: &mut Request<B>, mut in_flight: InFlight) -> Self {
        let Some(permit) = in_flight.take_permit() else {
            return Held::Here(in_flight);
        };
        let handle = UpgradePermit::new(permit);
        request.extensions_mut().insert(handle.clone());
        Held::Offered(Claim(Some(handle)))
    }

    /// The permit, at the response: the one held here, or the one offered
    /// if nobody took it. Nothing is held after.
    #[inline]
    pub(super) fn take(&mut self) -> InFlight {
        match self {
            Held::Here(in_flight) => in_flight.hand_on(),
            Held::Offered(claim) => InFlight::resume(claim.reclaim()),
        }
    }

    /// Whether the request still holds its permit, or may (an upgrade
    /// request's response is still to come).
    pub(super) fn holds(&self) -> bool {
        match self {
            Held::Here(in_flight) => in_flight.holds(),
            Held::Offered(claim) => claim.0.is_some(),
        }
    }
}

/// The response future's side of an upgrade request's permit: it takes the
/// permit back at the response (unless the handler took it), and releases
/// it with no sample if the future is dropped before.
pub(super) struct Claim(Option<UpgradePermit>);

impl Claim {
    /// The permit back if nobody took it; the handle can no longer take it
    /// after.
    fn reclaim(&mut self) -> Option<OwnedPermit> {
        self.0.take().and_then(|handle| handle.lock().take())
    }
}

impl Drop for Claim {
    /// The response future dropped unfinished: the request was cancelled.
    fn drop(&mut self) {
        if let Some(permit) = self.reclaim() {
            permit.ignore();
        }
    }
}

impl fmt::Debug for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Held::Here(in_flight) => f.debug_tuple("Here").field(in_flight).finish(),
            Held::Offered(claim) => f.debug_tuple("Offered").field(claim).finish(),
        }
    }
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Claim").field(&self.0).finish()
    }
}
