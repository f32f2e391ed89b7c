//! What one fleet budget costs Redis as the fleet grows: simulated nodes
//! making the renewal call itself (the script `sidejob::fleet` runs, with a
//! node's arguments) against a real `redis-server` on a free port of
//! 127.0.0.1.
//!
//! ```text
//! cargo run --release --features redis --example fleet_scale
//! cargo run --release --features redis --example fleet_scale -- --sizes 10,100 --renewals 500
//! cargo run --release --features redis --example fleet_scale -- --slots 16 --noise 2 --churn 0
//! ```
//!
//! For each fleet size it joins every node (64 calls in flight, as nodes
//! starting at once would make them), renews for a lease untimed (past the
//! budget's first, learning, lease), then times a lease's worth of rounds
//! one after another (`--timed-rounds`), each a renewal of every node
//! spread over one second, as the nodes of a fleet with a 1 s refresh make
//! them (a lease's worth, so the refresh after a lease ends, when the
//! capped nodes' turns for the leftover slots move on, counts as often as
//! it comes): a share of the renewals (`--churn`, 20% by default) come from
//! nodes whose want moved (drawn afresh each round), so the fair share is
//! recomputed under a changing demand. `--slots` sets the budget per node
//! (8 by default, where wants drawn from 0 to 16 bind about half the time;
//! at 16 they never do), and `--noise` moves every node's demand at every
//! renewal by up to that many slots either way, as a node's peak usage
//! moves under real traffic. Each node renews as `sidejob::fleet`'s
//! renewal task does (`src/fleet/quiet.rs`, included here): quietly, with
//! plain commands, while its share stands, and by script when its want
//! moved its share or the quiet renewal finds something moved; each call
//! carries the expiry and time since its node's last answer. A node reports
//! the want `quiet::Water::reported` gives (a want that fell is kept while
//! no want is capped); `--lower-at-once` reports every want as it is, as
//! nodes did before, to compare. Each call in flight (`--in-flight`, 32)
//! has a connection of its own, which the nodes it renews for share in
//! turn: Redis reads each call alone on its connection, as it would a
//! node's, but serves 32 connections, not one a node (so its CPU for a
//! real fleet is likely higher still). It prints the
//! share of renewals that ran the script, the renewal's p50 and p99 as the
//! node sees it (sent to answered, Redis's queue and a quiet renewal that
//! led to the script included), Redis's own `usec_per_call` for the script
//! (`INFO commandstats`), Redis's time per renewal over every command (an
//! upper bound: a command a script runs counts both in the script's time
//! and in its own), and *redis busy*, the share of a Redis core the
//! budget's commands would take at a 1 s refresh (`nodes ×` that time per
//! renewal `/ 1 s`: the issue's measure); then *redis cpu*, the share of a
//! core Redis's main thread used (`INFO cpu`: its CPU a renewal over the
//! rounds, `× nodes / 1 s`), which also counts reading each call and
//! writing its answer, the part of a round trip no command's time shows;
//! *ping floor*, the same for one `PING` a renewal over as many rounds
//! paced alike (the floor of any renewal that takes a round trip at that
//! rate); and below each size's row the script calls by reason (a want
//! that moved its node's share, or what the quiet renewal found moved).
//! Its last line is `nodes N: usec_per_call X, p99 Y us, redis busy Z%`.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use redis::aio::MultiplexedConnection;
use tokio::sync::Mutex;

#[path = "../tests/support/redis_server.rs"]
#[allow(dead_code)]
mod redis_server;

#[path = "../tests/support/draw.rs"]
#[allow(dead_code)]
mod draw;

/// The quiet renewal, as a node makes it.
#[path = "../src/fleet/quiet.rs"]
#[allow(dead_code)]
mod quiet;

use draw::Draw;

const SCRIPT: &str = include_str!("../src/fleet/renew.lua");
const REFRESH_MS: u64 = 1_000;
/// Slots per node: wants are drawn around an equal share, so some nodes
/// want less than it and others are capped at the water level.
const SLOTS_PER_NODE: u64 = 8;

#[derive(Parser)]
struct Args {
    /// Fleet sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000")]
    sizes: Vec<usize>,
    /// Renewals timed per size (default: one per node, at least 1,000),
    /// spread over one second.
    #[arg(long)]
    renewals: Option<usize>,
    /// Calls in flight while the round runs (nodes renewing at once).
    #[arg(long, default_value_t = 32)]
    in_flight: usize,
    /// The budget's lease (ms). A fleet whose joins take longer than it
    /// answers `late` to renewals whose lease ran out meanwhile.
    #[arg(long, default_value_t = 10_000)]
    lease_ms: u64,
    /// The share of renewals (%) whose node's want moved since its last.
    #[arg(long, default_value_t = 20)]
    churn: u64,
    /// Another version of the script to run instead (a file), to compare:
    /// `git show <commit>:src/fleet/renew.lua > old.lua`. A script that
    /// answers no record (before quiet renewals) is called at every renewal.
    #[arg(long)]
    script: Option<std::path::PathBuf>,
    /// Times the rounds at once, from the budget's first (learning) lease
    /// on, instead of after a lease of untimed renewals.
    #[arg(long)]
    no_warm_up: bool,
    /// Rounds timed one after another (default: a lease's worth, so the
    /// figures include the refresh after a lease ends, when the capped
    /// nodes' turns for the leftover slots move on).
    #[arg(long)]
    timed_rounds: Option<u64>,
    /// Nodes report every want that fell at once, as before
    /// `quiet::Water::reported`, to compare.
    #[arg(long)]
    lower_at_once: bool,
    /// The budget's slots per node. Wants are drawn around 8 (0 to 16):
    /// at 8 the budget binds about half the time; at 16 it never does.
    #[arg(long, default_value_t = SLOTS_PER_NODE)]
    slots: u64,
    /// Noise on every node's demand at every renewal, as a node's peak
    /// usage over half a refresh moves under real traffic: its drawn want
    /// plus or minus up to this many slots.
    #[arg(long, default_value_t = 0)]
    noise: u64,
}

/// Why a renewal ran the script when its node's reported want moved its
/// share (`quiet::Water::moves`); the quiet renewal's own reasons are
/// `quiet::Verdict::Script`'s.
const MOVED: &str = "its want moved its share";

/// One simulated node's view of its last answer.
#[derive(Clone, Default)]
struct Node {
    /// Its drawn want, what it wants now (that, with noise), and what it
    /// reports (`quiet::Water::reported`).
    base: u64,
    demand: u64,
    want: u64,
    holding: u64,
    /// The expiry its last answer carried, and when it sent that call.
    seen: Option<(i64, Instant)>,
    /// What its last script answer said, the water level its last quiet
    /// renewal read, and its quiet renewals since the script.
    heard: Option<quiet::Heard>,
    water: Option<quiet::Water>,
    quiet: u64,
}

struct Budget {
    tag: String,
    keys: Vec<String>,
    capacity: u64,
    lease_ms: u64,
    script: redis::Script,
}

impl Budget {
    fn new(name: &str, capacity: u64, args: &Args) -> Budget {
        let tag = format!("{{sidejob:fleet:{name}}}");
        let keys = ["meta", "nodes", "expiry", "held", "levels", "order"]
            .iter()
            .map(|key| format!("{tag}:{key}"))
            .collect();
        let tag = tag.to_owned();
        Budget {
            tag,
            keys,
            capacity,
            lease_ms: args.lease_ms,
            script: redis::Script::new(&match &args.script {
                Some(path) => std::fs::read_to_string(path).expect("the script's file"),
                None => SCRIPT.to_owned(),
            }),
        }
    }

    /// One call of node `index`, as its renewal task makes it; the time
    /// from sending it to its answer, and whether it came too late (the
    /// lease it renews had run out: the node joins again).
    async fn call(
        &self,
        connection: &mut MultiplexedConnection,
        index: usize,
        node: &mut Node,
        mode: &str,
    ) -> (Duration, bool) {
        let mut invocation = self.script.prepare_invoke();
        for key in &self.keys {
            invocation.key(key);
        }
        let (seen, since) = match node.seen {
            Some((expiry, sent)) => (expiry, sent.elapsed().as_millis() as i64),
            None => (-1, -1),
        };
        invocation
            .arg(format!("node-{index}"))
            .arg(format!("token-{index}"))
            .arg(self.capacity)
            .arg(self.lease_ms)
            .arg(REFRESH_MS)
            .arg(node.want)
            .arg(node.holding)
            .arg(mode)
            .arg(seen)
            .arg(since);
        let sent = Instant::now();
        let mut reply: Vec<redis::Value> = invocation
            .invoke_async(connection)
            .await
            .expect("the script answers");
        // A script of an older layout (`--script`) answers no record.
        let record: String = match reply.len() {
            9 => {
                redis::from_redis_value(reply.pop().expect("nine")).expect("the record is a string")
            }
            _ => String::new(),
        };
        reply.truncate(8);
        type Reply = (String, u64, u64, u64, u64, u64, i64, u64);
        let (status, grant, target, _, _, capacity, expiry, share): Reply =
            redis::from_redis_value(redis::Value::Array(reply)).expect("the script's answer");
        let took = sent.elapsed();
        if status == "late" {
            node.seen = None;
            node.heard = None;
            return (took, true);
        }
        assert_eq!(status, "ok", "node-{index}'s {mode}");
        node.holding = target;
        node.seen = Some((expiry, sent));
        node.heard = quiet::Heard::new(
            record,
            node.want,
            (grant, target, share),
            (expiry, self.lease_ms),
            capacity,
        );
        node.quiet = 0;
        (took, false)
    }

    /// One renewal of node `index` as its renewal task makes it: quiet if
    /// it may be, by script if it may not or the quiet one says so; the
    /// time from sending to the last answer, whether it came too late, and
    /// why it ran the script, if it did.
    /// The want it reports is `quiet::Water::reported`'s for its demand
    /// (its demand itself with `lower_at_once`); holding more, it lowers
    /// what it holds first (`renewal.rs`'s `give_back`).
    async fn renew(
        &self,
        connection: &mut MultiplexedConnection,
        index: usize,
        node: &mut Node,
        lower_at_once: bool,
    ) -> (Duration, bool, Option<&'static str>) {
        let reported = |node: &Node, reported: u64| match lower_at_once {
            true => node.demand,
            false => quiet::Water::reported(node.water, reported, node.demand),
        };
        let sent = Instant::now();
        let mut why = "no answer heard yet";
        if let (Some(heard), Some((seen, at))) = (node.heard.clone(), node.seen) {
            why = MOVED;
            let want = reported(node, heard.want);
            if node.water.is_none() || !quiet::Water::moves(node.water, heard.want, want) {
                let settings = (self.lease_ms, REFRESH_MS);
                let every = quiet::hint_every(self.lease_ms, REFRESH_MS);
                let hint = (node.quiet % every == every - 1).then_some(seen);
                let (name, token) = (format!("node-{index}"), format!("token-{index}"));
                let keys = quiet::QuietKeys::new(&self.tag, &name, &token);
                let reply: quiet::QuietReply = quiet::pipeline(&keys, &name, settings, hint)
                    .query_async(connection)
                    .await
                    .expect("the quiet renewal answers");
                let since = sent.saturating_duration_since(at);
                match quiet::decide(&reply, &heard, (seen, since), &token, settings) {
                    quiet::Verdict::Renewed { expiry, water, .. } => {
                        node.seen = Some((expiry, sent));
                        node.water = Some(water);
                        node.quiet += 1;
                        let want = reported(node, heard.want);
                        if !quiet::Water::moves(node.water, heard.want, want) {
                            return (sent.elapsed(), false, None);
                        }
                    }
                    quiet::Verdict::Script {
                        expiry,
                        water,
                        why: told,
                    } => {
                        why = told;
                        node.seen = Some((expiry, sent));
                        node.water = water;
                        node.quiet += 1;
                    }
                    quiet::Verdict::Trouble { why } => panic!("node-{index}: {why}"),
                }
            }
        }
        node.want = match &node.heard {
            Some(heard) => reported(node, heard.want),
            None => node.demand,
        };
        node.holding = node.holding.min(node.want);
        let (_, late) = self.call(connection, index, node, "renew").await;
        (sent.elapsed(), late, Some(why))
    }
}

/// Redis's time since the last `CONFIG RESETSTAT` in the commands named
/// `commands` (`INFO commandstats`; `None`: every command but this
/// program's own `INFO` and `CONFIG`): their calls, and their time (µs).
/// A command a script runs counts in the script's line and in its own.
async fn command_time(
    connection: &mut MultiplexedConnection,
    commands: Option<&[&str]>,
) -> (f64, f64) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(connection)
        .await
        .expect("INFO answers");
    let (mut calls, mut usec) = (0.0, 0.0);
    for line in info.lines() {
        let Some((command, stats)) = line
            .strip_prefix("cmdstat_")
            .and_then(|line| line.split_once(':'))
        else {
            continue;
        };
        let counted = match commands {
            Some(commands) => commands.contains(&command),
            None => !command.starts_with("info") && !command.starts_with("config"),
        };
        if !counted {
            continue;
        }
        for field in stats.split(',') {
            match field.split_once('=') {
                Some(("calls", value)) => calls += value.parse::<f64>().unwrap_or(0.0),
                Some(("usec", value)) => usec += value.parse::<f64>().unwrap_or(0.0),
                _ => {}
            }
        }
    }
    (calls, usec)
}

/// The CPU time (s) of Redis's main thread so far, user and system
/// (`INFO cpu`): the commands, and reading calls and writing answers.
async fn cpu_seconds(connection: &mut MultiplexedConnection) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(connection)
        .await
        .expect("INFO answers");
    let times: Vec<f64> = info
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(field, _)| {
            matches!(
                *field,
                "used_cpu_user_main_thread" | "used_cpu_sys_main_thread"
            )
        })
        .filter_map(|(_, value)| value.trim().parse::<f64>().ok())
        .collect();
    assert_eq!(
        times.len(),
        2,
        "INFO cpu has the main thread's user and system time (Redis 7.0 or later)"
    );
    times.iter().sum()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index].as_secs_f64() * 1e6
}

async fn measure(url: &str, nodes: usize, renewals: usize, args: &Args) -> (f64, f64, f64) {
    let client = redis::Client::open(url).expect("a valid URL");
    // No response timeout: a script that takes long is what is measured.
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let mut control = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("redis-server answers");
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut control)
        .await
        .expect("FLUSHALL");
    // A connection of its own for each call in flight, which the nodes
    // share in turn: Redis reads each call alone, as it would a node's,
    // not many calls at once on one connection.
    let mut connections = Vec::new();
    for _ in 0..64.max(args.in_flight).min(nodes) {
        connections.push(
            client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .expect("redis-server answers"),
        );
    }
    let budget = Arc::new(Budget::new(
        &format!("scale-{nodes}"),
        args.slots * nodes as u64,
        args,
    ));
    let mut draw = Draw(0x9E37_79B9_7F4A_7C15 ^ nodes as u64);
    let states: Arc<Vec<Mutex<Node>>> = Arc::new(
        (0..nodes)
            .map(|_| {
                let want = draw.next() % (2 * SLOTS_PER_NODE + 1);
                Mutex::new(Node {
                    base: want,
                    demand: want,
                    want,
                    ..Node::default()
                })
            })
            .collect(),
    );

    // Every node joins, 64 calls in flight.
    let started = Instant::now();
    let mut joins = tokio::task::JoinSet::new();
    for (worker, connection) in connections.iter().enumerate().take(64.min(nodes)) {
        let (budget, states) = (Arc::clone(&budget), Arc::clone(&states));
        let mut connection = connection.clone();
        joins.spawn(async move {
            for index in (worker..nodes).step_by(64) {
                let mut node = states[index].lock().await;
                let (_, late) = budget.call(&mut connection, index, &mut node, "join").await;
                assert!(!late, "a join is never late");
            }
        });
    }
    joins.join_all().await;
    let joined = started.elapsed();

    // Renewals for a lease and a second, untimed, so the budget is past
    // its first (learning) lease; then the rounds timed.
    let mut rounds = 0;
    if !args.no_warm_up {
        let warming = Instant::now();
        while warming.elapsed() < Duration::from_millis(args.lease_ms + 1_000) {
            rounds += 1;
            round(
                &budget,
                &states,
                &connections,
                (nodes, renewals, rounds),
                args,
            )
            .await;
        }
    }
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut control)
        .await
        .expect("CONFIG RESETSTAT");
    let cpu_before = cpu_seconds(&mut control).await;
    let timed_rounds = args
        .timed_rounds
        .unwrap_or(args.lease_ms.div_ceil(REFRESH_MS))
        .max(1);
    let mut answers = Vec::new();
    for number in 1..=timed_rounds {
        answers.extend(
            round(
                &budget,
                &states,
                &connections,
                (nodes, renewals, rounds + number),
                args,
            )
            .await,
        );
    }
    let per_round = renewals;
    let renewals = answers.len();
    // Redis's main thread's CPU a renewal over the rounds, times the
    // fleet's renewals a second at a 1 s refresh: its share of a core.
    let cpu = (cpu_seconds(&mut control).await - cpu_before) / renewals as f64 * nodes as f64
        / (REFRESH_MS as f64 / 1e3)
        * 100.0;
    let late = answers.iter().filter(|(_, late, _)| *late).count();
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for why in answers.iter().filter_map(|(_, _, why)| *why) {
        match reasons.iter_mut().find(|(seen, _)| *seen == why) {
            Some((_, count)) => *count += 1,
            None => reasons.push((why, 1)),
        }
    }
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut took: Vec<Duration> = answers.into_iter().map(|(took, _, _)| took).collect();
    took.sort();
    let (scripts, script_usec) = command_time(&mut control, Some(&["evalsha", "eval"])).await;
    // Every command's time, the script's calls counted twice (in the
    // script's line and their own): an upper bound of Redis's time.
    let (_, all_usec) = command_time(&mut control, None).await;
    let per_call = if scripts > 0.0 {
        script_usec / scripts
    } else {
        0.0
    };
    let per_renewal = all_usec / renewals as f64;
    let (p50, p99) = (percentile(&took, 0.50), percentile(&took, 0.99));
    // After the commands' time is read: its `PING`s are not the fleet's.
    let floor = ping_floor(
        &mut control,
        &connections,
        (nodes, per_round, timed_rounds),
        args,
    )
    .await;
    let busy = nodes as f64 * per_renewal / (REFRESH_MS as f64 * 1e3) * 100.0;
    println!(
        "{nodes:>6} | {:>8.1} s | {renewals:>8} | {late:>5} | {:>7.1}% | {p50:>9.0} | {p99:>9.0} | {per_call:>14.1} | {per_renewal:>10.1} | {busy:>9.1}% | {cpu:>8.1}% | {floor:>9.1}%",
        joined.as_secs_f64(),
        scripts / renewals as f64 * 100.0,
    );
    if !reasons.is_empty() {
        let reasons: Vec<String> = reasons
            .iter()
            .map(|(why, count)| format!("{why} {count}"))
            .collect();
        println!("       | script calls by reason: {}", reasons.join(", "));
    }
    (per_call, p99, busy)
}

/// How `renewals` calls to the fleet's `nodes` nodes are spread over one
/// second: by how many workers (calls in flight), each calling every how
/// long.
fn pacing(args: &Args, nodes: usize, renewals: usize) -> (usize, Duration) {
    let workers = args.in_flight.min(renewals).min(nodes).max(1);
    (
        workers,
        Duration::from_secs(1).mul_f64(workers as f64 / renewals as f64),
    )
}

/// The ticks of worker `worker` of `workers`, one `every`, from `start`:
/// staggered, so the workers' calls arrive spread over the second.
fn ticks(
    start: tokio::time::Instant,
    every: Duration,
    (worker, workers): (usize, usize),
) -> tokio::time::Interval {
    let first = start + every.mul_f64(worker as f64 / workers as f64);
    let mut ticks = tokio::time::interval_at(first, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks
}

/// `renewals` renewals of the fleet's `nodes` nodes spread over one second,
/// `in_flight` at a time: how long each took, whether it came late, and
/// why it ran the script, if it did.
async fn round(
    budget: &Arc<Budget>,
    states: &Arc<Vec<Mutex<Node>>>,
    connections: &[MultiplexedConnection],
    (nodes, renewals, number): (usize, usize, u64),
    args: &Args,
) -> Vec<(Duration, bool, Option<&'static str>)> {
    let (workers, every) = pacing(args, nodes, renewals);
    let mut round = tokio::task::JoinSet::new();
    let start = tokio::time::Instant::now();
    for (worker, connection) in connections.iter().enumerate().take(workers) {
        let (budget, states) = (Arc::clone(budget), Arc::clone(states));
        let mut connection = connection.clone();
        let churn = args.churn;
        let lowers_at_once = args.lower_at_once;
        let noise = args.noise;
        round.spawn(async move {
            // Drawn afresh each round: the wants move every round.
            let mut draw = Draw(0xD1B5_4A32_D192_ED03 ^ (worker as u64 + 1) ^ (number << 32));
            let mut ticks = ticks(start, every, (worker, workers));
            let mut took = Vec::new();
            for call in (worker..renewals).step_by(workers) {
                ticks.tick().await;
                let index = (call * 7919) % nodes;
                let mut node = states[index].lock().await;
                if draw.next() % 100 < churn {
                    node.base = draw.next() % (2 * SLOTS_PER_NODE + 1);
                }
                node.demand = (node.base + draw.next() % (2 * noise + 1)).saturating_sub(noise);
                took.push(
                    budget
                        .renew(&mut connection, index, &mut node, lowers_at_once)
                        .await,
                );
            }
            took
        });
    }
    round.join_all().await.into_iter().flatten().collect()
}

/// The floor of any renewal that takes a round trip: `rounds` rounds of
/// `renewals` `PING`s, each paced as [`round`] paces the renewals, one per
/// call in flight on each connection; Redis's main thread's CPU a `PING`,
/// times the fleet's `nodes` renewals a second at a 1 s refresh.
async fn ping_floor(
    control: &mut MultiplexedConnection,
    connections: &[MultiplexedConnection],
    (nodes, renewals, rounds): (usize, usize, u64),
    args: &Args,
) -> f64 {
    let (workers, every) = pacing(args, nodes, renewals);
    let before = cpu_seconds(control).await;
    let mut pinged = 0;
    for _ in 0..rounds {
        let start = tokio::time::Instant::now();
        let mut pings = tokio::task::JoinSet::new();
        for (worker, connection) in connections.iter().enumerate().take(workers) {
            let mut connection = connection.clone();
            pings.spawn(async move {
                let mut ticks = ticks(start, every, (worker, workers));
                let mut pinged = 0;
                for _ in (worker..renewals).step_by(workers) {
                    ticks.tick().await;
                    let _: String = redis::cmd("PING")
                        .query_async(&mut connection)
                        .await
                        .expect("PING answers");
                    pinged += 1;
                }
                pinged
            });
        }
        pinged += pings.join_all().await.into_iter().sum::<usize>();
    }
    (cpu_seconds(control).await - before) / pinged.max(1) as f64 * nodes as f64
        / (REFRESH_MS as f64 / 1e3)
        * 100.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    let server = redis_server::RedisServer::start();
    println!(
        "redis-server on 127.0.0.1:{}; lease {} ms, refresh {REFRESH_MS} ms, \
         {} slots per node, churn {}%, noise {}",
        server.port, args.lease_ms, args.slots, args.churn, args.noise
    );
    println!(
        " nodes |    joined | renewals |  late | scripted | p50 (us) | p99 (us) | usec_per_call | per renewal | redis busy | redis cpu | ping floor"
    );
    let mut last = None;
    for &nodes in &args.sizes {
        let renewals = args.renewals.unwrap_or(nodes.max(1000));
        let figures = measure(&server.url(), nodes, renewals, &args).await;
        last = Some((nodes, figures));
    }
    if let Some((nodes, (per_call, p99, busy))) = last {
        println!(
            "nodes {nodes}: usec_per_call {per_call:.1}, p99 {p99:.0} us, redis busy {busy:.1}%"
        );
    }
}
