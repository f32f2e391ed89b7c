//! Workers shared by the worker-pool tests.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use sidejob::Worker;

/// What a [`Gated`] worker is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// Record the number and return it.
    Run(u32),
    /// Wait for the test to open the gate, then record and return.
    Wait(u32),
    /// Panic.
    Panic,
}

/// A worker that records what it ran, can be held at a gate, and can panic.
pub struct Gated {
    pub shard: usize,
    pub log: Arc<Mutex<Vec<(usize, u32)>>>,
    pub gate: Arc<Mutex<mpsc::Receiver<()>>>,
    pub started: mpsc::Sender<u32>,
}

impl Worker for Gated {
    type Request = Job;
    type Reply = u32;

    fn handle_call(&mut self, job: Job) -> u32 {
        match job {
            Job::Run(n) => {
                self.log.lock().unwrap().push((self.shard, n));
                n
            }
            Job::Wait(n) => {
                let _ = self.started.send(n);
                self.gate.lock().unwrap().recv().expect("gate dropped");
                self.log.lock().unwrap().push((self.shard, n));
                n
            }
            Job::Panic => panic!("deliberate test panic"),
        }
    }
}

/// The test's side of a [`Gated`] worker pool's instruments.
pub struct Harness {
    pub log: Arc<Mutex<Vec<(usize, u32)>>>,
    pub gate: mpsc::Sender<()>,
    pub started: mpsc::Receiver<u32>,
    gate_receiver: Arc<Mutex<mpsc::Receiver<()>>>,
    started_sender: mpsc::Sender<u32>,
}

impl Harness {
    pub fn new() -> Self {
        let (gate, gate_receiver) = mpsc::channel();
        let (started_sender, started) = mpsc::channel();
        Harness {
            log: Arc::default(),
            gate,
            started,
            gate_receiver: Arc::new(Mutex::new(gate_receiver)),
            started_sender,
        }
    }

    /// A factory building [`Gated`] workers wired to this harness.
    pub fn factory(&self) -> impl Fn(usize) -> Gated + Send + Sync + 'static {
        let log = Arc::clone(&self.log);
        let gate = Arc::clone(&self.gate_receiver);
        let started = Mutex::new(self.started_sender.clone());
        move |shard| Gated {
            shard,
            log: Arc::clone(&log),
            gate: Arc::clone(&gate),
            started: started.lock().unwrap().clone(),
        }
    }

    /// Opens the gate for `n` waiting jobs.
    pub fn open(&self, n: usize) {
        for _ in 0..n {
            self.gate.send(()).unwrap();
        }
    }

    pub fn logged(&self) -> Vec<(usize, u32)> {
        self.log.lock().unwrap().clone()
    }
}
