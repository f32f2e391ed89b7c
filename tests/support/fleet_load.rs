//! Load on a fleet's node: threads that hold permits for a while, again
//! and again, counting the permits held across every node at once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sidejob::Resource;

/// Load on a node: threads that hold permits for a while, again and again,
/// counting in `in_flight` the permits held across every node.
pub struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    /// Threads that take a permit when they can and hold it 5 ms, again
    /// and again.
    pub fn start(
        resource: &Arc<Resource>,
        threads: usize,
        in_flight: &Arc<AtomicUsize>,
        most: &Arc<AtomicUsize>,
    ) -> Load {
        Load::spawn(
            resource,
            threads,
            (in_flight, most),
            Some(Duration::from_millis(5)),
        )
    }

    /// Threads that each take a permit when they can and hold it until
    /// stopped (requests far longer than a lease), counted as `start`'s.
    pub fn holding(
        resource: &Arc<Resource>,
        threads: usize,
        in_flight: &Arc<AtomicUsize>,
        most: &Arc<AtomicUsize>,
    ) -> Load {
        Load::spawn(resource, threads, (in_flight, most), None)
    }

    /// `threads` threads that each hold a permit for `hold` (`None`: until
    /// stopped) whenever they get one.
    fn spawn(
        resource: &Arc<Resource>,
        threads: usize,
        (in_flight, most): (&Arc<AtomicUsize>, &Arc<AtomicUsize>),
        hold: Option<Duration>,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let (resource, stop) = (Arc::clone(resource), Arc::clone(&stop));
                let (in_flight, most) = (Arc::clone(in_flight), Arc::clone(most));
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match resource.try_acquire() {
                            Ok(permit) => {
                                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                                most.fetch_max(now, Ordering::SeqCst);
                                match hold {
                                    Some(hold) => std::thread::sleep(hold),
                                    None => {
                                        while !stop.load(Ordering::Relaxed) {
                                            std::thread::sleep(Duration::from_millis(1));
                                        }
                                    }
                                }
                                in_flight.fetch_sub(1, Ordering::SeqCst);
                                drop(permit);
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(1)),
                        }
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }

    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads {
            thread.join().unwrap();
        }
    }
}
