//! A renewal delivered late by the network (#37, found by the second
//! adversarial review of the fix).
//!
//! A node is cut off by a partition while one of its renewals is in
//! flight. The node times out the call, drops the connection, falls to
//! its floor (0: the hard limit) at its deadline, and the ledger purges
//! its lease; the other node grows into the whole budget. When the
//! partition heals, TCP delivers the stale renewal (the kernel keeps
//! retransmitting data, and a FIN queued behind it, for minutes): Redis
//! runs the script with the node's *old* `seen` and *old* `holding`. The
//! record it compares is gone, so the ledger learns, and records the old
//! holding as what the node "held when it first renewed in the learning
//! lease". The node's next (fresh) renewal is then granted that many slots
//! out of `known - others`, while the other node still admits the whole
//! budget until its own next renewal: 15 of 10 were held. A call that
//! reaches the script after the lease it renews ran out now changes
//! nothing.
//!
//! The partition is a userspace proxy that stops forwarding both ways
//! and, on healing, forwards what it had read (the same bytes a kernel
//! would retransmit), closing each side after.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::support::fleet_load::Load;
use crate::support::redis_server::RedisServer;
use sidejob::fleet::Fleet;
use sidejob::Resource;

const LEASE: Duration = Duration::from_millis(1500);
const REFRESH: Duration = Duration::from_millis(300);

/// A proxy to 127.0.0.1:`target` that a test can partition: while frozen,
/// nothing is forwarded either way (what was read waits), and on healing
/// everything waiting is delivered, in order, a close included.
struct PartitionProxy {
    port: u16,
    frozen: Arc<(Mutex<bool>, Condvar)>,
}

fn wait_thawed(frozen: &(Mutex<bool>, Condvar)) {
    let mut guard = frozen.0.lock().unwrap();
    while *guard {
        guard = frozen.1.wait(guard).unwrap();
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, frozen: Arc<(Mutex<bool>, Condvar)>) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let n: usize = from.read(&mut buffer).unwrap_or_default();
        wait_thawed(&frozen);
        if n == 0 {
            let _ = to.shutdown(Shutdown::Write);
            return;
        }
        if to.write_all(&buffer[..n]).is_err() {
            return;
        }
    }
}

impl PartitionProxy {
    fn start(target: u16) -> PartitionProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = Arc::new((Mutex::new(false), Condvar::new()));
        let shared = Arc::clone(&frozen);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (f1, f2) = (Arc::clone(&shared), Arc::clone(&shared));
                std::thread::spawn(move || pump(client, server, f1));
                std::thread::spawn(move || pump(s2, c2, f2));
            }
        });
        PartitionProxy { port, frozen }
    }

    fn set_frozen(&self, frozen: bool) {
        *self.frozen.0.lock().unwrap() = frozen;
        self.frozen.1.notify_all();
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

fn learning(server: &RedisServer, budget: &str) -> bool {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(&mut server.connection()).unwrap();
    let now = seconds * 1000 + micros / 1000;
    let until: Option<u64> = redis::cmd("HGET")
        .arg(format!("{{sidejob:fleet:{budget}}}:meta"))
        .arg("learn_until")
        .query(&mut server.connection())
        .unwrap();
    until.is_some_and(|until| now < until)
}

fn ledger_total(server: &RedisServer, budget: &str) -> u64 {
    server.grants(budget).iter().map(|(_, g)| g).sum()
}

async fn join(url: &str, budget: &str, capacity: usize, node: &str, r: &Arc<Resource>) -> Fleet {
    Fleet::builder(url, budget)
        .capacity(capacity)
        .lease(LEASE)
        .refresh(REFRESH)
        .floor(0) // the hard limit
        .node(node)
        .join(r)
        .await
        .unwrap_or_else(|e| panic!("{node} joins: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_delivered_after_a_partition_heals_changes_nothing() {
    let server = RedisServer::start();
    let proxy = PartitionProxy::start(server.port);
    let budget = "partition";
    let capacity = 10;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (ra, rb) = (
        Arc::new(Resource::new(capacity)),
        Arc::new(Resource::new(capacity)),
    );
    let fa = join(&proxy.url(), budget, capacity, "a", &ra).await;
    let fb = join(&server.url(), budget, capacity, "b", &rb).await;
    let la = Load::start(&ra, 12, &in_flight, &most);
    let lb = Load::start(&rb, 12, &in_flight, &most);

    let mut worst = 0;
    let mut report = Vec::new();
    for attempt in 0..3 {
        let began = Instant::now();
        while !(ra.capacity() == 5 && rb.capacity() == 5 && !learning(&server, budget)) {
            assert!(began.elapsed() < LEASE * 6, "never settled");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(REFRESH * 2).await;
        let before = most.swap(in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
        assert!(before <= capacity, "{before} held before the partition");

        // Partition `a` from Redis: its next renewal stays in the network.
        proxy.set_frozen(true);
        tokio::time::sleep(LEASE * 3).await;
        let during = most.load(Ordering::SeqCst);
        let (a_cut, b_cut) = (ra.capacity(), rb.capacity());
        let ledger_cut = server.grants(budget);

        // Heal just after `b` renewed, so `a`'s fresh renewal comes first.
        let renewals = fb.stats().renewals;
        while fb.stats().renewals == renewals {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        most.store(in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
        proxy.set_frozen(false);
        let healed = Instant::now();
        let mut trace = Vec::new();
        let mut ledger_peak = 0;
        let mut learned = false;
        while healed.elapsed() < LEASE {
            ledger_peak = ledger_peak.max(ledger_total(&server, budget));
            learned |= learning(&server, budget);
            let row = (
                healed.elapsed().as_millis(),
                ra.capacity(),
                rb.capacity(),
                in_flight.load(Ordering::SeqCst),
            );
            if trace
                .last()
                .map(|r: &(u128, usize, usize, usize)| (r.1, r.2))
                != Some((row.1, row.2))
            {
                trace.push(row);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let after = most.load(Ordering::SeqCst);
        worst = worst.max(after);
        report.push(format!(
            "attempt {attempt}: cut off: a {a_cut} b {b_cut}, ledger {ledger_cut:?}, most {during}; \
             healed: learning {learned}, ledger peak {ledger_peak}, most held at once {after} of \
             {capacity}; (ms, a cap, b cap, in flight) {trace:?}"
        ));
        eprintln!("{}", report.last().unwrap());
        if worst > capacity {
            break;
        }
    }
    la.stop();
    lb.stop();
    drop((fa, fb));
    assert!(
        worst <= capacity,
        "floor(0) on both nodes, yet {worst} of {capacity} held at once:\n{}",
        report.join("\n")
    );
}
