//! [`FleetBuilder`]: a node's settings for joining a fleet's budget.

use std::sync::Arc;
use std::time::Duration;

use super::{Fleet, FleetError};
use crate::Resource;

/// Configures a node's place in a fleet; made by [`Fleet::builder`].
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let resource = Arc::new(sidejob::Resource::new(1));
/// let fleet = sidejob::fleet::Fleet::builder("redis://127.0.0.1:6379", "orders-db")
///     .capacity(500) // across every node
///     .lease(Duration::from_secs(10))
///     .refresh(Duration::from_secs(1))
///     .join(&resource)
///     .await?;
/// assert_eq!(resource.capacity(), fleet.grant());
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `join` is called"]
pub struct FleetBuilder {
    pub(super) url: String,
    pub(super) budget: String,
    pub(super) capacity: Option<usize>,
    pub(super) lease: Duration,
    pub(super) refresh: Duration,
    pub(super) floor: Option<usize>,
    pub(super) node: Option<String>,
    /// A certificate (PEM) to trust for `rediss://` beside the system's.
    pub(super) tls_root: Option<Vec<u8>>,
}

impl std::fmt::Debug for FleetBuilder {
    /// Every setting; the URL without its password, the root certificate
    /// by its length only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetBuilder")
            .field("url", &without_password(&self.url))
            .field("budget", &self.budget)
            .field("capacity", &self.capacity)
            .field("lease", &self.lease)
            .field("refresh", &self.refresh)
            .field("floor", &self.floor)
            .field("node", &self.node)
            .field(
                "tls_root",
                &self
                    .tls_root
                    .as_ref()
                    .map(|pem| format!("{} bytes", pem.len())),
            )
            .finish()
    }
}

impl FleetBuilder {
    pub(super) fn new(url: &str, budget: &str) -> Self {
        FleetBuilder {
            url: url.to_owned(),
            budget: budget.to_owned(),
            capacity: None,
            lease: Duration::from_secs(10),
            refresh: Duration::from_secs(1),
            floor: None,
            node: None,
            tls_root: None,
        }
    }

    /// Trusts the certificate authority `pem` (a PEM-encoded certificate)
    /// for a `rediss://` URL, instead of the system's roots: for a Redis
    /// whose certificate a private authority signed. Without it, a
    /// `rediss://` URL verifies Redis's certificate against the system's
    /// roots (OpenSSL's, so `SSL_CERT_FILE` applies).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo() -> std::io::Result<()> {
    /// let builder = sidejob::fleet::Fleet::builder("rediss://redis.internal:6380", "api")
    ///     .capacity(64)
    ///     .tls_root_certificate(std::fs::read("/etc/redis/ca.pem")?);
    /// # let _ = builder; Ok(()) }
    /// ```
    #[cfg(feature = "redis-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis-tls")))]
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_root = Some(pem.into());
        self
    }

    /// The budget: the most slots held across every node. Required; every
    /// node of the budget must give the same (see [`Fleet::set_capacity`]
    /// to change it).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = sidejob::fleet::Fleet::builder("redis://127.0.0.1", "api").capacity(64);
    /// # let _ = builder;
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// How long a grant lasts without a renewal. Default 10 s. Every node
    /// of a budget has the same: a join with another is refused naming
    /// `lease`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let builder = sidejob::fleet::Fleet::builder("redis://127.0.0.1", "api")
    ///     .lease(Duration::from_secs(30));
    /// # let _ = builder;
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How often the node renews, under a third of the lease. Default 1 s.
    /// Every node of a budget renews at the same pace (the ledger tells a
    /// silence of three refreshes from it): a join with another is refused
    /// naming `refresh`. At most a tenth of the lease (the default), every
    /// step of Redis's clock that could free a live lease is seen.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let builder = sidejob::fleet::Fleet::builder("redis://127.0.0.1", "api")
    ///     .refresh(Duration::from_millis(500));
    /// # let _ = builder;
    /// ```
    pub fn refresh(mut self, refresh: Duration) -> Self {
        self.refresh = refresh;
        self
    }

    /// What the node keeps once it could not renew past its lease, and
    /// admits while it is not in the budget (joining, after a failed join,
    /// leaving, dropped); also the least it wants.
    ///
    /// By default a node cut off from Redis past its lease falls to its
    /// *safe share*, the capacity over the nodes it saw at its last
    /// renewal (Doorman's safe capacity), and admits nothing while out of
    /// the budget: a fleet that loses Redis all at once (Redis down,
    /// stopped, failing over) keeps serving within the budget. The cost in
    /// strictness: a node cut off *alone* (a partition, a process stopped
    /// past its lease) keeps its safe share while the others' grants grow
    /// into the slots the ledger freed, so the fleet can exceed the budget
    /// by the safe shares of the nodes cut off. Set `floor(0)` where the
    /// budget is a hard limit: a node cut off admits nothing. Above 0, the
    /// fleet may exceed the budget by the floors of the nodes cut off.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = sidejob::fleet::Fleet::builder("redis://127.0.0.1", "api").floor(2);
    /// # let _ = builder;
    /// ```
    pub fn floor(mut self, floor: usize) -> Self {
        self.floor = Some(floor);
        self
    }

    /// The node's name in the budget, unique across the fleet. Default:
    /// the host name, the process id and a random suffix. A join under a
    /// name whose lease another process holds is refused (a
    /// [`FleetError::Setting`] naming `node`): two processes under one
    /// name would renew one ledger entry and hold twice its grant. A
    /// process restarted under its old name joins once the old lease has
    /// run out (or at once, if the old one left).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = sidejob::fleet::Fleet::builder("redis://127.0.0.1", "api").node("web-3");
    /// # let _ = builder;
    /// ```
    pub fn node(mut self, node: &str) -> Self {
        self.node = Some(node.to_owned());
        self
    }

    /// Joins the budget with `resource`: lowers the resource's capacity to
    /// the floor set (0 by default) at once, registers the node, waits for
    /// its first grant, sets the resource's capacity to it, and spawns the
    /// renewal task on the current tokio runtime. The whole join, a
    /// connection included, takes at most lease + 2 refreshes (one that
    /// fails after a call may have registered the node, a refresh more to
    /// give its name back: see `# Errors`): a budget's
    /// first lease (and a learning one) grants nothing new, and a full
    /// budget gives way within two refreshes. Where the budget has fewer
    /// slots than nodes, a node whose turn has not come joins with a grant
    /// of 0 (the turns rotate every lease; [`Fleet::on_grant`] tells it).
    ///
    /// # Errors
    ///
    /// A [`FleetError::Setting`] naming `capacity` (unset, above 2²⁴ − 1,
    /// or unlike the budget's in Redis), `lease` (zero, or unlike the
    /// budget's in Redis), `refresh` (zero, not under a third of the
    /// lease, or unlike the budget's in Redis), `floor` (above the capacity), `redis_url` (unparsable, or a
    /// scheme this build cannot connect with: `rediss://` needs the feature
    /// `redis-tls`), `tls_root_certificate` (no PEM certificate), `node` (another process holds that name's lease
    /// in the budget), or `resource` (an adaptive one: it sets its own
    /// capacity); [`FleetError::Redis`] with the first error as Redis gave
    /// it (refused, a wrong password, no answer in time);
    /// [`FleetError::NoGrant`] if no grant came in time. After an error
    /// found in Redis, the resource is left at the floor, and the join
    /// gives back the name it may have registered before it returns (a
    /// refresh more at most), so a process that exits on the error and is
    /// started again finds its name free, unless Redis did not answer that
    /// in time either: then the name is held until its lease runs out.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it completes leaves at most a lease in
    /// the ledger, which runs out, and the resource at the floor; nothing
    /// is spawned until it completes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), sidejob::fleet::FleetError> {
    /// let resource = std::sync::Arc::new(sidejob::Resource::new(1));
    /// let fleet = sidejob::fleet::Fleet::builder("redis://127.0.0.1:6379", "api")
    ///     .capacity(64)
    ///     .join(&resource)
    ///     .await?;
    /// # let _ = fleet; Ok(()) }
    /// ```
    pub async fn join(self, resource: &Arc<Resource>) -> Result<Fleet, FleetError> {
        let capacity = self.checked()?;
        Fleet::join(self, capacity, Arc::clone(resource)).await
    }

    /// The capacity, once every setting is checked.
    fn checked(&self) -> Result<usize, FleetError> {
        let capacity = self
            .capacity
            .ok_or_else(|| FleetError::invalid("capacity", "required"))?;
        crate::admission::check_capacity(capacity)
            .map_err(|_| FleetError::invalid("capacity", "must be at most 2^24 - 1"))?;
        if self.lease.is_zero() {
            return Err(FleetError::invalid("lease", "must be above zero"));
        }
        if self.refresh.is_zero() || self.refresh * 3 >= self.lease {
            return Err(FleetError::invalid(
                "refresh",
                format!(
                    "must be above zero and under a third of the lease ({:?}), was {:?}",
                    self.lease, self.refresh
                ),
            ));
        }
        if let Some(floor) = self.floor.filter(|&floor| floor > capacity) {
            return Err(FleetError::invalid(
                "floor",
                format!("must be at most the capacity ({capacity}), was {floor}"),
            ));
        }
        if self.budget.is_empty() {
            return Err(FleetError::invalid("budget", "must not be empty"));
        }
        Ok(capacity)
    }
}

/// `url` with the password in its user information (`redis://user:pw@host`)
/// replaced by `***`, for `Debug`.
fn without_password(url: &str) -> std::borrow::Cow<'_, str> {
    let Some(scheme_end) = url.find("://").map(|at| at + 3) else {
        return url.into();
    };
    let authority_end = url[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |at| scheme_end + at);
    let authority = &url[scheme_end..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.into();
    };
    match authority[..at].find(':') {
        Some(colon) => format!(
            "{}***{}",
            &url[..scheme_end + colon + 1],
            &url[scheme_end + at..]
        )
        .into(),
        None => url.into(),
    }
}
