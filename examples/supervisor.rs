//! Supervisor demo: request-scoped "FSM" children under a [`sidejob::Supervisor`],
//! the way Riak runs its get/put coordinators.
//!
//! Several request threads each try to start a short-lived coordinator child
//! (it "works" for a few ms, polling `ctx.wait_cancelled` in small steps) at a
//! rate well above what the capacity allows. The demo shows that
//!
//! * the number of live children never exceeds the capacity: a spawn past the
//!   limit fails at once with `SpawnError::Overload`, handing the closure back;
//!   the request retries it once after a short pause, then drops it and
//!   answers "busy";
//! * one child in `--panic-every` panics on purpose: the panic is caught and
//!   reported through its handle (a quiet panic hook hides these), and counted;
//! * every 16th child is detached (its handle dropped): it is still tracked,
//!   counted and waited for;
//! * `set_capacity` takes effect at once: a third of the way through, the
//!   capacity is halved for a while (the live count drains down to it) and
//!   then restored;
//! * `shutdown(grace)` cancels a cooperative child at once, while an
//!   uncooperative one outlives the grace period, is reported as remaining,
//!   and stays tracked until it ends; a spawn after shutdown gets `Closed`.
//!
//! It ends with `stats()` and checks the bookkeeping: peak live <= capacity,
//! spawned == finished once everything is joined, every deliberate panic was
//! counted, and spawned + rejected + closed + spawn_failed == attempts.
//!
//! ```text
//! cargo run --release --example supervisor
//! cargo run --release --example supervisor -- --spawners 2 --capacity 4 --duration 1
//! cargo run --release --example supervisor -- --help
//! ```

use std::ops::Add;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

use clap::error::ErrorKind;
use clap::{value_parser, CommandFactory, Parser};
use sidejob::{ChildContext, ChildHandle, ChildId, ChildPanicked, ShutdownReport, SpawnError};
use sidejob::{Supervisor, SupervisorStats};

/// Command-line settings of the demo.
#[derive(Debug, Parser)]
#[command(
    name = "supervisor",
    about = "Request-scoped children under a sidejob::Supervisor"
)]
struct Cli {
    /// Most children alive at once (at least 2, for the shutdown demo).
    #[arg(long, default_value_t = 32, value_name = "N",
          value_parser = value_parser!(u32).range(2..=100_000))]
    capacity: u32,
    /// Shards of the supervisor [default: the number of CPUs].
    #[arg(long, value_name = "N")]
    shards: Option<usize>,
    /// Request threads spawning children.
    #[arg(long, default_value_t = 8, value_name = "N",
          value_parser = value_parser!(u16).range(1..=1024))]
    spawners: u16,
    /// How long the requests keep coming, in seconds (`3`, `0.5`).
    #[arg(long, default_value = "3", value_name = "SECONDS", value_parser = parse_seconds)]
    duration: Duration,
    /// Average work of one child in milliseconds (each takes 50% to 150% of it).
    #[arg(long = "work-ms", default_value_t = 5, value_name = "MS",
          value_parser = value_parser!(u64).range(1..=10_000))]
    work_ms: u64,
    /// One child in N panics on purpose (0: never).
    #[arg(long = "panic-every", default_value_t = 50, value_name = "N")]
    panic_every: u64,
}

/// Parses `--duration`: a positive number of seconds, at most an hour.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    if !(seconds > 0.0 && seconds <= 3600.0) {
        return Err("must be more than 0 and at most 3600 seconds".into());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Pause between two requests of one request thread.
const THINK: Duration = Duration::from_micros(500);
/// Pause before retrying a refused spawn once.
const RETRY_AFTER: Duration = Duration::from_millis(1);
/// Step in which a child polls for cancellation while it works.
const POLL: Duration = Duration::from_millis(1);
/// Grace period given to `shutdown`.
const GRACE: Duration = Duration::from_millis(250);
/// Every this many successful spawns, the request detaches the child.
const DETACH_EVERY: u64 = 16;
/// The payload prefix of deliberate panics, which the panic hook keeps quiet.
const DELIBERATE_PREFIX: &str = "deliberate panic";

/// Children running right now, counted by the children themselves: a witness
/// that can never be above what the supervisor admitted.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
/// The most children seen running at once.
static RUNNING_PEAK: AtomicUsize = AtomicUsize::new(0);
/// Deliberate panics raised by children.
static DELIBERATE: AtomicU64 = AtomicU64::new(0);

/// Counts a child in [`RUNNING`] for as long as it lives, panics included.
struct Running;

impl Running {
    fn enter() -> Running {
        RUNNING_PEAK.fetch_max(RUNNING.fetch_add(1, SeqCst) + 1, SeqCst);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, SeqCst);
    }
}

/// How a coordinator child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    Done,
    Cancelled,
}

/// A simulated get/put coordinator: works for `work`, polling for
/// cancellation in small steps, and panics half-way through when `poison`.
fn coordinator(ctx: &ChildContext, work: Duration, poison: bool) -> Reply {
    let _running = Running::enter();
    let start = Instant::now();
    while let Some(left) = work.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) {
        if poison && start.elapsed() >= work / 2 {
            DELIBERATE.fetch_add(1, SeqCst);
            panic!("{DELIBERATE_PREFIX} in {}", ctx.id());
        }
        if ctx.wait_cancelled(left.min(POLL)) {
            return Reply::Cancelled;
        }
    }
    Reply::Done
}

/// What the request threads saw.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// Calls to `spawn`, retries included.
    attempts: u64,
    spawned: u64,
    /// Spawned on the retry after a first refusal.
    retried_ok: u64,
    /// Refused twice (or closed, or no thread): answered "busy".
    busy: u64,
    /// Handles dropped right after the spawn.
    detached: u64,
    /// Joined children that replied, or panicked on purpose.
    done: u64,
    panicked: u64,
}

impl Add for Tally {
    type Output = Tally;
    fn add(self, o: Tally) -> Tally {
        Tally {
            attempts: self.attempts + o.attempts,
            spawned: self.spawned + o.spawned,
            retried_ok: self.retried_ok + o.retried_ok,
            busy: self.busy + o.busy,
            detached: self.detached + o.detached,
            done: self.done + o.done,
            panicked: self.panicked + o.panicked,
        }
    }
}

impl Tally {
    /// Records a joined child's outcome.
    fn joined(&mut self, outcome: Result<Reply, ChildPanicked>) {
        match outcome {
            Ok(_) => self.done += 1,
            Err(panic) if panic.message().starts_with(DELIBERATE_PREFIX) => self.panicked += 1,
            Err(panic) => eprintln!("unexpected child failure: {panic}"),
        }
    }
}

/// One request thread: spawns coordinators until `stop`, then joins its children.
fn requests(sup: &Supervisor, index: u64, cli: &Cli, stop: &AtomicBool) -> Tally {
    let mut tally = Tally::default();
    let mut handles: Vec<ChildHandle<Reply>> = Vec::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64.wrapping_mul(index + 1);
    while !stop.load(SeqCst) {
        // xorshift: 50% to 150% of --work-ms, in microseconds.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let work = Duration::from_micros(cli.work_ms * (500 + seed % 1001));
        let poison = cli.panic_every > 0 && seed.is_multiple_of(cli.panic_every);
        let mut child = move |ctx: &ChildContext| coordinator(ctx, work, poison);
        for retry in [false, true] {
            tally.attempts += 1;
            match sup.spawn(child) {
                Ok(handle) => {
                    tally.spawned += 1;
                    tally.retried_ok += u64::from(retry);
                    if tally.spawned % DETACH_EVERY == 0 {
                        tally.detached += 1; // handle dropped: the supervisor still tracks it
                    } else {
                        handles.push(handle);
                    }
                    break;
                }
                Err(err) if err.is_overload() && !retry => {
                    child = err.into_closure(); // handed back: try once more shortly
                    thread::sleep(RETRY_AFTER);
                }
                Err(err) => {
                    if let SpawnError::Thread(io, _) = &err {
                        eprintln!("could not start a child thread: {io}");
                    }
                    tally.busy += 1; // the closure is dropped; the request answers "busy"
                    break;
                }
            }
        }
        let mut i = 0;
        while i < handles.len() {
            if handles[i].is_finished() {
                tally.joined(handles.swap_remove(i).join());
            } else {
                i += 1;
            }
        }
        thread::sleep(THINK);
    }
    for handle in handles {
        tally.joined(handle.join());
    }
    tally
}

/// What the load phase measured.
#[derive(Debug)]
struct Load {
    tally: Tally,
    /// The largest `which_children().len()` sampled.
    peak: usize,
    /// The capacity while shrunk, and the largest live count sampled once the
    /// children admitted before the shrink had surely ended (if any sample).
    shrunk: (usize, Option<usize>),
}

/// Runs the request threads for `--duration` while the calling thread samples
/// the live set, prints a line every 250 ms, and shrinks the capacity to half
/// for the middle third (at most a second).
fn drive(sup: &Supervisor, cli: &Cli) -> Load {
    let capacity = sup.capacity();
    let shrunk = (capacity / 2).max(1);
    let shrink_at = cli.duration / 3;
    let restore_at = shrink_at + (cli.duration / 3).min(Duration::from_secs(1));
    let settled_at = shrink_at + Duration::from_micros(cli.work_ms * 1500 + 200_000);
    let (mut peak, mut shrunk_max) = (0, None::<usize>);
    let stop = &AtomicBool::new(false);
    let tally = thread::scope(|scope| {
        let threads: Vec<_> = (0..u64::from(cli.spawners))
            .map(|index| scope.spawn(move || requests(sup, index, cli, stop)))
            .collect();
        let start = Instant::now();
        let mut next_line = Duration::ZERO;
        while start.elapsed() < cli.duration {
            let t = start.elapsed();
            let in_shrink = (shrink_at..restore_at).contains(&t);
            let want = if in_shrink { shrunk } else { capacity };
            if sup.capacity() != want {
                sup.set_capacity(want).unwrap();
                println!("  t={:.2}s  set_capacity({want})", t.as_secs_f64());
            }
            let live = sup.which_children().len();
            peak = peak.max(live);
            if in_shrink && t >= settled_at {
                shrunk_max = Some(shrunk_max.unwrap_or(0).max(live));
            }
            if t >= next_line {
                let stats = sup.stats();
                println!(
                    "  t={:.2}s  live {:>3}/{:<3} peak {peak:>3}  spawned {:>6}  \
                     rejected {:>7}  panicked {:>4}",
                    t.as_secs_f64(),
                    sup.count(),
                    sup.capacity(),
                    stats.spawned,
                    stats.rejected,
                    stats.panicked
                );
                next_line += Duration::from_millis(250);
            }
            thread::sleep(Duration::from_millis(5));
        }
        sup.set_capacity(capacity).unwrap();
        stop.store(true, SeqCst);
        threads
            .into_iter()
            .map(|thread| thread.join().expect("request threads do not panic"))
            .fold(Tally::default(), Add::add)
    });
    Load {
        tally,
        peak,
        shrunk: (shrunk, shrunk_max),
    }
}

/// Starts a cooperative and an uncooperative long-running child, shuts the
/// supervisor down, tries one more spawn, and joins both children. Returns
/// the report, the uncooperative child's id, and the spawn attempts made.
fn shutdown_demo(sup: &Supervisor) -> Option<(ShutdownReport, ChildId, u64)> {
    let cooperative = sup.spawn(|ctx: &ChildContext| {
        let _running = Running::enter();
        let start = Instant::now();
        ctx.wait_cancelled(Duration::from_secs(60));
        start.elapsed()
    });
    let stubborn = sup.spawn(|_: &ChildContext| {
        let _running = Running::enter();
        thread::sleep(GRACE * 2); // never looks at the cancellation
        GRACE * 2
    });
    let (Ok(cooperative), Ok(stubborn)) = (cooperative, stubborn) else {
        return None;
    };
    let (cooperative_id, stubborn_id) = (cooperative.id(), stubborn.id());
    println!(
        "long-running children: {cooperative_id} (cooperative), {stubborn_id} (uncooperative)"
    );
    thread::sleep(Duration::from_millis(20));

    let began = Instant::now();
    let report = sup.shutdown(GRACE);
    let remaining: Vec<String> = report.remaining.iter().map(ToString::to_string).collect();
    println!(
        "shutdown({GRACE:?}) returned after {:.1?}: cancelled {}, remaining [{}]",
        began.elapsed(),
        report.cancelled,
        remaining.join(", ")
    );
    match sup.spawn(|_: &ChildContext| ()) {
        Ok(_) => println!("spawn after shutdown: accepted?!"),
        Err(err) => println!("spawn after shutdown: {err}"),
    }
    match cooperative.join() {
        Ok(ran) => println!("{cooperative_id}: saw the cancellation after {ran:.1?}"),
        Err(panic) => eprintln!("{cooperative_id} failed: {panic}"),
    }
    let tracked = sup.which_children().contains(&stubborn_id);
    let joined = stubborn.join().is_ok();
    println!(
        "{stubborn_id}: still tracked after shutdown: {tracked}; joined: {joined}; \
         tracked after join: {}",
        sup.which_children().contains(&stubborn_id)
    );
    Some((report, stubborn_id, 3))
}

/// Prints `stats()` and checks the bookkeeping; returns whether all held.
fn report(stats: &SupervisorStats, load: &Load, shutdown: (ShutdownReport, ChildId, u64)) -> bool {
    let s = stats;
    println!("final stats():");
    println!(
        "  capacity {}  live {}  spawned {}  finished {}  panicked {}  rejected {}  \
         closed {}  spawn_failed {}",
        s.capacity, s.live, s.spawned, s.finished, s.panicked, s.rejected, s.closed, s.spawn_failed
    );
    for (index, shard) in s.shards.iter().enumerate() {
        println!(
            "  shard {index:>2}: limit {:>3}  usage {}  live {}",
            shard.limit, shard.usage, shard.live
        );
    }

    let (t, capacity) = (load.tally, s.capacity);
    let (peak, running) = (load.peak, RUNNING_PEAK.load(SeqCst));
    let deliberate = DELIBERATE.load(SeqCst);
    let (report, stubborn, extra_attempts) = shutdown;
    let attempts = t.attempts + extra_attempts;
    let accounted = s.spawned + s.rejected + s.closed + s.spawn_failed;
    let mut ok = true;
    let mut check = |passed: bool, what: String| {
        println!("  [{}] {what}", if passed { "ok" } else { "FAILED" });
        ok &= passed;
    };
    check(
        peak <= capacity && running <= capacity,
        format!("peak live {peak} (running witness {running}) <= capacity {capacity}"),
    );
    match load.shrunk {
        (shrunk, Some(max)) => check(
            max <= shrunk,
            format!("live <= {shrunk} once drained after the shrink (max {max})"),
        ),
        (_, None) => println!("  [--] shrink too short to see the live count drain"),
    }
    check(
        report.remaining == [stubborn],
        format!("shutdown left only {stubborn}"),
    );
    check(
        t.done + t.panicked + t.detached == t.spawned,
        "each request's child was joined or detached".into(),
    );
    check(
        s.live == 0 && s.spawned == s.finished,
        format!("spawned {} == finished {}", s.spawned, s.finished),
    );
    check(
        s.panicked == deliberate,
        format!("panicked {} == deliberate panics {deliberate}", s.panicked),
    );
    check(
        accounted == attempts,
        format!("spawned + rejected + closed + spawn_failed = {accounted} == attempts {attempts}"),
    );
    ok
}

/// Installs a panic hook that hides deliberate child panics and reports the rest.
fn quiet_deliberate_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        if !message.is_some_and(|m| m.starts_with(DELIBERATE_PREFIX)) {
            previous(info);
        }
    }));
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut builder = Supervisor::builder()
        .capacity(cli.capacity as usize)
        .name("fsm")
        .stack_size(256 * 1024);
    if let Some(shards) = cli.shards {
        builder = builder.shards(shards);
    }
    let sup = match builder.build() {
        Ok(sup) => sup,
        Err(err) => {
            let flag = match err.setting() {
                "capacity" => "--capacity",
                "shards" => "--shards",
                other => other,
            };
            let message = format!("invalid value for `{flag}`: {}", err.reason());
            Cli::command()
                .error(ErrorKind::ValueValidation, message)
                .exit()
        }
    };
    quiet_deliberate_panics();
    println!(
        "sidejob supervisor demo: {} request threads, capacity {}, {} shards, \
         {} ms of work per child, 1 in {} panics, {:.1} s",
        cli.spawners,
        sup.capacity(),
        sup.stats().shards.len(),
        cli.work_ms,
        cli.panic_every,
        cli.duration.as_secs_f64()
    );

    let load = drive(&sup, &cli);
    let t = load.tally;
    println!(
        "requests stopped: {} attempts, {} spawned ({} on retry, {} detached), {} busy; \
         joined {} replies and {} caught panics",
        t.attempts, t.spawned, t.retried_ok, t.detached, t.busy, t.done, t.panicked
    );
    // Nobody joins the detached children: wait for the supervisor to see them end.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sup.count() > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(2));
    }
    let Some(shutdown) = shutdown_demo(&sup) else {
        eprintln!("error: could not start the two long-running children");
        return ExitCode::FAILURE;
    };
    if report(&sup.stats(), &load, shutdown) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
