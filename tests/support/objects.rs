//! A scriptable `Manager` shared by the object-pool tests.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sidejob::{Manager, ObjectPool, TaggedManager};

/// A pooled member: a unique id and whether it still works.
#[derive(Debug, PartialEq, Eq)]
pub struct Member {
    pub id: u32,
    pub healthy: bool,
}

/// Why a scripted creation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFailed(pub u32);

impl fmt::Display for StartFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "member {} refused to start", self.0)
    }
}

impl std::error::Error for StartFailed {}

/// Makes numbered members, counting what lives; can be told to fail,
/// panic, or be slow.
#[derive(Default)]
pub struct Members {
    next_id: AtomicU32,
    /// Members created and not yet destroyed or detached.
    pub live: AtomicUsize,
    /// The most members alive at once.
    pub peak: AtomicUsize,
    /// Ids in the order they were destroyed.
    pub destroyed: Mutex<Vec<u32>>,
    /// How many upcoming creations fail.
    pub fail_next: AtomicUsize,
    /// Every creation fails while set.
    pub always_fail: AtomicBool,
    /// The next creation panics.
    pub panic_next: AtomicBool,
    /// The next check panics.
    pub panic_check: AtomicBool,
    /// Each creation takes this long.
    pub create_delay: Mutex<Option<Duration>>,
    /// When set, the next `create` waits until the sender sends or is
    /// dropped (one create only: it takes the receiver).
    pub create_gate: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    /// While `true`, every `create` waits until it is `false` again (see
    /// [`Members::hold_creates`]).
    pub creates_held: Mutex<bool>,
    creates_released: Condvar,
    /// Every tag taught, with the member it was taught to.
    pub taught: Mutex<Vec<(u32, Tag)>>,
    pub fail_tag: AtomicBool,
    /// Members that died while idle: their `check` fails.
    pub dead: Mutex<Vec<u32>>,
    /// `check` calls so far.
    pub checks: AtomicUsize,
}

/// A tag of the test manager: (group, key).
pub type Tag = (&'static str, &'static str);

impl Members {
    pub fn new() -> Arc<Members> {
        Arc::new(Members::default())
    }

    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    pub fn destroyed(&self) -> Vec<u32> {
        self.destroyed.lock().unwrap().clone()
    }

    /// Makes every `create` from now on hang until
    /// [`release_creates`](Members::release_creates).
    pub fn hold_creates(&self) {
        *self.creates_held.lock().unwrap() = true;
    }

    /// Lets every held `create` go on.
    pub fn release_creates(&self) {
        *self.creates_held.lock().unwrap() = false;
        self.creates_released.notify_all();
    }

    /// A member handed out of the pool for good (detached) is no longer
    /// the pool's to count.
    pub fn forget(&self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The manager the pools get: shares its counters with the test.
pub struct Script(pub Arc<Members>);

impl Manager for Script {
    type Object = Member;
    type Error = StartFailed;

    fn create(&self) -> Result<Member, StartFailed> {
        let members = &self.0;
        if let Some(delay) = *members.create_delay.lock().unwrap() {
            std::thread::sleep(delay);
        }
        let mut held = members.creates_held.lock().unwrap();
        while *held {
            held = members.creates_released.wait(held).unwrap();
        }
        drop(held);
        let gate = members.create_gate.lock().unwrap().take();
        if let Some(gate) = gate {
            let _ = gate.recv();
        }
        let id = members.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        if members.panic_next.swap(false, Ordering::SeqCst) {
            panic!("member {id} panicked while starting");
        }
        let scripted_failure = members
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if scripted_failure || members.always_fail.load(Ordering::SeqCst) {
            return Err(StartFailed(id));
        }
        let live = members.live.fetch_add(1, Ordering::SeqCst) + 1;
        members.peak.fetch_max(live, Ordering::SeqCst);
        Ok(Member { id, healthy: true })
    }

    fn check(&self, member: &mut Member) -> bool {
        self.0.checks.fetch_add(1, Ordering::SeqCst);
        if self.0.panic_check.swap(false, Ordering::SeqCst) {
            panic!("check of member {} panicked", member.id);
        }
        member.healthy && !self.0.dead.lock().unwrap().contains(&member.id)
    }

    fn destroy(&self, member: Member) {
        self.0.destroyed.lock().unwrap().push(member.id);
        self.0.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A pool of `max_size` scripted members on one shard, so that every take
/// and return meets the same idle stack.
impl TaggedManager for Script {
    type Tag = Tag;

    fn tag(&self, member: &mut Member, tag: &Tag) -> Result<(), StartFailed> {
        if self.0.fail_tag.swap(false, Ordering::SeqCst) {
            return Err(StartFailed(member.id));
        }
        self.0.taught.lock().unwrap().push((member.id, *tag));
        Ok(())
    }
}

impl Members {
    pub fn taught(&self) -> Vec<(u32, Tag)> {
        self.taught.lock().unwrap().clone()
    }
}

pub fn pool(members: &Arc<Members>, max_size: usize) -> ObjectPool<Script> {
    ObjectPool::builder(Script(Arc::clone(members)))
        .max_size(max_size)
        .shards(1)
        .build()
        .unwrap()
}

/// Waits (yielding, up to 10 s) until `condition` holds, for effects of
/// other threads that signal nothing else: a taker joining the queue, the
/// maintainer's background work.
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::yield_now();
    }
}
