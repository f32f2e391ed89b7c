//! `fleet --nemesis SECONDS [--seed N]`: a fault campaign (#41). Four node
//! processes with `floor(0)` (the hard limit), a lease of 5 s and a
//! refresh of 500 ms (a tenth of it: the settings under which every step
//! of Redis's clock that could free a live lease is seen), under random
//! demand, reach
//! `redis-server` through a TCP proxy in this driver, while a nemesis
//! picks a fault at random every 0.2 to 2 seconds:
//!
//! * `kill -9` of a node, restarted under its name a moment later;
//! * `SIGSTOP` of a node, or of Redis, for up to two leases, then `SIGCONT`;
//! * Redis restarted empty, or killed and restarted from its last snapshot
//!   (taken at random moments before: a restore from an older state);
//! * a replica promoted before it caught up: the campaign keeps a replica
//!   of Redis (`--replicaof`), its replication link through a second proxy.
//!   That proxy delays the link by up to a lease, so the replica falls
//!   behind; then the primary is killed (`kill -9`), the link cut (the
//!   writes still on their way are lost), the replica promoted
//!   (`REPLICAOF NO ONE`) and the nodes' proxy pointed at it; a new replica
//!   of it is started for the next time;
//! * a step of Redis's wall clock, forward or back, by up to a lease, the
//!   clock kept within two leases of the real one (a preloaded shim,
//!   `tests/support/clock_shim.c`);
//! * a slow network: the proxy delays Redis's traffic by up to 800 ms for a
//!   while, or cuts every connection at once.
//!
//! Not done: a step of a node's clock. A node's leases run on the
//! monotonic clock (the time-stamp counter, through `quanta`, calibrated
//! against `CLOCK_MONOTONIC`), which a clock step does not move: an
//! administrator's or NTP's step moves the wall clock only, and the node
//! decides nothing by its wall clock. Moving the monotonic clock itself
//! would take a shim of the TSC, which no preload can do without root.
//!
//! The checker, every tick: the downstream never serves more than the
//! capacity at once (requests that reached it more than a second after
//! their admission, admitted on a valid lease by a node stopped before it
//! sent them, are counted apart: the documented case); the ledger's grants
//! never sum past the capacity (but for the same case: for four refreshes
//! after a node comes back from a stop past its lease, the permits its
//! stopped workers still held, which its first renewal reports and the
//! ledger records, are counted apart). Once the campaign ends every fault is
//! healed, and within two leases and six refreshes (a learning lease, and
//! the shares settling), plus a join's time and the last step back of
//! Redis's clock (which leaves the leases written before it that much
//! longer), every node is back to its fair share, renewing,
//! and none died (a node that exits after it joined, unkilled, is a
//! renewal task that failed). It exits with status 1 if a check fails, and
//! prints the seed to run it again.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::redis_server::{free_port, Options, RedisServer};

#[path = "../../tests/support/clock_shim.rs"]
mod clock_shim;
#[path = "../../tests/support/draw.rs"]
mod draw;
#[allow(dead_code)]
#[path = "../../tests/support/tcp_proxy.rs"]
mod tcp_proxy;

use super::{shown, signal, Downstream, NodeProcess, Run, BUDGET, BUSY, CAPACITY, TICK};
use clock_shim::ClockShim;
use draw::Draw;
use tcp_proxy::TcpProxy;

/// The campaign's lease and refresh: a refresh a tenth of a lease of 5 s,
/// the settings under which every step of Redis's clock that could free a
/// live lease is seen (`docs/operations.md`).
const LEASE: Duration = Duration::from_secs(5);
const REFRESH: Duration = Duration::from_millis(500);

/// The nodes of the campaign.
const NODES: usize = 4;
/// The demands a node is given at random.
const DEMANDS: [usize; 6] = [0, 2, 4, 8, 16, BUSY];

/// A fault in force, healed at its time.
enum Heal {
    /// A node stopped since then.
    ResumeNode(usize, Instant),
    RestartNode(usize),
    ResumeRedis,
    Network,
    /// The replica (stopped, behind) promoted in the primary's place.
    Promote,
}

/// The campaign's state beside the run.
struct Campaign {
    redis: RedisServer,
    /// A replica of `redis`, for a promotion.
    replica: RedisServer,
    /// The replica's link to `redis`.
    replication: TcpProxy,
    /// Whether the replica is falling behind, to be promoted.
    promoting: bool,
    proxy: TcpProxy,
    clock: ClockShim,
    clock_ms: i64,
    redis_stopped: bool,
    /// Faults in force, with when they are healed.
    healing: Vec<(Instant, Heal)>,
    /// Faults injected, by kind.
    counts: std::collections::BTreeMap<&'static str, usize>,
    /// Nodes killed by the nemesis (their exit is no failure).
    killed: [bool; NODES],
    stopped: [bool; NODES],
    /// Nodes that exited after joining, unkilled.
    died: Vec<String>,
    /// Joins that failed (a node restarted while Redis was away: `join`
    /// gives up after its time, as documented) and were made again.
    rejoins: usize,
}

impl Campaign {
    fn count(&mut self, kind: &'static str) {
        *self.counts.entry(kind).or_default() += 1;
    }

    fn ledger(&self) -> Option<redis::Connection> {
        if self.redis_stopped {
            return None;
        }
        let client = redis::Client::open(self.redis.url()).ok()?;
        let connection = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .ok()?;
        connection
            .set_read_timeout(Some(Duration::from_millis(500)))
            .ok()?;
        Some(connection)
    }
}

/// A replica of the primary behind `link`, with `options` (the clock
/// shim).
fn start_replica(link: &TcpProxy, options: &Options) -> RedisServer {
    let mut options = options.clone();
    options.args.extend([
        "--replicaof".to_owned(),
        "127.0.0.1".to_owned(),
        link.port.to_string(),
    ]);
    RedisServer::start_with(free_port(), options)
}

fn restart_node(run: &mut Run, proxy: &TcpProxy, i: usize) {
    let demand = run.nodes[i].demand;
    let name = run.nodes[i].name.clone();
    let port = run.downstream.port;
    run.nodes[i] = NodeProcess::start_timed(
        &proxy.url(),
        BUDGET,
        &name,
        (port, demand),
        "0",
        (LEASE, REFRESH),
    );
}

/// Runs the campaign for the seconds after `--nemesis`; returns the exit
/// status: 0 if every check passed.
pub(super) fn drive(args: &[String]) -> i32 {
    let value = |flag: &str| {
        args.iter()
            .position(|arg| arg == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|value| value.parse::<u64>().ok())
    };
    let seconds = value("--nemesis").expect("--nemesis SECONDS");
    let seed = value("--seed").unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |since| since.as_nanos() as u64)
            | 1
    });
    let mut draw = Draw(seed);
    let clock = ClockShim::build(
        &std::env::temp_dir().join(format!("sidejob-nemesis-{}", std::process::id())),
    );
    let options = Options {
        env: clock.env(),
        ..Options::default()
    };
    let redis = RedisServer::start_with(free_port(), options.clone());
    let replication = TcpProxy::start(redis.port);
    let replica = start_replica(&replication, &options);
    let proxy = TcpProxy::start(redis.port);
    let downstream = Downstream::start();
    println!(
        "nemesis for {seconds}s, seed {seed}: redis-server on 127.0.0.1:{} behind a proxy on {}, \
         downstream on {}; budget {CAPACITY}, lease {LEASE:?}, refresh {REFRESH:?}, {NODES} nodes \
         with floor 0",
        redis.port, proxy.port, downstream.port
    );
    let demands: Vec<usize> = (0..NODES)
        .map(|_| DEMANDS[draw.below(DEMANDS.len() as u64) as usize])
        .collect();
    let mut run = Run::start_at(
        &proxy.url(),
        redis.connection(),
        downstream,
        &demands,
        ("0", (LEASE, REFRESH)),
    );
    run.prompt_only = true;
    let capacity = run.capacity;
    let mut failures = Vec::new();
    let first = run.first_shares(&format!("{NODES} nodes join, demands {demands:?}"));
    if first.is_none() {
        failures.push("the shares did not settle before the campaign".to_owned());
    }
    let mut campaign = Campaign {
        redis,
        replica,
        replication,
        promoting: false,
        proxy,
        clock,
        clock_ms: 0,
        redis_stopped: false,
        healing: Vec::new(),
        counts: Default::default(),
        killed: [false; NODES],
        stopped: [false; NODES],
        died: Vec::new(),
        rejoins: 0,
    };

    let ends = Instant::now() + Duration::from_secs(seconds);
    let mut next_fault = Instant::now();
    while Instant::now() < ends {
        if run.ledger.is_none() {
            run.ledger = campaign.ledger();
        }
        run.sample();
        watch_nodes(&mut run, &mut campaign);
        heal_due(&mut run, &mut campaign, false);
        if Instant::now() >= next_fault {
            fault(&mut run, &mut campaign, &mut draw);
            next_fault = Instant::now()
                + draw.between(Duration::from_millis(200), Duration::from_millis(2000));
        }
        thread::sleep(TICK);
    }

    // Every fault healed; the clock back where it was (one more step).
    run.event("the campaign ends: every fault healed");
    heal_due(&mut run, &mut campaign, true);
    // A step back by `d` leaves the leases written before it `d` longer
    // (the design notes in `src/fleet/ledger.rs`): a dead node's share, and its name, come free
    // that much later.
    let stepped_back = Duration::from_millis(campaign.clock_ms.max(0) as u64);
    if campaign.clock_ms != 0 {
        campaign.clock_ms = 0;
        campaign.clock.step(0);
        run.event("redis-server's clock stepped back to the real one");
    }
    let bound = LEASE * 2 + REFRESH * 6 + stepped_back;
    let healed = Instant::now();
    let settled = loop {
        if run.ledger.is_none() {
            run.ledger = campaign.ledger();
        }
        run.sample();
        watch_nodes(&mut run, &mut campaign);
        let all_in = run
            .nodes
            .iter()
            .all(|node| node.joined.load(Ordering::Relaxed));
        if all_in && Run::fair(&run.nodes, capacity) {
            break Some(healed.elapsed());
        }
        // A join that failed while Redis was away is made again: a join's
        // own time (a lease and two refreshes, and one more for a failed
        // join's leave) is added to the bound.
        if healed.elapsed() > bound + LEASE + REFRESH * 3 {
            break None;
        }
        thread::sleep(TICK / 5);
    };
    run.event(&format!(
        "fair shares {} after the last fault (bound {:.1}s, a join's time added)",
        shown(settled),
        (bound + LEASE + REFRESH * 3).as_secs_f64()
    ));
    if settled.is_none() {
        let nodes: Vec<String> = run
            .nodes
            .iter()
            .map(|node| {
                let [grant, in_flight, renewals, failed] = *node.status.lock().unwrap();
                format!(
                    "{} demand {} grant {grant} in flight {in_flight} renewals {renewals} \
                     failed {failed}",
                    node.name, node.demand
                )
            })
            .collect();
        failures.push(format!(
            "the nodes did not return to their fair shares in time: {}",
            nodes.join("; ")
        ));
    }
    // Every node renews: each one's count of renewals moves on, with the
    // shares fair. Within the bound, not four refreshes only: the last heal
    // may itself refuse a node its name (a replica promoted with a ledger
    // older than a restart brings back a dead process's lease on it), and
    // such a node waits at its idle floor, its renewals refused, until that
    // lease has run out (the documented case; a CI run saw it).
    let renewals: Vec<usize> = run
        .nodes
        .iter()
        .map(|node| node.status.lock().unwrap()[2])
        .collect();
    run.watch(REFRESH * 4);
    loop {
        let stuck: Vec<String> = run
            .nodes
            .iter()
            .zip(&renewals)
            .filter_map(|(node, &before)| {
                let now = node.status.lock().unwrap()[2];
                (now <= before)
                    .then(|| format!("{} stopped renewing ({before} then {now})", node.name))
            })
            .collect();
        let fair = settled.is_none() || Run::fair(&run.nodes, capacity);
        if stuck.is_empty() && fair {
            break;
        }
        if healed.elapsed() > bound + LEASE + REFRESH * 3 {
            failures.extend(stuck);
            if !fair {
                failures.push("the shares were fair, then not again within the bound".to_owned());
            }
            break;
        }
        run.watch(REFRESH);
    }
    for name in &campaign.died {
        failures.push(format!("{name} exited after it joined, unkilled"));
    }
    println!(
        "faults: {}; joins made again after failing: {}",
        campaign
            .counts
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        campaign.rejoins
    );
    println!("seed {seed}");
    let status = run.finish(&mut failures);
    drop(campaign);
    status
}

/// Notes nodes that exited: killed (restarted at their heal), failed to
/// join (made again), or died (a failure).
fn watch_nodes(run: &mut Run, campaign: &mut Campaign) {
    for i in 0..NODES {
        if campaign.killed[i] || !run.nodes[i].alive {
            continue;
        }
        if let Ok(Some(_)) = run.nodes[i].child.try_wait() {
            if run.nodes[i].joined.load(Ordering::Relaxed) {
                let name = run.nodes[i].name.clone();
                run.event(&format!("{name} exited after it joined"));
                campaign.died.push(name);
                run.nodes[i].alive = false;
            } else {
                campaign.rejoins += 1;
                let proxy = &campaign.proxy;
                restart_node(run, proxy, i);
            }
        }
    }
}

/// Heals the faults due (all of them if `all`).
fn heal_due(run: &mut Run, campaign: &mut Campaign, all: bool) {
    let now = Instant::now();
    let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut campaign.healing)
        .into_iter()
        .partition(|(at, _)| all || *at <= now);
    campaign.healing = later;
    for (_, heal) in due {
        match heal {
            Heal::ResumeNode(i, stopped) => {
                signal(run.nodes[i].child.id(), "-CONT");
                if stopped.elapsed() > LEASE {
                    // Its workers held permits through the stop, admitted
                    // on its lease before it: its first renewal reports
                    // them, and the ledger records them while the others
                    // hold the budget (the documented case, as a request
                    // reaching the downstream late is).
                    run.ledger_excused_until = Some(Instant::now() + REFRESH * 4);
                }
                campaign.stopped[i] = false;
                run.nodes[i].alive = true;
                run.event(&format!("{} resumed (SIGCONT)", run.nodes[i].name));
            }
            Heal::RestartNode(i) => {
                let _ = run.nodes[i].child.wait();
                restart_node(run, &campaign.proxy, i);
                campaign.killed[i] = false;
                run.event(&format!("{} restarted under its name", run.nodes[i].name));
            }
            Heal::ResumeRedis => {
                signal(campaign.redis.pid(), "-CONT");
                campaign.redis_stopped = false;
                run.ledger = campaign.ledger();
                run.event("redis-server resumed (SIGCONT)");
            }
            Heal::Network => {
                campaign.proxy.delay(Duration::ZERO);
                run.event("the network is fast again");
            }
            Heal::Promote => promote(run, campaign),
        }
    }
}

/// Kills the primary and promotes the replica, behind by the writes still
/// on their way over its delayed link: the ledger goes back to what the
/// replica had.
fn promote(run: &mut Run, campaign: &mut Campaign) {
    run.ledger = None;
    let (primary, replica) = (
        replication_offset(&campaign.redis),
        replication_offset(&campaign.replica),
    );
    // kill -9, stopped or not; then the writes on their way are lost.
    campaign.redis.kill();
    campaign.replication.cut();
    campaign.replica.promote();
    campaign.proxy.retarget(campaign.replica.port);
    campaign.proxy.cut();
    campaign.replication.delay(Duration::ZERO);
    campaign.replication.retarget(campaign.replica.port);
    let options = Options {
        env: campaign.clock.env(),
        ..Options::default()
    };
    let next = start_replica(&campaign.replication, &options);
    let promoted = std::mem::replace(&mut campaign.replica, next);
    drop(std::mem::replace(&mut campaign.redis, promoted));
    // The old primary is gone, stopped or not.
    campaign.redis_stopped = false;
    campaign.promoting = false;
    campaign.count("replica promoted before it caught up");
    let behind = match (primary, replica) {
        (Some(primary), Some(replica)) => format!("{} bytes", primary - replica),
        _ => "unknown (the primary was stopped)".to_owned(),
    };
    run.event(&format!(
        "redis-server killed; its replica, behind by {behind} of replication, promoted on {}",
        campaign.redis.port
    ));
    run.ledger = campaign.ledger();
}

/// A server's replication offset (`master_repl_offset`): how much of the
/// replication stream it has made or applied. `None` if it does not answer
/// within half a second (stopped).
fn replication_offset(server: &RedisServer) -> Option<i64> {
    let client = redis::Client::open(server.url()).ok()?;
    let mut connection = client
        .get_connection_with_timeout(Duration::from_millis(500))
        .ok()?;
    connection
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut connection)
        .ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("master_repl_offset:"))
        .and_then(|offset| offset.trim().parse().ok())
}

/// Injects one fault at random.
fn fault(run: &mut Run, campaign: &mut Campaign, draw: &mut Draw) {
    let now = Instant::now();
    let i = draw.below(NODES as u64) as usize;
    let node_free = !campaign.killed[i] && !campaign.stopped[i] && run.nodes[i].alive;
    match draw.below(11) {
        0 | 1 => {
            // The demand moves (not a fault: the load the faults meet).
            let demand = DEMANDS[draw.below(DEMANDS.len() as u64) as usize];
            if node_free {
                run.nodes[i].set_demand(demand);
                run.event(&format!("{} demand {demand}", run.nodes[i].name));
            }
        }
        2 if node_free => {
            signal(run.nodes[i].child.id(), "-KILL");
            campaign.killed[i] = true;
            run.nodes[i].alive = false;
            let back = now + draw.between(Duration::ZERO, LEASE * 2);
            campaign.healing.push((back, Heal::RestartNode(i)));
            campaign.count("kill -9 node");
            run.event(&format!("{} killed (kill -9)", run.nodes[i].name));
        }
        3 if node_free => {
            signal(run.nodes[i].child.id(), "-STOP");
            campaign.stopped[i] = true;
            run.nodes[i].alive = false;
            let back = now + draw.between(Duration::from_millis(50), LEASE * 2);
            campaign.healing.push((back, Heal::ResumeNode(i, now)));
            campaign.count("stop node");
            run.event(&format!("{} stopped (SIGSTOP)", run.nodes[i].name));
        }
        4 if !campaign.redis_stopped => {
            run.ledger = None;
            signal(campaign.redis.pid(), "-STOP");
            campaign.redis_stopped = true;
            let back = now + draw.between(Duration::from_millis(50), LEASE * 2);
            campaign.healing.push((back, Heal::ResumeRedis));
            campaign.count("stop redis");
            run.event("redis-server stopped (SIGSTOP)");
        }
        5 if !campaign.redis_stopped => {
            run.ledger = None;
            if draw.below(2) == 0 {
                campaign.redis.restart_empty();
                campaign.count("redis restarted empty");
                run.event("redis-server restarted empty");
            } else {
                campaign.redis.restart_from_snapshot();
                campaign.count("redis restored from a snapshot");
                run.event("redis-server killed, restarted from its last snapshot");
            }
            run.ledger = campaign.ledger();
        }
        6 if !campaign.redis_stopped => {
            // A snapshot for a later restore: the older the state it holds,
            // the staler the ledger restored.
            if let Some(mut connection) = campaign.ledger() {
                let _ = redis::cmd("SAVE").exec(&mut connection);
                run.event("redis-server saved a snapshot");
            }
        }
        7 => {
            // Steps of up to a lease, the offset within two leases of the
            // real clock.
            let by = draw.between(Duration::from_millis(100), LEASE).as_millis() as i64;
            let limit = LEASE.as_millis() as i64 * 2;
            let step = if draw.below(2) == 0 { by } else { -by };
            campaign.clock_ms = (campaign.clock_ms + step).clamp(-limit, limit);
            campaign.clock.step(campaign.clock_ms);
            campaign.count("redis clock stepped");
            run.event(&format!(
                "redis-server's clock stepped to {:+}ms",
                campaign.clock_ms
            ));
        }
        8 => {
            let delay = draw.between(Duration::from_millis(50), Duration::from_millis(800));
            campaign.proxy.delay(delay);
            let back = now + draw.between(Duration::from_millis(500), LEASE * 2);
            campaign.healing.push((back, Heal::Network));
            campaign.count("slow network");
            run.event(&format!("the network delays Redis's traffic by {delay:?}"));
        }
        9 => {
            campaign.proxy.cut();
            campaign.count("connections cut");
            run.event("every connection to Redis cut");
        }
        10 if !campaign.promoting => {
            // The replica falls behind; the primary dies before it caught up.
            let lag = draw.between(Duration::from_millis(200), LEASE);
            campaign.replication.delay(lag);
            campaign.promoting = true;
            let at = now + draw.between(lag / 2, lag * 2);
            campaign.healing.push((at, Heal::Promote));
            run.event(&format!("redis-server's replica falls behind by {lag:?}"));
        }
        _ => {}
    }
}
