//! A TCP proxy on a free port of 127.0.0.1 whose target can change: new
//! connections go to the target of the moment, established ones stay
//! where they are (as behind a virtual IP, a DNS name or a Sentinel-aware
//! proxy after a failover). Threads copy each direction.

use std::io::copy;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

pub struct TcpProxy {
    pub port: u16,
    target: Arc<AtomicU16>,
}

impl TcpProxy {
    /// Starts one forwarding to `target` (a port of 127.0.0.1).
    pub fn start(target: u16) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().unwrap().port();
        let target = Arc::new(AtomicU16::new(target));
        let to = Arc::clone(&target);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", to.load(Ordering::SeqCst)))
                else {
                    continue; // the client sees its connection closed
                };
                let (mut client_in, mut server_out) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut server_in, mut client_out) = (server, client);
                std::thread::spawn(move || {
                    let _ = copy(&mut client_in, &mut server_out);
                    let _ = server_out.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = copy(&mut server_in, &mut client_out);
                    let _ = client_out.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        TcpProxy { port, target }
    }

    /// New connections go to `target` from now on.
    pub fn retarget(&self, target: u16) {
        self.target.store(target, Ordering::SeqCst);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}
