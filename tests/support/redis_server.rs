//! A real `redis-server` on a free port of 127.0.0.1, without persistence
//! unless asked, killed when dropped. A test that needs one fails, never
//! skips, when `redis-server` is not installed (`.ci/run` installs it). The
//! examples that start one include this file too (`#[path]`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    child: Child,
    pub port: u16,
    options: Options,
}

/// How a server is started: more arguments, environment variables (a
/// preloaded library), and whether it answers `PING` without a password.
#[derive(Clone, Default)]
pub struct Options {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The password it requires, if any (`--requirepass`).
    pub password: Option<String>,
}

impl RedisServer {
    /// Starts one on a free port and waits until it answers `PING`.
    pub fn start() -> RedisServer {
        RedisServer::start_on(free_port())
    }

    /// Starts one on `port`, empty.
    pub fn start_on(port: u16) -> RedisServer {
        RedisServer::start_with(port, Options::default())
    }

    /// Starts one on `port` with `options`, in its own working directory
    /// (where `SAVE` writes its snapshot, and a restart reads it).
    pub fn start_with(port: u16, options: Options) -> RedisServer {
        let dir = RedisServer::dir_of(port);
        std::fs::create_dir_all(&dir).expect("a directory for redis-server");
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .args(&options.args)
            .envs(options.env.iter().map(|(key, value)| (key, value)))
            .stdout(Stdio::null());
        if let Some(password) = &options.password {
            command.args(["--requirepass", password]);
        }
        let child = command.spawn().unwrap_or_else(|error| {
            panic!("redis-server could not start ({error}); this test needs it (Debian: apt-get install redis-server)")
        });
        let server = RedisServer {
            child,
            port,
            options,
        };
        server.wait_ready();
        server
    }

    /// The working directory of the server on `port`.
    pub fn dir_of(port: u16) -> PathBuf {
        std::env::temp_dir().join(format!("sidejob-redis-{}-{port}", std::process::id()))
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        let url = match &self.options.password {
            Some(password) => format!("redis://:{password}@127.0.0.1:{}/", self.port),
            None => self.url(),
        };
        let client = redis::Client::open(url).expect("a valid URL");
        loop {
            if let Ok(mut connection) = client.get_connection() {
                if redis::cmd("PING").query::<String>(&mut connection).is_ok() {
                    return;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id, to signal it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends it `signal` (`-STOP`, `-CONT`) with `kill`.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([signal, &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill {signal} {}", self.pid());
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A blocking connection, for the test to read the ledger.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .expect("a valid URL")
            .get_connection()
            .expect("redis-server answers")
    }

    /// Every node's grant in budget `budget`'s ledger: the grants of the
    /// records of the ledger's epoch (`renew.lua`: a record is "want grant
    /// expiry token epoch"; a grant of an epoch before is void).
    pub fn grants(&self, budget: &str) -> Vec<(String, u64)> {
        ledger_grants(&mut self.connection(), budget)
    }

    /// What nodes refused their name hold meanwhile, by name, as the ledger
    /// records it apart from the grants (`renew.lua`'s `set_aside`).
    #[allow(dead_code)] // the examples that include this file use none
    pub fn set_aside(&self, budget: &str) -> Vec<(String, u64)> {
        ledger_records(&mut self.connection(), budget)
            .expect("the ledger reads")
            .into_iter()
            .filter(|(node, _)| is_aside(node))
            .collect()
    }

    /// Kills it and starts an empty one on the same port.
    pub fn restart_empty(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(RedisServer::dir_of(self.port));
        *self = RedisServer::start_with(self.port, self.options.clone());
    }

    /// Kills it (`kill -9`: nothing saved at exit) and starts it again on
    /// the same port and directory, so it loads its last snapshot.
    pub fn restart_from_snapshot(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let options = self.options.clone();
        let port = self.port;
        // Not dropped: the directory holds the snapshot.
        let old = std::mem::replace(self, RedisServer::start_with(port, options));
        std::mem::forget(old);
    }

    /// A replica made a primary (`REPLICAOF NO ONE`), and one for good: a
    /// restart starts it as a primary.
    pub fn promote(&mut self) {
        self.run(&["REPLICAOF", "NO", "ONE"]);
        if let Some(at) = self
            .options
            .args
            .iter()
            .position(|arg| arg == "--replicaof")
        {
            self.options
                .args
                .drain(at..(at + 3).min(self.options.args.len()));
        }
    }

    /// Kills it, so nothing answers on its port.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A command on a fresh connection, its answer ignored.
    pub fn run(&self, command: &[&str]) {
        let mut cmd = redis::cmd(command[0]);
        for arg in &command[1..] {
            cmd.arg(*arg);
        }
        cmd.exec(&mut self.connection())
            .unwrap_or_else(|error| panic!("{command:?}: {error}"));
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(RedisServer::dir_of(self.port));
    }
}

/// The lease and refresh of the fleet tests' nodes: short, so that leases
/// run out within a test, and wide enough for a loaded CI machine.
pub const LEASE: Duration = Duration::from_millis(1500);
pub const REFRESH: Duration = Duration::from_millis(300);

/// Joins node `node` with `resource` to budget `budget` of `capacity` on
/// `server`, with the tests' lease and refresh.
#[cfg(feature = "redis")]
pub async fn join(
    server: &RedisServer,
    budget: &str,
    capacity: usize,
    node: &str,
    resource: &std::sync::Arc<sidejob::Resource>,
) -> sidejob::fleet::Fleet {
    sidejob::fleet::Fleet::builder(&server.url(), budget)
        .capacity(capacity)
        .lease(LEASE)
        .refresh(REFRESH)
        .node(node)
        .join(resource)
        .await
        .unwrap_or_else(|error| panic!("{node} joins: {error}"))
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// Every node's grant in budget `budget`'s ledger, read on `connection`:
/// the grants of the records of the ledger's epoch (`renew.lua`: a record
/// is "want grant expiry token epoch"; a grant of an epoch before is void).
#[allow(dead_code)]
pub fn ledger_grants(connection: &mut redis::Connection, budget: &str) -> Vec<(String, u64)> {
    try_ledger_grants(connection, budget).expect("the ledger reads")
}

/// [`ledger_grants`], or the error reading them.
#[allow(dead_code)]
pub fn try_ledger_grants(
    connection: &mut redis::Connection,
    budget: &str,
) -> redis::RedisResult<Vec<(String, u64)>> {
    Ok(ledger_records(connection, budget)?
        .into_iter()
        .filter(|(node, _)| !is_aside(node))
        .collect())
}

/// Every record of the ledger's epoch, with its grant: the nodes' grants,
/// and what nodes refused their name hold meanwhile. That is no grant,
/// only recorded: with a dead lease restored under the same name it counts
/// those slots twice until the lease runs out (the permits held count
/// them once).
fn ledger_records(
    connection: &mut redis::Connection,
    budget: &str,
) -> redis::RedisResult<Vec<(String, u64)>> {
    let tag = format!("{{sidejob:fleet:{budget}}}");
    let (epoch, records): (Option<String>, Vec<(String, String)>) = redis::pipe()
        .atomic()
        .hget(format!("{tag}:meta"), "epoch")
        .hgetall(format!("{tag}:nodes"))
        .query(connection)?;
    Ok(records
        .into_iter()
        .filter_map(|(node, record)| {
            let fields: Vec<&str> = record.split(' ').collect();
            let grant = fields.get(1)?.parse().ok()?;
            (fields.get(4).copied() == epoch.as_deref()).then_some((node, grant))
        })
        .collect())
}

/// Whether a ledger's record is what a node refused its name holds
/// (`<name>\0aside\0<token>`).
fn is_aside(node: &str) -> bool {
    node.contains("\0aside\0")
}
