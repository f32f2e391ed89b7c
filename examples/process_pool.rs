//! Process-pool demo: a [`sidejob::ObjectPool`] of real OS processes, what
//! CouchDB's `couch_proc_manager` pools (its JavaScript query servers).
//!
//! The example re-executes itself as the worker (`process_pool --worker`), a
//! small line protocol on stdin/stdout, so it needs no other program:
//!
//! | request | reply |
//! |---|---|
//! | (on start) | `hello <pid>` |
//! | `ping` | `pong` |
//! | `load <db> <ddoc>` | `loaded <n>`: it now holds `n` design documents |
//! | `map <db> <ddoc> <doc>` | `mapped <db>/<ddoc> <doc>`, or `error not loaded` |
//!
//! The [`Manager`] spawns a worker and waits for its hello (`create`), pings
//! it (`check`), and kills and reaps it (`destroy`: no zombie is left). As a
//! [`TaggedManager`] its tag is a design document, which `tag` loads.
//!
//! The demo, in a few seconds:
//! 1. client threads map documents through tagged takes, so each process
//!    keeps serving the design documents it loaded;
//! 2. one idle process is killed from outside (`kill -9`): with
//!    `check_on_take` the next take finds it dead, destroys it and starts a
//!    new one, and no caller ever gets the dead one;
//! 3. `retire_all`, as a reload of the query server does: idle processes
//!    are killed at once, one in use when it comes back;
//! 4. dropping the pool closes it: every process is killed and reaped.
//!
//! It ends with a status table and self-checks: every process it started is
//! gone, none left as a zombie (`/proc/<pid>` no longer exists), and the
//! pool's counts add up.
//!
//! ```text
//! cargo run --release --example process_pool
//! cargo run --release --example process_pool -- --clients 8 --max-size 3
//! ```

use std::collections::HashSet;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use sidejob::{Manager, ObjectPool, Pooled, TaggedManager};

/// Pool real OS processes (this program, re-executed as a line-protocol worker).
#[derive(Debug, Parser)]
#[command(name = "process_pool", long_about = None)]
struct Cli {
    /// Run as a pooled worker process (the pool starts these itself).
    #[arg(long, hide = true)]
    worker: bool,
    /// Client threads mapping documents.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    clients: u16,
    /// Most processes alive (or starting) at once.
    #[arg(long, default_value_t = 3)]
    max_size: usize,
    /// Documents each client maps.
    #[arg(long, default_value_t = 200)]
    docs: u32,
}

/// The worker side: the line protocol, until stdin closes.
fn worker() -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "hello {}", std::process::id())?;
    out.flush()?;
    let mut loaded: HashSet<String> = HashSet::new();
    for line in io::stdin().lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ping"] => writeln!(out, "pong")?,
            ["load", db, ddoc] => {
                loaded.insert(format!("{db}/{ddoc}"));
                writeln!(out, "loaded {}", loaded.len())?;
            }
            ["map", db, ddoc, doc] if loaded.contains(&format!("{db}/{ddoc}")) => {
                writeln!(out, "mapped {db}/{ddoc} {doc}")?
            }
            ["map", ..] => writeln!(out, "error not loaded")?,
            _ => writeln!(out, "error unknown request")?,
        }
        out.flush()?;
    }
    Ok(())
}

/// One pooled worker process.
struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pid: u32,
}

impl Proc {
    /// Sends one request and reads its one-line reply.
    fn request(&mut self, request: &str) -> io::Result<String> {
        writeln!(self.stdin, "{request}")?;
        self.stdin.flush()?;
        let mut reply = String::new();
        if self.stdout.read_line(&mut reply)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the process exited",
            ));
        }
        Ok(reply.trim_end().to_owned())
    }
}

/// Starts, pings, tags and kills worker processes; remembers every pid.
struct Procs {
    exe: std::path::PathBuf,
    started: Arc<Mutex<Vec<u32>>>,
    killed: Arc<AtomicU64>,
}

impl Manager for Procs {
    type Object = Proc;
    type Error = io::Error;

    fn create(&self) -> io::Result<Proc> {
        let mut child = Command::new(&self.exe)
            .arg("--worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("no pipes to the process"));
        };
        let pid = child.id();
        let mut proc = Proc {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            pid,
        };
        let mut hello = String::new();
        proc.stdout.read_line(&mut hello)?;
        if hello.trim_end() != format!("hello {pid}") {
            self.destroy(proc);
            return Err(io::Error::other(format!("bad hello: {hello:?}")));
        }
        self.started.lock().unwrap().push(pid);
        Ok(proc)
    }

    fn check(&self, proc: &mut Proc) -> bool {
        proc.request("ping").is_ok_and(|reply| reply == "pong")
    }

    fn destroy(&self, mut proc: Proc) {
        // Kill and reap: `wait` collects the exit status, so no zombie stays.
        let _ = proc.child.kill();
        let _ = proc.child.wait();
        self.killed.fetch_add(1, Relaxed);
    }
}

impl TaggedManager for Procs {
    /// A design document: (database, design document id).
    type Tag = (String, String);

    fn tag(&self, proc: &mut Proc, (db, ddoc): &(String, String)) -> io::Result<()> {
        let reply = proc.request(&format!("load {db} {ddoc}"))?;
        if !reply.starts_with("loaded ") {
            return Err(io::Error::other(format!("load refused: {reply}")));
        }
        Ok(())
    }
}

/// Prints a check and asserts it.
macro_rules! check {
    ($holds:expr, $($what:tt)+) => {{
        let (holds, what): (bool, String) = ($holds, format!($($what)+));
        println!("  [{}] {what}", if holds { "ok" } else { "FAILED" });
        assert!(holds, "invariant broken: {what}");
    }};
}

/// Whether process `pid` still exists, as a process or a zombie.
fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Phase 1: clients map documents through tagged takes.
fn map_documents(pool: &ObjectPool<Procs>, cli: &Cli) -> u64 {
    let mapped = AtomicU64::new(0);
    thread::scope(|scope| {
        for client in 0..cli.clients {
            let mapped = &mapped;
            scope.spawn(move || {
                for doc in 0..cli.docs {
                    let tag = (format!("db{}", client % 2), format!("_design/v{}", doc % 3));
                    let mut proc = pool
                        .take_tagged(&tag, Duration::from_secs(10))
                        .expect("a process within 10 s");
                    let reply = proc.request(&format!("map {} {} doc{doc}", tag.0, tag.1));
                    match reply {
                        Ok(reply) if reply == format!("mapped {}/{} doc{doc}", tag.0, tag.1) => {
                            mapped.fetch_add(1, Relaxed);
                        }
                        other => {
                            panic!("a tagged process must have its design document: {other:?}")
                        }
                    }
                }
            });
        }
    });
    mapped.into_inner()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    if cli.worker {
        return Ok(worker()?);
    }
    let started_at = Instant::now();
    let started = Arc::new(Mutex::new(Vec::new()));
    let killed = Arc::new(AtomicU64::new(0));
    let pool = ObjectPool::builder(Procs {
        exe: std::env::current_exe()?,
        started: Arc::clone(&started),
        killed: Arc::clone(&killed),
    })
    .max_size(cli.max_size)
    .init_size(1)
    .check_on_take(true)
    .build()?;

    println!(
        "== 1. {} clients map {} documents each ==",
        cli.clients, cli.docs
    );
    let mapped = map_documents(&pool, &cli);
    check!(
        mapped == u64::from(cli.clients) * u64::from(cli.docs),
        "every document mapped by a process that had loaded its design document ({mapped})"
    );
    check!(
        pool.status().size <= cli.max_size,
        "at most {} processes: {}",
        cli.max_size,
        pool.status().size
    );

    println!("== 2. an idle process is killed from outside (kill -9) ==");
    let tag = ("db0".to_owned(), "_design/v0".to_owned());
    let wait = Duration::from_secs(10);
    // Returned last with this tag: the next take of the tag finds it first.
    let victim = pool.take_tagged(&tag, wait)?.pid;
    // The shell's own `kill`, so no other program is needed.
    let status = Command::new("sh")
        .args(["-c", &format!("kill -9 {victim}")])
        .status()?;
    check!(status.success(), "kill -9 {victim}");
    let fresh = pool.take_tagged(&tag, wait)?;
    check!(
        fresh.pid != victim,
        "the next take got process {} instead",
        fresh.pid
    );
    check!(
        pool.stats().failed_take_checks == 1,
        "check_on_take found the dead one and destroyed it"
    );
    check!(
        !exists(victim),
        "the killed process {victim} was reaped, no zombie"
    );
    let fresh_pid = fresh.pid;
    Pooled::fail(fresh); // throw one away on purpose too: killed and reaped
    check!(!exists(fresh_pid), "a failed process is killed and reaped");

    println!("== 3. retire_all, as a reload does ==");
    let held = pool.try_take()?;
    let held_pid = held.pid;
    let idle_before: Vec<u32> = started
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|&pid| pid != held_pid && exists(pid))
        .collect();
    pool.retire_all();
    // (The maintainer may start new untagged processes meanwhile, to
    // replace those the tagged takes taught: those are new, not retired.)
    check!(
        idle_before.iter().all(|&pid| !exists(pid)),
        "the {} idle processes were killed at once",
        idle_before.len()
    );
    check!(
        exists(held_pid) && pool.stale_count() == 1,
        "the one in use lives on until returned"
    );
    drop(held);
    check!(
        !exists(held_pid) && pool.stale_count() == 0,
        "and goes when it comes back"
    );

    println!("== 4. close ==");
    let status = pool.status();
    let stats = pool.stats();
    // Dropping the pool stops its maintainer (no creation can be under way
    // after) and closes it: every idle process is killed and reaped.
    drop(pool);
    let started = started.lock().unwrap().clone();
    let killed = killed.load(Relaxed);
    let survivors: Vec<u32> = started.iter().copied().filter(|&pid| exists(pid)).collect();
    check!(
        survivors.is_empty(),
        "all {} processes started are gone: {survivors:?}",
        started.len()
    );
    check!(
        killed == started.len() as u64,
        "each was killed exactly once ({killed} of {})",
        started.len()
    );

    println!("\n== status and stats before the close ==");
    println!("  {:<22} {}", "processes started", started.len());
    println!(
        "  {:<22} {} ({} idle, {} tagged)",
        "size", status.size, status.idle, status.tagged
    );
    println!("  {:<22} {}", "takes", stats.takes);
    println!("  {:<22} {}", "creates", stats.creates);
    println!(
        "  {:<22} {}",
        "failed take checks", stats.failed_take_checks
    );
    println!("  {:<22} {}", "destroyed", stats.destroyed);
    println!(
        "  {:<22} {:.2} s",
        "ran for",
        started_at.elapsed().as_secs_f64()
    );
    println!("\nall checks passed");
    Ok(())
}
