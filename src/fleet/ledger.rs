//! [`Ledger`]: the budget's state in Redis, changed only by one script
//! (`renew.lua`); a renewal that moves nothing is a quiet one, of plain
//! commands (`quiet.rs`), which changes no grant.
//!
//! # Design
//!
//! A node joins a budget with `Fleet::builder(url, budget)...join(&resource)`.
//! Its capacity is then a *grant* leased from Redis; admission stays the local
//! `Resource`'s. Every refresh the node's renewal task runs one Lua script
//! (`src/fleet/renew.lua`) on keys under one hash tag
//! (`{sidejob:fleet:<budget>}`, so one Redis Cluster slot): `meta` (the
//! budget's settings, capacity and lease; the end of a learning lease; the
//! server's time at the last call; and the running figures: the number of
//! nodes, the grants' sum, the count and sum of the wants, the water level
//! last found), `nodes` (per node one record: its want, grant, lease expiry,
//! owner token and the ledger epoch its grant belongs to), `expiry` (the
//! nodes by lease expiry, a sorted set), `levels` (a 16-ary tree of the
//! wants' counts and sums), `order` (the nodes by want, a sorted set) and,
//! during a learning lease, `held` (what each node held when it first
//! renewed). Every key expires two leases after the last call. No step
//! reads every node: a renewal costs O(log n) in the fleet's size, below.
//! The script:
//!
//! 1. reads the server's clock (`TIME`): no node's clock decides an expiry;
//! 2. checks the settings: a join whose capacity, lease or refresh differs
//!    from the budget's is told which (a resize sets the capacity; every
//!    call must have the budget's lease and refresh); a budget missing is
//!    created, and learns (below);
//! 3. decides whether the ledger may be stale, and if so starts a learning
//!    lease (below);
//! 4. outside a learning lease, forgets the nodes whose lease ran out (the
//!    first 16 due, from the `expiry` set, and its own: one expired but not
//!    yet forgotten counts as holding its grant, which only makes the others'
//!    shares smaller);
//! 5. refuses a node whose name a live lease of another token holds (two
//!    processes under one name would renew one entry and hold twice its
//!    grant). While learning, no lease is known to have ended, so a name
//!    stays held until the learning lease is over; a join refused so retries
//!    within its own time (lease + 2 refreshes), so a process restarted under
//!    its name joins once its old lease has run out, or once the learning
//!    lease its silence started has (`tests/fleet/faults/node_names.rs`). A
//!    renewing node refused so (another process took its name while it was
//!    cut off, or a ledger restored from an older snapshot, or a replica
//!    promoted late, brought back the lease of a process long dead) falls
//!    to its idle floor and renews on: its name is its own again once that
//!    lease has run out. Meanwhile what it still holds (permits taken on
//!    its grant before) is set aside under a record of its own, named by
//!    its token, want 0, so the others' grants leave those slots free and
//!    a learning lease learns them; the record goes when the node holds
//!    nothing, leaves or gets its name back, or runs out with its lease;
//! 6. records the node's want, a new expiry (now + lease) and its token;
//! 7. computes the node's fair share by water-filling over the wants: the
//!    water level is the highest `L` with `Σ min(want, L) ≤ capacity`; a
//!    node wanting at most `L` gets its want, the others `L` (Doorman's
//!    FairShare: in order of want, a node wanting at most an equal share of
//!    what is left gets it, the rest split the remainder equally). The level
//!    is found by descending `levels` (below a value `v` the wants count `c`
//!    and sum `s`; the level may be `v` while `s + v·(wanting − c)` fits),
//!    and kept in `meta` with the version of the wants it was found at: it is
//!    found again when they moved, at most once every sixteenth of the
//!    nodes' script calls or half a refresh, whichever comes first (at every
//!    call in a fleet of sixteen or fewer). What the
//!    equal shares leave over, when there are fewer slots than nodes wanting
//!    more, goes one slot each to those nodes in turns: they are ordered by
//!    want, then a hash of their names (`order`: a node's rank among them is
//!    two sorted-set lookups), and a window of as many nodes as there are slots left
//!    over moves on by that many every lease, so with `k` such nodes and `r`
//!    slots each has a turn within ⌈k / r⌉ leases (budget 10 and 11 busy
//!    nodes: ten hold one each, a different one waits each lease). A slot
//!    changing hands idles for about two renewals: the node whose turn ended
//!    gives it back at its next renewal, the next takes it at its own (an
//!    adversary measured 0.35 of 10 slots idle on average, 11 nodes, lease
//!    1.5 s, refresh 300 ms);
//! 8. sets its ledger grant to `max(holding, min(share, capacity − others'
//!    grants))` (the others' grants are the running sum less its own), where `holding` is what the node reported it may have in
//!    flight until it applies the answer (its local capacity or its usage,
//!    whichever is more). The node admits up to `min(share, grant)`. So a
//!    node that must shrink admits less at once, and the ledger takes the
//!    slots back once they are free; a node that may grow grows only into
//!    slots no other grant holds.
//!
//! **The quiet renewal** (`src/fleet/quiet.rs`). Besides its record and its
//! place in `expiry`, each node has a lease key, `lease:<node>\0<token>`,
//! which the script sets to the lease it records. A node whose want did not
//! move its share, and whose last answer left it settled, renews with one
//! pipeline of plain commands (no transaction: each read stands alone): `PEXPIRE` of its lease key (on the server's
//! clock, answering 0 if the lease is gone), `PEXPIRETIME` (the new end, the
//! expiry it sends back next), `SET alive … XX`, and reads of the budget's
//! figures and its own record; now and then a `ZADD expiry XX GT` with the
//! lease end it last knew keeps its place ahead of the clock. It changes no
//! grant. What it reads decides whether the script must run at once: a
//! record unlike the one last answered, a lease gone, or the server's time
//! since the last call unlike the node's own, send the node to the script
//! with what it knew *before* (so the script sees the writes lost and learns,
//! exactly as if the node had called it); a learning lease, a new epoch, a
//! resize, a level that moved the node's share, the turns moved on, the keys'
//! time to live half spent, or (for about sixteen nodes a refresh, chosen by
//! a hash of their token) leases due or a water level to find again, send it
//! to the script after applying the renewal. The script, in turn, takes a
//! lease's end as the later of its record's and its lease key's, and
//! forgets a node only once both have passed; `expiry` is a lower bound it
//! purges from, putting back a lease found renewed. A gap of calls is told
//! by `alive`, which every call renews (the quiet one only if it exists) and
//! which runs out `min(3 refreshes, lease − refresh)` after the last: sooner
//! than any lease a live node renews every refresh, so a ledger restored
//! from a snapshot old enough to have lost a live lease has lost `alive` too,
//! and learns before it purges. A steady fleet of 10,000 nodes costs
//! Redis's commands about 7% of a core at a 1 s refresh, where one script
//! call a node a refresh cost 66%; with a fifth of the wants moving every
//! second, 34–49% against 86%. Redis's CPU, reading the calls and writing
//! the answers counted, is about 20% for the steady fleet on the VM of
//! `docs/benchmarks.md`, where the round trips alone take 10%.
//!
//! **What a renewal costs**. A renewal by script whose node's want did not move
//! reads the settings, its node's record and the leases due, and writes its
//! record, its lease and the settings back: six or seven Redis commands,
//! whatever the fleet's size. A want that moved adds its moves in `levels`
//! (at most four increments per level of the tree, log16 of the capacity
//! levels) and one `ZADD`; a node above the water level with slots left over
//! asks its rank (two lookups); finding the level again reads one hash field
//! group per level. Every quarter lease a call audits the ledger: the keys'
//! kinds, and the records against the running figures (counts of the hashes
//! and sets), and renews the keys' time to live. The grants' running sum is
//! what bounds every grant, so a level a little stale moves targets, never
//! the bound; the level is found again at every audit whatever it says. The
//! audit keeps a timer of its own (a fleet whose nodes join and leave all the
//! time renews the keys' time to live at every call, which must not put the
//! audit off). What the audit cannot see without reading every record: the
//! grants' running total and the tree's lower blocks, edited by hand; such
//! an edit stands until the next learning lease (the total) or until the
//! ledger is forgotten (the tree). `examples/fleet_scale.rs` measures it against a real
//! redis-server: flat from 10 to 10,000 nodes (`docs/benchmarks.md`; the
//! layout it replaced, and its cost, are in `docs/benchmarks/history.md`).
//!
//! **Bad data**. A ledger whose keys hold what the script never writes
//! (a key of another kind, a value that is no count, a record that does not
//! parse) fails the call that finds it with an error reply, `CORRUPT ...`
//! (the node counts a failed renewal and keeps its lease until it ends), and
//! the whole budget is forgotten, settings included: the next call creates
//! it afresh and it learns for a lease. A ledger whose records disagree with
//! its figures (a key deleted by hand or evicted, a node of the older layout
//! at work) is found at the audit and forgotten the same way, its settings
//! kept. So bad data costs a failed call per node and a learning lease, never
//! a grant past the budget and never a budget that fails for good. A node of
//! an older layout fails its renewals against this layout (its script
//! finds `expiry` a sorted set) and falls to its floor once its lease runs
//! out; this layout forgets a ledger of the older one and learns: during a
//! rolling upgrade the newer nodes share what they hold and grow only into
//! slots given back, and the older ones keep their grants until their
//! leases end, then their floors (`floor(0)` keeps the fleet within the
//! budget throughout, as for any node cut off).
//!
//! **What a node wants** (`src/fleet/demand.rs`). The renewal task samples the
//! resource's usage and its admitted and refused counts eight times a
//! refresh; a renewal looks at the last half refresh. Unrefused, a node wants
//! its peak usage. Refusing, it wants the load it was offered, by Little's
//! law: what it held times offered over admitted (a node refusing as many
//! requests as it admits wants twice what it holds). Never less than the
//! floor set, never more than the budget.
//!
//! **What a node reports** (`Water::reported` in `src/fleet/quiet.rs`). Its
//! want, but while the water level it last read caps no want (every want
//! fits the budget), a want that fell is not reported: no node waits for
//! the slots it would free, and a peak usage moves at nearly every renewal
//! under real traffic, which would send every renewal to the script. The
//! node keeps its want, and its slots, in the ledger and renews quietly, while
//! its own capacity follows what it wants (so it admits no more than it
//! would have, had it reported its want). Once some want rises past what
//! the budget holds, the level caps it; the node reads that at its next
//! quiet renewal and reports its want as it is from then on, one refresh
//! later than before. Just before a renewal by script, a node that reports
//! less than its grant lowers its capacity to that want, so the slots it no
//! longer uses go back with that very renewal, not one later.
//!
//! **How fast shares follow demand.** A change of demand fills the half
//! refresh a node looks at, then one renewal of the node that shrinks frees
//! the slots, and one renewal of the node that grows takes them: two
//! refreshes typically, 2.5 when every claim is right, and one renewal
//! more where a small node's claim overshot (Little's law over few requests)
//! and it gives the excess back. `examples/fleet/` measures 1.0–2.0
//! refreshes (`docs/benchmarks.md`). A dead node's share is free within lease
//! + refresh.
//!
//! **What holds, always.** The ledger's grants sum to at most the capacity
//! (a grant grows only into what the others leave), but after a resize down
//! while the nodes still hold more than the new capacity: a grant never
//! falls below what its node may hold, so the ledger then records what they
//! hold (10 of 4 right after a resize from 10 to 4 with two nodes at 5), and
//! no node grows until the sum fits. A node admits at most
//! its local capacity, which is at most its ledger grant. A node joining
//! admits only its floor until its first grant, and a join that fails leaves
//! it there (`tests/fleet/faults/bounds.rs`).
//!
//! **What holds while no node stalls past its lease between an acquire and
//! its request reaching the guarded service, clocks run at rates within a
//! tenth of each other, only the nodes write the budget's keys, and Redis
//! keeps what it acknowledged or loses it in a way the ledger sees.** At
//! most `capacity` requests are in flight across the fleet, but for the
//! floors of nodes cut off alone (below). A node uses a grant until
//! `sent + lease − lease / 10`, where `sent` is when it sent the renewal that
//! brought it; the ledger frees it at the script's time + lease, later
//! (property tests in `src/fleet/renewal.rs` check this for node clocks
//! running from a tenth slower to three times faster than the server's,
//! whatever the delays and lost answers, and that a clock slower than that
//! can outlive the ledger). A node that cannot renew falls to its floor at
//! that deadline; the permits it still holds then are on no lease: a
//! request admitted before a node was cut off and lasting past its lease
//! is one the ledger, which cannot tell a node cut off from a dead one,
//! no longer counts (a review held 15 of 10 so, permits of 4 s under a
//! lease of 1.5 s, `floor(0)`): a hard limit needs requests shorter than
//! the lease. A node that leaves or is dropped lowers its capacity to the
//! floor set (0 by default) at once, and its renewal task keeps renewing
//! with its usage as both its want and what it holds until the permits
//! above that floor are back, then deletes its grant: the ledger never hands
//! out a slot still in use (`tests/fleet/faults/drain.rs`).
//!
//! **The floor, and what it costs.** By default a node cut off past its lease
//! falls to its *safe share*, the capacity over the nodes it saw at its last
//! renewal (Doorman's safe capacity): a fleet that loses Redis all at once
//! (Redis down, stopped, restarted, failing over) keeps serving, and the
//! safe shares sum to at most the capacity (`tests/fleet/faults/outage.rs`;
//! the example's Redis stop shows 8/8 of 16). What it costs: a node cut off
//! *alone* (a partition, a process or VM stopped past its lease) keeps its
//! safe share while the ledger frees its grant and the others grow into it,
//! so the fleet can exceed the budget by the safe shares of the nodes cut
//! off, and a node's safe share counts the nodes of its last renewal (a node
//! that joined since is not counted). `floor(0)` is the hard limit: a node
//! cut off admits nothing (the example's `--paused-node` scenario runs so).
//!
//! **A node stopped past its lease** (`SIGSTOP`, a VM pause) resumes every
//! thread at once, and its request threads would admit on its stale grant
//! before its renewal task ran. So the grant is set with
//! `CapacityLease::set_until(grant, deadline, floor)`: every acquire of
//! such a resource that could admit reads a clock before it admits (the
//! kernel's coarse one while the deadline is over a second away, as it is
//! between renewals, about 4 ns and hidden by the admission's own CAS; the
//! time-stamp counter within that second), and the first one past the
//! deadline lowers the capacity to the floor itself, under a lock, after
//! checking the deadline again (loom model (y): a renewal racing it is never
//! undone). What no check can cover: a thread stopped between its check and
//! its CAS admits once on resuming, and a permit admitted before the stop is
//! held through it: a request admitted just before the stop and sent after it
//! reaches the service on no lease at all (one CI run of the example below
//! saw 18 of 16 so, two permits that waited for a worker when the node
//! stopped). A service that must never see more than the budget needs a
//! fence of its own (a lease token it checks). `examples/fleet --paused-node`
//! (floor 0) stops a busy node until the other holds the whole
//! budget and resumes it: the downstream never serves more than the budget
//! of the requests that reached it within a second of their admission, and
//! counts the late ones apart; without the check it served 17 to 24 of 16
//! (21 in a later run, none of them late).
//!
//! **A ledger that may be stale learns.** For one *learning* lease
//! (Doorman's), the nodes that have not renewed since may hold grants the
//! ledger does not show. All grants summed to at most the capacity before,
//! so the grants are dropped (a new epoch voids them) and the nodes that
//! have renewed share what they held when they first renewed (the `held`
//! hash), within the capacity: a node keeps what it holds and grows only
//! into slots another known node gave back, the unknown remainder is never
//! handed out, and no lease is purged, so every live node renews once within
//! it. (Within the capacity: right after a resize down what the nodes held
//! sums past it; bounded by their holdings alone, a node joining then got a
//! share while the others still held theirs, 133 of 100.) A `held` that lost
//! or gained a record starts the learning over. The script starts one when:
//!
//! * `meta` is missing: a budget never seen, or one that expired, Redis
//!   restarted empty, flushed, or evicting (so a budget's very first lease is
//!   a learning one, and the first nodes' `join` waits up to a lease for
//!   their grants). A leave never creates `meta`: it only deletes the node's
//!   entries (`tests/fleet/faults/ledger_lost.rs`, where a leave after a
//!   `FLUSHALL` had set the capacity to 0 for good);
//! * the server's clock is behind the last script call's (a step back), or
//!   no call came for `alive`'s time (at most three refreshes, less than the
//!   lease less a refresh) while leases are recorded: a restore from a
//!   snapshot (RDB or AOF), a replica promoted late, Redis stopped, or a
//!   step ahead (a `SAVE` while one node held the budget, then a restart
//!   from it: without this 15 of 10 were held);
//! * a node's record is not the one the node was last answered with (every
//!   answer carries the expiry it wrote, and the node sends it back): writes
//!   lost in a failover or a restore; or the server time since the node's
//!   last call differs from the node's own elapsed time by more than a
//!   refresh: a step of the server's clock. `tests/fleet/faults/clock_step.rs`
//!   steps redis-server's wall clock 2 s ahead, then back, with a preloaded
//!   shim (`tests/support/clock_shim.c`): the ledger learns and no live lease
//!   is freed (before, a 3 s step held 15 of 10).
//!
//! What is left: a step ahead smaller than that tolerance is not seen, and
//! eats into the nodes' margin (a tenth of the lease); keep the refresh at
//! most a tenth of the lease (the default), and the lease at 5 s or more,
//! and every step that could free a live lease is seen. Before any
//! call, a node whose grant's deadline has passed falls to its floor and
//! sends nothing to compare: a process stopped past its lease, whose record
//! the ledger rightly freed meanwhile, does not make it learn (an adversary
//! test saw 15 of 10 held so, when the resumed node's renewal ran before its
//! request threads and reported its stale grant as held). A node's call that got no answer sends nothing to compare,
//! so a write lost just then is seen at the node's next answered call. A
//! step back by `d` leaves the leases written before it `d` longer in the
//! ledger: a dead node's share, and its name, come free that much later
//! (safe: the slots stay taken). A learning lease never lasts more than a
//! lease from the call that reads it, so one started on a clock since stepped
//! back ends a lease after the step is seen, not `d` later (the fault
//! campaign, `examples/fleet --nemesis`, found it: its shares stayed frozen
//! for the step's length after a step back of 24 s).
//!
//! **A call that arrives late changes nothing.** A node's call can reach
//! the script long after it was sent: held by a partition (the kernel keeps
//! retransmitting it), or queued behind a stalled Redis. If the lease it
//! renews has run out by then (the expiry the node sends back is past on
//! the server's clock), the node has stopped using it, and what the call
//! reports holding is stale: the script answers `late` and writes nothing.
//! Before, such a renewal made the ledger learn and record the old holding
//! as known, and a node cut off by a partition came back to 15 of 10 held
//! with `floor(0)` (`tests/fleet/faults/partition.rs`, a proxy that holds
//! the bytes and delivers them on healing).
//!
//! **What a Redis failover can still break.** Replication is asynchronous: a
//! replica promoted before it received the last scripts' effects has older
//! grants and expiries. The first node to renew whose own record survived
//! can then be given slots another node still uses, until that node renews
//! (at most a refresh) and its record, not the one it was answered with,
//! starts a learning lease; where the writes lost and the failover took more
//! than three refreshes, the gap starts one at the first call. So the fleet
//! can exceed the budget by what the lost writes had moved, for up to a
//! refresh, only in a failover faster than three refreshes. `WAIT` would
//! narrow this, not close it. A demoted primary behind the same address (a
//! virtual IP, a DNS name, a proxy) answers `READONLY`: every failed call
//! drops its connection, so the next one reaches the new primary
//! (`tests/fleet/faults/failover.rs`, two redis-servers behind a TCP proxy).
//!
//! **Bounds.** A node makes one call of the script at a time (the renewal
//! task's and `set_capacity`'s wait for each other), so its calls run in the
//! order it numbers them and are applied in that order: a slow renewal never
//! undoes a resize. Its connection has a 500 ms connect and response
//! timeout and no retries of its own: each call that fails drops it, and the
//! next call (a refresh later) connects afresh, so a Redis that is down is
//! tried once a refresh. `join` reports the first connection error as it is
//! (refused, a wrong password) and takes at most lease + 2 refreshes in all,
//! and a refresh more when it fails after a call that may have registered
//! the node: it gives that entry back before it returns, so a process that
//! exits on the error and is started again finds its name free;
//! `set_capacity` gives up after 500 ms, a reconnect included. A `Fleet`
//! dropped as its runtime shuts down loses its renewal task with the
//! runtime: its grant runs out with its lease instead of going back at once.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, Script};

use super::quiet::{self, Heard, QuietKeys, QuietReply};
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
    quiet_keys: QuietKeys,
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
    /// What a quiet renewal checks, from `answer`, with the `record` the
    /// script wrote, to a call that reported `want`; `None` if the record
    /// could not be read.
    pub(super) fn heard(&self, answer: &Answer, record: String, want: usize) -> Option<Heard> {
        let size = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Heard::new(
            record,
            size(want),
            (size(answer.grant), size(answer.target), size(answer.share)),
            (answer.expiry, self.lease_ms),
            size(answer.capacity),
        )
    }

    /// The node's token, the lease and the refresh (ms).
    pub(super) fn quiet_settings(&self) -> (&str, (u64, u64)) {
        (&self.token, (self.lease_ms, self.refresh_ms))
    }

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
        let token = token();
        let ledger = Ledger {
            client,
            connection: Arc::new(tokio::sync::Mutex::new(None)),
            script: Script::new(include_str!("renew.lua")),
            keys: ["meta", "nodes", "expiry", "held", "levels", "order"]
                .map(|key| format!("{tag}:{key}")),
            quiet_keys: QuietKeys::new(&tag, node, &token),
            node: node.to_owned(),
            token,
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

    /// A quiet renewal (see [`quiet`]), raising the node's place in
    /// `expiry` to `hint` if given.
    pub(super) async fn quiet(&mut self, hint: Option<i64>) -> Result<QuietReply, FleetError> {
        let mut connection = self.connection().await?;
        let ledger = self.ledger;
        let pipe = quiet::pipeline(
            &ledger.quiet_keys,
            &ledger.node,
            (ledger.lease_ms, ledger.refresh_ms),
            hint,
        );
        let reply = pipe.query_async(&mut connection).await;
        if reply.is_err() {
            self.reset();
        }
        Ok(reply?)
    }

    /// Drops the connection, so the next call connects afresh: for a call
    /// given up on before Redis answered.
    pub(super) fn reset(&mut self) {
        *self.connection = None;
    }

    /// Renews (or joins, or resizes): one script call, loaded once and
    /// loaded again by redis-rs when Redis answers `NOSCRIPT`; the answer,
    /// and the node's record as the script wrote it.
    pub(super) async fn renew(
        &mut self,
        mode: Mode,
        capacity: usize,
        (want, holding): (usize, usize),
        seen: Option<Seen>,
    ) -> Result<(Answer, String), FleetError> {
        type Reply = (String, u64, u64, u64, u64, u64, i64, u64, String);
        let (status, grant, target, nodes, learning, known, expiry, share, record): Reply = self
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
            _ => Ok((
                Answer {
                    grant: size(grant),
                    target: size(target),
                    share: size(share),
                    nodes: size(nodes),
                    learning: learning != 0,
                    capacity: size(known),
                    expiry,
                },
                record,
            )),
        }
    }

    /// Gives the node's grant back at once.
    pub(super) async fn leave(&mut self) -> Result<(), FleetError> {
        type Reply = (String, u64, u64, u64, u64, u64, i64, u64, String);
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
