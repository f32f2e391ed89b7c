//! A real `redis-server` on a free port of 127.0.0.1, without persistence,
//! killed when dropped. A test that needs one fails, never skips, when
//! `redis-server` is not installed (`.ci/run` installs it). The examples
//! that start one include this file too (`#[path]`).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    child: Child,
    pub port: u16,
}

impl RedisServer {
    /// Starts one on a free port and waits until it answers `PING`.
    pub fn start() -> RedisServer {
        RedisServer::start_on(free_port())
    }

    /// Starts one on `port`, empty.
    pub fn start_on(port: u16) -> RedisServer {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("redis-server could not start ({error}); this test needs it (Debian: apt-get install redis-server)")
            });
        let server = RedisServer { child, port };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        let client = redis::Client::open(self.url()).expect("a valid URL");
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

    /// Every node's grant in budget `budget`'s ledger.
    pub fn grants(&self, budget: &str) -> Vec<(String, u64)> {
        let key = format!("{{sidejob:fleet:{budget}}}:grants");
        redis::cmd("HGETALL")
            .arg(key)
            .query(&mut self.connection())
            .expect("HGETALL answers")
    }

    /// Kills it and starts an empty one on the same port.
    pub fn restart_empty(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        *self = RedisServer::start_on(self.port);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
