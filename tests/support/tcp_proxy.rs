//! A TCP proxy on a free port of 127.0.0.1 whose target can change: new
//! connections go to the target of the moment, established ones stay
//! where they are (as behind a virtual IP, a DNS name or a Sentinel-aware
//! proxy after a failover). It can also make the network slow (each chunk
//! waits before it is passed on) or cut every connection open at once.
//! Threads copy each direction.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct TcpProxy {
    pub port: u16,
    target: Arc<AtomicU16>,
    /// Milliseconds each chunk waits before it is passed on.
    delay_ms: Arc<AtomicU64>,
    /// Bumped to cut every connection open.
    cuts: Arc<AtomicU64>,
}

impl TcpProxy {
    /// Starts one forwarding to `target` (a port of 127.0.0.1).
    pub fn start(target: u16) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().unwrap().port();
        let proxy = TcpProxy {
            port,
            target: Arc::new(AtomicU16::new(target)),
            delay_ms: Arc::new(AtomicU64::new(0)),
            cuts: Arc::new(AtomicU64::new(0)),
        };
        let (to, delay, cuts) = (
            Arc::clone(&proxy.target),
            Arc::clone(&proxy.delay_ms),
            Arc::clone(&proxy.cuts),
        );
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", to.load(Ordering::SeqCst)))
                else {
                    continue; // the client sees its connection closed
                };
                let generation = cuts.load(Ordering::SeqCst);
                for (from, into) in [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ] {
                    let (Ok(from), Ok(into)) = (from, into) else {
                        continue;
                    };
                    let (delay, cuts) = (Arc::clone(&delay), Arc::clone(&cuts));
                    std::thread::spawn(move || pump(from, into, &delay, &cuts, generation));
                }
            }
        });
        proxy
    }

    /// New connections go to `target` from now on.
    pub fn retarget(&self, target: u16) {
        self.target.store(target, Ordering::SeqCst);
    }

    /// Each chunk either way waits `delay` before it is passed on (zero:
    /// a fast network again).
    pub fn delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Closes every connection open now (within 50 ms); new ones are made
    /// as before.
    pub fn cut(&self) {
        self.cuts.fetch_add(1, Ordering::SeqCst);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

/// Passes `from`'s bytes on to `into`, each chunk after the delay, until
/// either end closes or the connections are cut.
fn pump(
    mut from: TcpStream,
    mut into: TcpStream,
    delay: &AtomicU64,
    cuts: &AtomicU64,
    generation: u64,
) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buffer = [0u8; 16 * 1024];
    while cuts.load(Ordering::SeqCst) == generation {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                let wait = delay.load(Ordering::SeqCst);
                if wait > 0 {
                    std::thread::sleep(Duration::from_millis(wait));
                    if cuts.load(Ordering::SeqCst) != generation {
                        break; // cut while it waited: the chunk is lost
                    }
                }
                if into.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let cut = cuts.load(Ordering::SeqCst) != generation;
    // Closed by one end: the other sees the end of its stream; cut: both
    // ends see their connection closed.
    let _ = into.shutdown(if cut { Shutdown::Both } else { Shutdown::Write });
    if cut {
        let _ = from.shutdown(Shutdown::Both);
    }
}
