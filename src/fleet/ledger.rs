//! [`Ledger`]: the budget's state in Redis, changed only by one script
//! (`renew.lua`), one call per node per refresh.

use redis::aio::ConnectionManager;
use redis::Script;

use super::FleetError;

/// What a renewal (or a join, or a resize) answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Answer {
    /// The slots the ledger gives the node: at least what it may still hold.
    pub(super) grant: usize,
    /// The slots the node should admit up to: its fair share, within the
    /// grant (below it while the node gives back what it holds).
    pub(super) target: usize,
    /// The nodes holding a lease.
    pub(super) nodes: usize,
    /// Whether the budget is learning after an empty start.
    pub(super) learning: bool,
    /// The budget's capacity.
    pub(super) capacity: usize,
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

/// One node's handle on a budget's keys. Cheap to clone: the connection is
/// redis-rs's `ConnectionManager`, which reconnects by itself.
#[derive(Clone)]
pub(super) struct Ledger {
    connection: ConnectionManager,
    script: Script,
    keys: [String; 5],
    node: String,
    lease_ms: u64,
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
    /// Connects to `url` for `budget`'s keys, as `node`.
    pub(super) async fn connect(
        url: &str,
        budget: &str,
        node: &str,
        lease_ms: u64,
    ) -> Result<Ledger, FleetError> {
        let client = redis::Client::open(url)
            .map_err(|error| FleetError::invalid("redis_url", error.to_string()))?;
        let connection = ConnectionManager::new(client).await?;
        // One hash tag: every key in one Redis Cluster slot, as one script
        // needs.
        let tag = format!("{{sidejob:fleet:{budget}}}");
        Ok(Ledger {
            connection,
            script: Script::new(include_str!("renew.lua")),
            keys: ["meta", "grants", "wants", "expiry", "learned"]
                .map(|key| format!("{tag}:{key}")),
            node: node.to_owned(),
            lease_ms,
        })
    }

    /// Renews (or joins, or resizes): one script call, loaded once and
    /// re-sent by redis-rs when Redis answers `NOSCRIPT`.
    pub(super) async fn renew(
        &mut self,
        mode: Mode,
        capacity: usize,
        want: usize,
        holding: usize,
    ) -> Result<Answer, FleetError> {
        let (status, grant, target, nodes, learning, known): (String, u64, u64, u64, u64, u64) =
            self.call(mode.as_str(), capacity, want, holding).await?;
        if status == "capacity" {
            return Err(FleetError::invalid(
                "capacity",
                format!("this node gave {capacity}, the budget in Redis has {known}"),
            ));
        }
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok(Answer {
            grant: size(grant),
            target: size(target),
            nodes: size(nodes),
            learning: learning != 0,
            capacity: size(known),
        })
    }

    /// Gives the node's grant back at once.
    pub(super) async fn leave(&mut self) -> Result<(), FleetError> {
        let _: (String, u64, u64, u64, u64, u64) = self.call("leave", 0, 0, 0).await?;
        Ok(())
    }

    async fn call<T: redis::FromRedisValue>(
        &mut self,
        mode: &str,
        capacity: usize,
        want: usize,
        holding: usize,
    ) -> Result<T, FleetError> {
        let mut invocation = self.script.prepare_invoke();
        for key in &self.keys {
            invocation.key(key);
        }
        invocation
            .arg(&self.node)
            .arg(capacity)
            .arg(self.lease_ms)
            .arg(want)
            .arg(holding)
            .arg(mode);
        Ok(invocation.invoke_async(&mut self.connection).await?)
    }
}
