//! A shard's mailbox: a ring of slots between the senders and the shard's one
//! worker, indexed by the shard's grant numbers.
//!
//! The shard's [`SplitShard`] already numbers every admission (its grant
//! number) and counts every release, and it never admits more messages than
//! its limit. So the mailbox needs no counters of its own: the message of
//! grant `g` goes in slot `g mod R` (`R`, a power of two, at least the
//! shard's limit), and the worker takes grant after grant in order. A
//! general-purpose channel would count the same messages a second time
//! (its own head and tail, each a locked instruction per message on a line
//! of its own); this ring adds nothing per message but one stamp.
//!
//! # Protocol
//!
//! * **Posting** (the sender of grant `g`): write the message into slot
//!   `g mod R`, then store the slot's stamp `g + 1`. The slot is the sender's
//!   alone: grants in flight span less than the limit, so no other sender
//!   holds one for the same slot, and the admission of `g` rested on a
//!   release count past `g - limit`, so the worker has moved the slot's
//!   previous message out.
//! * **Taking** (the worker, the only [`MailReceiver`]): the worker's count
//!   of messages taken, `n`, equals its shard's release count whenever it
//!   looks (it releases each message before it takes the next). It takes
//!   slot `n mod R` once the stamp reads `grant(n) + 1`.
//! * **Sleeping**: a worker that finds nothing spins a little, then sets
//!   `sleeping` and reads its shard's usage and `stopped`. If a message is
//!   admitted (even if not posted yet) or the mailbox is stopped, it does
//!   not sleep; otherwise it parks. A sender, after its stamp, reads
//!   `sleeping`; if set, it clears it and, if it was the one to clear it,
//!   unparks the worker: one sender pays for the wake-up, not every one
//!   posting while the worker wakes. Either the worker's usage read sees
//!   the sender's admission, or the sender's read sees `sleeping` (see
//!   `# Orderings`); an unpark that comes before the park makes the park
//!   return at once. Park and unpark, not a condition variable: unparking a
//!   thread that is not parked is one atomic swap, where notifying a
//!   condition variable is a system call every time.
//! * **Stopping** (shutdown, after every limit is 0): set `stopped`, then
//!   wake the worker as a sender does. The worker answers
//!   [`Received::Stopped`] once nothing admitted is left to take.
//!
//! Messages still in the ring when the mailbox is dropped (posted, never
//! taken) are dropped with it.
//!
//! # Orderings
//!
//! * The stamp store is `Release` and the worker's stamp load `Acquire`: the
//!   worker that sees the stamp sees the message written.
//! * The worker's release of a slot (`SplitShard::release`, `Release`) comes
//!   after it moved the message out, and every admission reads the release
//!   count with `Acquire` (directly or through `released_seen`): the next
//!   sender of that slot writes after the move.
//! * Sleeping is a Dekker pair: the sender's admitting CAS on its shard's
//!   word, then its load of `sleeping`; the worker's store of `sleeping`,
//!   then its load of the word. All four are `SeqCst`, so in their single
//!   total order one side sees the other. (On x86 none costs more than its
//!   `AcqRel` or `Acquire` form.) Loom treats `SeqCst` accesses as `AcqRel`,
//!   so under loom a `SeqCst` fence stands between each pair
//!   ([`seq_cst_for_loom`]); the models then check the protocol the C++
//!   model promises the plain build.
//! * Stopping is the same Dekker pair, with the store of `stopped` in place
//!   of the admission, all `SeqCst`.
//! * The worker's thread handle is stored (under its mutex) before the
//!   worker first sets `sleeping`, and a waker reads it only after it
//!   found `sleeping` set, so it finds the handle.
//!
//! # Why `unsafe`
//!
//! The slots hold messages in `MaybeUninit` cells that the protocol above
//! hands from one sender to the worker; the compiler cannot see that hand-off,
//! so writing and reading them is `unsafe`, with the reasons given where it
//! happens. `docs/benchmarks/history.md` (#16 item 10) has the measurement that
//! made it worth it: a cast against a bounded crossbeam channel in the same
//! run. The ring's unit tests run under miri in CI, and the loom models of
//! the worker pool explore it (loom's `UnsafeCell` checks every access).
#![allow(unsafe_code)]

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_utils::{Backoff, CachePadded};

use crate::admission::SplitShard;
use crate::sync::{
    current_thread, lock, park, park_timeout, seq_cst_for_loom, yield_now, AtomicBool, AtomicU64,
    Mutex, Ordering, Thread, UnsafeCell,
};

/// What a worker found when it looked in its mailbox.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Received<T> {
    Message(T),
    /// The wait timed out with nothing admitted (never under loom, which
    /// models no time).
    #[cfg_attr(sidejob_loom, allow(dead_code))]
    Idle,
    /// The mailbox was stopped and nothing admitted is left to take.
    Stopped,
}

/// One slot of the ring.
struct Slot<T> {
    /// The grant number of the message last posted here, plus one; 0 before
    /// the first.
    stamp: AtomicU64,
    message: UnsafeCell<MaybeUninit<T>>,
}

/// Grants in a row go to slots this many stripes apart (fewer in a smaller
/// ring).
const STRIPES: u64 = 16;

/// How the grants of one lap are laid over a ring's slots: grant `i` of
/// the lap goes to stripe `i mod S`, at place `i / S` in it. Consecutive
/// grants then sit a stripe apart, and the grants sharing a cache line are
/// `S` apart: a worker taking the message the senders posted a moment ago
/// reads a line they are done with, instead of one a sender is still
/// writing the neighbouring slot of. (Laid out in order, a worker that
/// kept up with its senders settled, in about half the runs of
/// `benches/mailbox.rs`, into trading every line with them: 60 to 120 ns a
/// message instead of 20; `docs/benchmarks/history.md`.)
#[derive(Debug, Clone, Copy)]
struct Spread {
    /// `S - 1`, `S` a power of two, at most the ring's size.
    stripe_mask: u64,
    /// log2 of a stripe's length, `R / S`.
    stripe_bits: u32,
    /// log2 of `S`.
    stripes_bits: u32,
}

impl Spread {
    fn new(room: u64) -> Self {
        let stripes = room.min(STRIPES);
        Spread {
            stripe_mask: stripes - 1,
            stripe_bits: room.trailing_zeros() - stripes.trailing_zeros(),
            stripes_bits: stripes.trailing_zeros(),
        }
    }
}

/// The slot of the `i`-th grant of a lap (`i < R`): a permutation of
/// `0..R`.
#[inline]
fn spread(i: u64, spread: Spread) -> u64 {
    ((i & spread.stripe_mask) << spread.stripe_bits) | (i >> spread.stripes_bits)
}

/// The worker's side of going to sleep and being woken.
struct Sleep {
    /// Set by the worker before it re-checks and parks; cleared by the one
    /// who wakes it.
    sleeping: AtomicBool,
    /// Set once, by shutdown.
    stopped: AtomicBool,
    /// The worker's thread, stored before it first sleeps.
    worker: Mutex<Option<Thread>>,
}

/// A shard's mailbox, shared by its senders and its [`MailReceiver`].
pub(crate) struct Mailbox<T> {
    slots: Box<[Slot<T>]>,
    /// `R - 1`.
    mask: u64,
    /// How grants are spread over the slots.
    spread: Spread,
    /// The receiver's count of messages taken, stored when it is dropped,
    /// for the mailbox's own drop.
    taken_at_exit: AtomicU64,
    sleep: CachePadded<Sleep>,
}

// SAFETY: a mailbox moves each message from the thread that posts it to
// the worker that takes it (so `T: Send`), and never hands out a reference
// to one; its cells are reached only as the protocol above allows, each by
// one thread at a time, ordered by the stamps and the release count.
unsafe impl<T: Send> Send for Mailbox<T> {}
// SAFETY: as for `Send`: what `&Mailbox` allows (posting with a held
// admission, stopping) touches a cell only under the protocol.
unsafe impl<T: Send> Sync for Mailbox<T> {}

/// The worker's end of a mailbox: the only one that takes messages.
pub(crate) struct MailReceiver<T> {
    mailbox: Arc<Mailbox<T>>,
    /// Messages taken so far; the next one's grant number is this one's.
    taken: Cell<u64>,
    /// This thread's handle is in the mailbox (the first receive on the
    /// worker's thread puts it there).
    registered: Cell<bool>,
}

/// A mailbox for a shard whose limit is at most `limit`, and its receiver.
pub(crate) fn mailbox<T>(limit: u64) -> (Arc<Mailbox<T>>, MailReceiver<T>) {
    let room = limit.max(1).next_power_of_two();
    let mailbox = Arc::new(Mailbox {
        slots: (0..room)
            .map(|_| Slot {
                stamp: AtomicU64::new(0),
                message: UnsafeCell::new(MaybeUninit::uninit()),
            })
            .collect(),
        mask: room - 1,
        spread: Spread::new(room),
        taken_at_exit: AtomicU64::new(0),
        sleep: CachePadded::new(Sleep {
            sleeping: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            worker: Mutex::new(None),
        }),
    });
    let receiver = MailReceiver {
        mailbox: Arc::clone(&mailbox),
        taken: Cell::new(0),
        registered: Cell::new(false),
    };
    (mailbox, receiver)
}

impl<T> Mailbox<T> {
    /// The slot of `grant`: see [`spread`].
    #[inline]
    fn slot(&self, grant: u64) -> &Slot<T> {
        &self.slots[spread(grant & self.mask, self.spread) as usize]
    }

    /// Posts the message of admission `grant` and wakes the worker if it
    /// sleeps.
    ///
    /// # Safety
    ///
    /// `grant` is the grant number of an admission on this mailbox's shard,
    /// made by the caller, whose slot is still held, and nothing has been
    /// posted for it yet; the shard's limit has never exceeded the limit
    /// this mailbox was made for.
    #[inline]
    pub(crate) unsafe fn post(&self, grant: u64, message: T) {
        let slot = self.slot(grant);
        slot.message.with_mut(|cell| {
            // SAFETY: the caller's admission gives it this slot alone (see
            // the module's `# Protocol`): no other sender holds a grant for
            // it, and the worker moved the previous message out before the
            // release this admission saw (`Acquire`), so nothing reads or
            // writes the cell meanwhile. Writing over a moved-out message
            // drops nothing.
            unsafe { (*cell).write(message) };
        });
        slot.stamp.store(grant + 1, Ordering::Release);
        seq_cst_for_loom();
        // SeqCst: the sender's half of the sleeping Dekker pair, after its
        // admitting CAS (see `# Orderings`).
        if self.sleep.sleeping.load(Ordering::SeqCst) {
            self.wake();
        }
    }

    /// The worker sleeps (or is about to): the one that clears `sleeping`
    /// wakes it; the others, finding it clear, need not.
    #[cold]
    #[inline(never)]
    fn wake(&self) {
        if self.sleep.sleeping.swap(false, Ordering::SeqCst) {
            if let Some(worker) = lock(&self.sleep.worker).as_ref() {
                worker.unpark();
            }
        }
    }

    /// Stops the mailbox: once nothing admitted is left, the worker's
    /// receive answers [`Received::Stopped`]. Call after the shard's limit
    /// is 0.
    pub(crate) fn stop(&self) {
        self.sleep.stopped.store(true, Ordering::SeqCst);
        seq_cst_for_loom();
        self.wake();
    }
}

impl<T> Drop for Mailbox<T> {
    fn drop(&mut self) {
        let taken = self.taken_at_exit.load(Ordering::Relaxed);
        let room = self.mask + 1;
        for slot in self.slots.iter() {
            let stamp = slot.stamp.load(Ordering::Relaxed);
            // Posted (stamp above 0) and not taken: its grant is at or past
            // the receiver's count, by less than the ring's size.
            let untaken =
                stamp != 0 && SplitShard::grant_number((stamp - 1).wrapping_sub(taken)) < room;
            if untaken {
                slot.message.with_mut(|cell| {
                    // SAFETY: `&mut self`: no sender or receiver is left.
                    // The stamp says a message was written here and the
                    // receiver's count says it was never moved out.
                    unsafe { (*cell).assume_init_drop() };
                });
            }
        }
    }
}

impl<T> MailReceiver<T> {
    /// The next message, if it is already posted.
    #[inline]
    pub(crate) fn try_recv(&self) -> Option<T> {
        let taken = self.taken.get();
        let slot = self.mailbox.slot(taken);
        if slot.stamp.load(Ordering::Acquire) != SplitShard::grant_number(taken) + 1 {
            return None;
        }
        let message = slot.message.with(|cell| {
            // SAFETY: the stamp (`Acquire`, after the sender's `Release`
            // store) says the message of this grant was written; only this
            // receiver reads slots, each grant once (the count moves on
            // below); and no sender writes the slot again until this
            // message's slot is released, after the handler ran.
            unsafe { (*cell).assume_init_read() }
        });
        self.taken.set(taken + 1);
        Some(message)
    }

    /// Waits for the next message of `shard`'s mailbox, up to `timeout` if
    /// one is given (under loom, without one). Call only when every message
    /// taken so far has been released.
    pub(crate) fn recv(&self, shard: &SplitShard, timeout: Option<Duration>) -> Received<T> {
        let deadline = if cfg!(sidejob_loom) {
            None
        } else {
            timeout.map(|timeout| Instant::now() + timeout)
        };
        let sleep = &self.mailbox.sleep;
        let backoff = Backoff::new();
        loop {
            if let Some(message) = self.try_recv() {
                return Received::Message(message);
            }
            // Spin on the slot's stamp alone: reading the shard's word here
            // would take the senders' line from them on every turn. (Not
            // under loom: spinning only multiplies the interleavings.)
            if !cfg!(sidejob_loom) && !backoff.is_completed() {
                backoff.snooze();
                continue;
            }
            // Admitted but not posted yet: its sender is between its CAS
            // and its stamp.
            if shard.usage_from_releaser() > 0 {
                yield_now();
                continue;
            }
            if sleep.stopped.load(Ordering::SeqCst) {
                return Received::Stopped;
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Received::Idle;
            }
            if !self.registered.get() {
                *lock(&sleep.worker) = Some(current_thread());
                self.registered.set(true);
            }
            // SeqCst: the worker's half of the sleeping Dekker pair. Every
            // write of `sleeping` is a swap, so the writes form one chain
            // that each reads the last of (loom, which orders plain stores
            // of different threads only by causality, checks the protocol
            // then; a store here let it wrongly lose a wake-up).
            sleep.sleeping.swap(true, Ordering::SeqCst);
            seq_cst_for_loom();
            if shard.usage_from_releaser() == 0 && !sleep.stopped.load(Ordering::SeqCst) {
                match deadline {
                    Some(deadline) => {
                        park_timeout(deadline.saturating_duration_since(Instant::now()));
                    }
                    None => park(),
                }
            }
            sleep.sleeping.swap(false, Ordering::Relaxed);
        }
    }
}

impl<T> Drop for MailReceiver<T> {
    fn drop(&mut self) {
        self.mailbox
            .taken_at_exit
            .store(self.taken.get(), Ordering::Relaxed);
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    //! The ring on its own, with the admissions a shard would make; these
    //! also run under miri in CI (`.ci/run`).

    use super::*;
    use crate::admission::AdmissionShard as _;

    /// Admits one message on `shard` and posts it.
    fn send<T>(shard: &SplitShard, mailbox: &Mailbox<T>, message: T) -> Result<(), T> {
        match shard.try_admit().ok() {
            Some(grant) => {
                // SAFETY: a fresh admission on the mailbox's own shard, made
                // for a limit the mailbox was made for.
                unsafe { mailbox.post(grant, message) };
                Ok(())
            }
            None => Err(message),
        }
    }

    #[test]
    fn the_spread_is_a_permutation_of_the_ring() {
        for room in [1u64, 2, 4, 8, 16, 32, 1024] {
            let layout = Spread::new(room);
            let mut seen = vec![false; room as usize];
            for i in 0..room {
                let slot = spread(i, layout);
                assert!(!seen[slot as usize], "room {room}: slot {slot} twice");
                seen[slot as usize] = true;
            }
            if room >= STRIPES {
                assert_eq!(
                    spread(1, layout),
                    room / STRIPES,
                    "neighbours a stripe apart"
                );
            }
        }
    }

    #[test]
    fn messages_come_out_in_grant_order_and_laps_reuse_slots() {
        let shard = SplitShard::new(3);
        let (mailbox, receiver) = mailbox::<String>(3);
        for lap in 0..5 {
            for i in 0..3 {
                send(&shard, &mailbox, format!("{lap}-{i}")).unwrap();
            }
            assert!(send(&shard, &mailbox, "full".into()).is_err());
            for i in 0..3 {
                assert_eq!(receiver.try_recv(), Some(format!("{lap}-{i}")));
                shard.release();
            }
            assert_eq!(receiver.try_recv(), None);
        }
    }

    #[test]
    fn untaken_messages_are_dropped_with_the_mailbox() {
        let shard = SplitShard::new(4);
        let (mailbox, receiver) = mailbox::<Arc<()>>(4);
        let counted = Arc::new(());
        for _ in 0..3 {
            send(&shard, &mailbox, Arc::clone(&counted)).unwrap();
        }
        drop(receiver.try_recv());
        shard.release();
        send(&shard, &mailbox, Arc::clone(&counted)).unwrap();
        assert_eq!(Arc::strong_count(&counted), 4);
        drop(receiver);
        drop(mailbox);
        assert_eq!(Arc::strong_count(&counted), 1);
    }

    #[test]
    fn a_sleeping_worker_is_woken_and_a_stopped_one_exits() {
        let shard = Arc::new(SplitShard::new(2));
        let (mailbox, receiver) = mailbox::<u64>(2);
        let worker = {
            let shard = Arc::clone(&shard);
            std::thread::spawn(move || {
                let mut sum = 0;
                loop {
                    match receiver.recv(&shard, None) {
                        Received::Message(value) => {
                            sum += value;
                            shard.release();
                        }
                        Received::Stopped => return sum,
                        Received::Idle => unreachable!("no timeout"),
                    }
                }
            })
        };
        let mut sent = 0;
        let mut value = 1;
        while value <= 200 {
            match send(&shard, &mailbox, value) {
                Ok(()) => {
                    sent += value;
                    value += 1;
                }
                Err(_) => std::thread::yield_now(),
            }
        }
        shard.set_limit(0);
        mailbox.stop();
        assert_eq!(worker.join().unwrap(), sent);
    }

    #[test]
    fn an_idle_wait_times_out() {
        let shard = SplitShard::new(1);
        let (_mailbox, receiver) = mailbox::<u8>(1);
        assert_eq!(
            receiver.recv(&shard, Some(Duration::from_millis(1))),
            Received::Idle
        );
    }
}
