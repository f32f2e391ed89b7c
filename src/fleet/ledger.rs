//! [`Ledger`]: the budget's state in Redis, changed only by one script
//! (`renew.lua`), one call per node per refresh.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, Script};

use super::FleetError;

/// How long Redis may take to answer one call, and to accept a connection.
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);

/// What a renewal (or a join, or a resize) answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Answer {
    /// The slots the ledger gives the node: at least what it may still hold.
    pub(super) grant: usize,
    /// The slots the node should admit up to: its fair share, within the
    /// grant (below it while the node gives back what it holds).
    pub(super) target: usize,
    /// The node's fair share, whether or not the others have made room
    /// for it yet.
    pub(super) share: usize,
    /// The nodes holding a lease.
    pub(super) nodes: usize,
    /// Whether the budget is learning (after an empty start, or a ledger
    /// that may be stale).
    pub(super) learning: bool,
    /// The budget's capacity.
    pub(super) capacity: usize,
    /// When the ledger's lease for this call ends (ms, the server's
    /// clock): sent back with the next call, so the script can tell a
    /// ledger that lost the write.
    pub(super) expiry: i64,
}

/// How a call of the script treats the capacity it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// The capacity must be the budget's.
    Join,
    /// The budget's capacity stands.
    Renew,
    /// The capacity becomes the given one.
    Resize,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Join => "join",
            Mode::Renew => "renew",
            Mode::Resize => "resize",
        }
    }
}

/// What the node last heard from the ledger about its own record: the
/// expiry its last applied call was answered with, and how long ago (on
/// the node's clock) it sent that call; `None` when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Seen {
    pub(super) expiry: i64,
    pub(super) since: Duration,
}

/// One node's handle on a budget's keys. Cheap to clone: clones share one
/// connection, and make one call at a time on it (a [`Session`]), so the
/// node's calls run in the order it numbers them. The connection is
/// replaced after any failed call (so a demoted primary's `READONLY`, a
/// dropped connection or a timeout are followed by a fresh connection at
/// the next call, one try per call).
#[derive(Clone)]
pub(super) struct Ledger {
    client: Client,
    connection: Arc<tokio::sync::Mutex<Option<MultiplexedConnection>>>,
    script: Script,
    keys: [String; 6],
    node: String,
    token: String,
    lease_ms: u64,
    refresh_ms: u64,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("keys", &self.keys)
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl Ledger {
    /// Connects to `url` (trusting `tls_root` for `rediss://`, if given)
    /// for `budget`'s keys, as `node`, once: the first error (refused, a
    /// wrong password, a certificate not trusted, a timeout) is reported
    /// as it is.
    pub(super) async fn connect(
        (url, tls_root): (&str, Option<&[u8]>),
        budget: &str,
        node: &str,
        (lease, refresh): (Duration, Duration),
    ) -> Result<Ledger, FleetError> {
        let client = client(url, tls_root)?;
        // One hash tag: every key in one Redis Cluster slot, as one script
        // needs.
        let tag = format!("{{sidejob:fleet:{budget}}}");
        let millis = |time: Duration| u64::try_from(time.as_millis()).unwrap_or(u64::MAX);
        let ledger = Ledger {
            client,
            connection: Arc::new(tokio::sync::Mutex::new(None)),
            script: Script::new(include_str!("renew.lua")),
            keys: ["meta", "nodes", "expiry", "held", "levels", "order"]
                .map(|key| format!("{tag}:{key}")),
            node: node.to_owned(),
            token: token(),
            lease_ms: millis(lease),
            refresh_ms: millis(refresh),
        };
        ledger.session().await.connection().await?;
        Ok(ledger)
    }

    /// Waits until no other call of this node is in flight; the session
    /// makes the next.
    pub(super) async fn session(&self) -> Session<'_> {
        Session {
            ledger: self,
            connection: self.connection.lock().await,
        }
    }
}

/// The node's one call in flight: the connection held until it ends.
pub(super) struct Session<'a> {
    ledger: &'a Ledger,
    connection: tokio::sync::MutexGuard<'a, Option<MultiplexedConnection>>,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("ledger", self.ledger)
            .finish_non_exhaustive()
    }
}

impl Session<'_> {
    /// The connection, made afresh if the last call failed.
    async fn connection(&mut self) -> Result<MultiplexedConnection, FleetError> {
        if let Some(connection) = self.connection.as_ref() {
            return Ok(connection.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(RESPONSE_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        let connection = self
            .ledger
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        *self.connection = Some(connection.clone());
        Ok(connection)
    }

    /// Drops the connection, so the next call connects afresh: for a call
    /// given up on before Redis answered.
    pub(super) fn reset(&mut self) {
        *self.connection = None;
    }

    /// Renews (or joins, or resizes): one script call, loaded once and
    /// loaded again by redis-rs when Redis answers `NOSCRIPT`.
    pub(super) async fn renew(
        &mut self,
        mode: Mode,
        capacity: usize,
        (want, holding): (usize, usize),
        seen: Option<Seen>,
    ) -> Result<Answer, FleetError> {
        type Reply = (String, u64, u64, u64, u64, u64, i64, u64);
        let (status, grant, target, nodes, learning, known, expiry, share): Reply = self
            .call(mode.as_str(), capacity, (want, holding), seen)
            .await?;
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let ledger = self.ledger;
        match status.as_str() {
            "capacity" => Err(FleetError::invalid(
                "capacity",
                format!("this node gave {capacity}, the budget in Redis has {known}"),
            )),
            "lease" => Err(FleetError::invalid(
                "lease",
                format!(
                    "this node gave {} ms, the budget in Redis has {known} ms",
                    ledger.lease_ms
                ),
            )),
            "late" => Err(FleetError::timed_out(
                "the call reached Redis after the lease it renews ran out",
            )),
            "refresh" => Err(FleetError::invalid(
                "refresh",
                format!(
                    "this node gave {} ms, the budget in Redis has {known} ms",
                    ledger.refresh_ms
                ),
            )),
            "owner" => Err(FleetError::invalid(
                "node",
                format!(
                    "another process holds `{}` in this budget (free in {expiry} ms at the \
                     earliest, if it stopped); each node needs its own name",
                    ledger.node
                ),
            )),
            _ => Ok(Answer {
                grant: size(grant),
                target: size(target),
                share: size(share),
                nodes: size(nodes),
                learning: learning != 0,
                capacity: size(known),
                expiry,
            }),
        }
    }

    /// Gives the node's grant back at once.
    pub(super) async fn leave(&mut self) -> Result<(), FleetError> {
        type Reply = (String, u64, u64, u64, u64, u64, i64, u64);
        let _: Reply = self.call("leave", 0, (0, 0), None).await?;
        Ok(())
    }

    async fn call<T: redis::FromRedisValue>(
        &mut self,
        mode: &str,
        capacity: usize,
        (want, holding): (usize, usize),
        seen: Option<Seen>,
    ) -> Result<T, FleetError> {
        let mut connection = self.connection().await?;
        let ledger = self.ledger;
        let mut invocation = ledger.script.prepare_invoke();
        for key in &ledger.keys {
            invocation.key(key);
        }
        let (expiry, since) = match seen {
            Some(seen) => (
                seen.expiry,
                i64::try_from(seen.since.as_millis()).unwrap_or(i64::MAX),
            ),
            None => (-1, -1),
        };
        invocation
            .arg(&ledger.node)
            .arg(&ledger.token)
            .arg(capacity)
            .arg(ledger.lease_ms)
            .arg(ledger.refresh_ms)
            .arg(want)
            .arg(holding)
            .arg(mode)
            .arg(expiry)
            .arg(since);
        let reply = invocation.invoke_async(&mut connection).await;
        if reply.is_err() {
            // Whatever went wrong (a timeout, a dropped connection, a
            // demoted primary's READONLY), the next call connects afresh.
            self.reset();
        }
        Ok(reply?)
    }
}

/// The client for `url`, trusting `tls_root` (a PEM certificate) if given;
/// a URL that does not parse names `redis_url`, a certificate that does not
/// parse names `tls_root_certificate`.
fn client(url: &str, tls_root: Option<&[u8]>) -> Result<Client, FleetError> {
    use redis::IntoConnectionInfo;
    let info = url
        .into_connection_info()
        .map_err(|error| FleetError::invalid("redis_url", error.to_string()))?;
    #[cfg(feature = "redis-tls")]
    if let Some(root) = tls_root {
        let certificates = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(root.to_vec()),
        };
        return Client::build_with_tls(info, certificates)
            .map_err(|error| FleetError::invalid("tls_root_certificate", error.to_string()));
    }
    #[cfg(not(feature = "redis-tls"))]
    let _ = tls_root; // only `FleetBuilder::tls_root_certificate` sets it
    Client::open(info).map_err(|error| FleetError::invalid("redis_url", error.to_string()))
}

/// A random token naming one `Fleet` in its node's record in the ledger.
fn token() -> String {
    let state = RandomState::new();
    let high = state.hash_one(std::time::Instant::now());
    let low = state.hash_one(std::process::id());
    format!("{high:016x}{low:016x}")
}
