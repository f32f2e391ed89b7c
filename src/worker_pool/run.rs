//! One worker thread's loop: take the next message, run its handler under
//! `catch_unwind`, give its slot back, reply; tick when idle; rebuild a
//! worker that panicked; once its mailbox is stopped, exit when its shard holds
//! no slot.
//!
//! Every user value the loop lets go of (a request skipped, a reply the
//! caller no longer waits for, a worker that panicked, a panic's payload) is
//! dropped under `catch_unwind` too: a `Drop` that panics must not kill the
//! thread while its shard admits. Should the thread unwind all the same, its
//! shard goes down for good and the loop goes on answering its mailbox.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use crate::admission::{limit_for, SplitShard};
use crate::latency::LatencyBatch;
use crate::panics::{drop_quietly, run_quietly};
use crate::sync::{lock, Ordering};

use super::envelope::{CallAnswer, Envelope, Failure, Ticks, UNTIMED};
use super::mailbox::{MailReceiver, Received};
use super::pinning::{pin_to, CoreId};
use super::record::{ShardLatency, ShardRecord};
use super::restart::{Backoff, RestartIntensity};
use super::shared::Shared;
use super::Worker;

/// One worker thread's loop.
pub(super) struct WorkerRun<W: Worker, F> {
    pub(super) shared: Arc<Shared<W>>,
    pub(super) shard: usize,
    pub(super) mailbox: MailReceiver<Envelope<W>>,
    pub(super) factory: Arc<F>,
    pub(super) tick_interval: Option<Duration>,
    pub(super) core: Option<CoreId>,
    /// `max_restarts` and `restart_window`.
    pub(super) max_restarts: u32,
    pub(super) restart_window: Duration,
}

/// What the loop carries from one message to the next.
struct Turn<W> {
    /// The worker, unless it panicked and could not be rebuilt yet.
    worker: Option<W>,
    /// The mailbox is stopped and nothing admitted is left.
    stopping: bool,
    /// When the previous (timed) handler finished; the start of the next
    /// one if its message was already waiting (saves a clock read).
    last_finished: Ticks,
    /// Latency samples not yet in the shard's histograms.
    batch: LatencyBatch,
    /// This shard's recent restarts.
    intensity: RestartIntensity,
    /// The restart intensity was exceeded: the shard is down for the pool's
    /// life, and answers what is left in its mailbox without a worker.
    gave_up: bool,
}

/// Counts the worker thread out of the pool's running workers when it ends,
/// however it ends.
struct Ended<'a, W: Worker>(&'a Shared<W>);

impl<W: Worker> Drop for Ended<'_, W> {
    fn drop(&mut self) {
        self.0.leave_worker();
        self.0.worker_ended();
    }
}

impl<W, F> WorkerRun<W, F>
where
    W: Worker,
    F: Fn(usize) -> W + Send + Sync + 'static,
{
    pub(super) fn run(self, worker: W) {
        let _ended = Ended(&self.shared);
        self.shared.enter_worker();
        if let Some(core) = self.core {
            pin_to(core);
        }
        let mut turn = Turn {
            worker: Some(worker),
            stopping: false,
            last_finished: UNTIMED,
            batch: LatencyBatch::new(),
            intensity: RestartIntensity::new(self.max_restarts, self.restart_window),
            gave_up: false,
        };
        while let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.serve(&mut turn))) {
            // Unwound past every guard: the shard goes down for good, and
            // the loop answers the rest of its mailbox (calls get their
            // requests back) until it is stopped and empty.
            drop_quietly(panic);
            drop_quietly(turn.worker.take());
            self.gave_up(&mut turn);
            ShardRecord::bump(&self.record().panics);
            self.set_up(false);
        }
        self.flush(self.record(), &mut turn.batch);
        if let Some(mut worker) = turn.worker.take() {
            run_quietly(|| worker.terminate());
            drop_quietly(worker);
        }
    }

    /// The loop: once the mailbox is stopped, it ends once nothing holds a
    /// slot here: every admitted message has then been posted and handled.
    fn serve(&self, turn: &mut Turn<W>) {
        while !(turn.stopping && self.shard().usage_from_releaser() == 0) {
            let Some((envelope, started)) = self.next_envelope(turn) else {
                continue;
            };
            let Envelope {
                request,
                reply,
                posted,
            } = envelope;
            let check_worker = match reply {
                Some(reply) => self.call(turn, request, reply, posted, started),
                None => self.cast(turn, request, posted, started),
            };
            if check_worker && turn.worker.is_none() {
                self.rebuild(turn);
            }
        }
    }

    /// This worker's shard.
    #[inline]
    fn shard(&self) -> &SplitShard {
        &self.shared.shards[self.shard]
    }

    /// What this worker records.
    #[inline]
    fn record(&self) -> &ShardRecord {
        &self.shared.records[self.shard]
    }

    /// The next message, and when its handling may start (see
    /// [`start_time`](Self::start_time)); `None` after an idle tick.
    #[inline]
    fn next_envelope(&self, turn: &mut Turn<W>) -> Option<(Envelope<W>, Ticks)> {
        if let Some(envelope) = self.mailbox.try_recv() {
            return Some((envelope, turn.last_finished));
        }
        // Going idle: what was timed shows in the stats first.
        self.flush(self.record(), &mut turn.batch);
        match self.mailbox.recv(self.shard(), self.tick_interval) {
            Received::Message(envelope) => Some((envelope, UNTIMED)),
            Received::Idle => {
                self.tick(turn);
                None
            }
            Received::Stopped => {
                // Nothing admitted is left: the loop ends.
                turn.stopping = true;
                None
            }
        }
    }

    /// No mail for a tick interval: run the worker's tick, rebuilding the
    /// worker if it panicked (or was already gone).
    #[cold]
    fn tick(&self, turn: &mut Turn<W>) {
        if let Some(current) = turn.worker.as_mut() {
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| current.tick())) {
                drop_quietly(panic);
                self.died(turn);
            }
        }
        if turn.worker.is_none() {
            self.rebuild(turn);
        }
    }

    /// Handles a call and sends its reply; `false` if it was skipped (its
    /// caller gave up, or there is no worker), when no rebuild is due.
    #[inline]
    fn call(
        &self,
        turn: &mut Turn<W>,
        request: W::Request,
        reply: CallAnswer<W>,
        posted: Ticks,
        started: Ticks,
    ) -> bool {
        let record = self.record();
        if reply.is_abandoned() {
            // The caller gave up before the worker got here.
            self.shard().release();
            ShardRecord::bump(&record.skipped);
            drop_quietly(request);
            return false;
        }
        let Some(current) = turn.worker.as_mut() else {
            // The shard is down for good, or shutting down with no worker
            // to be had: the request never ran, and comes back (dropped, if
            // its caller stopped waiting meanwhile).
            self.shard().release();
            ShardRecord::bump(&record.skipped);
            let failure = if turn.gave_up {
                Failure::Down(request)
            } else {
                Failure::Closed(request)
            };
            run_quietly(move || reply.send(Err(failure)));
            return false;
        };
        let started = self.start_time(posted, started);
        let outcome = catch_unwind(AssertUnwindSafe(|| current.handle_call(request)));
        turn.last_finished = self.finish(record, &mut turn.batch, posted, started);
        // The caller who holds its reply sees its latencies.
        self.flush(record, &mut turn.batch);
        match outcome {
            // A caller that stopped waiting drops the value in `send`.
            Ok(value) => run_quietly(move || reply.send(Ok(value))),
            Err(panic) => {
                drop_quietly(panic);
                // Rebuilt (or down) before the caller hears, so a caller
                // that tries again at once finds the shard up again.
                self.died(turn);
                run_quietly(move || reply.send(Err(Failure::Panicked)));
            }
        }
        true
    }

    /// Handles a cast; `false` if it was skipped for want of a worker.
    #[inline]
    fn cast(&self, turn: &mut Turn<W>, request: W::Request, posted: Ticks, started: Ticks) -> bool {
        let record = self.record();
        let Some(current) = turn.worker.as_mut() else {
            self.shard().release();
            ShardRecord::bump(&record.skipped);
            drop_quietly(request);
            return false;
        };
        let started = self.start_time(posted, started);
        let outcome = catch_unwind(AssertUnwindSafe(|| current.handle_cast(request)));
        turn.last_finished = self.finish(record, &mut turn.batch, posted, started);
        if let Err(panic) = outcome {
            drop_quietly(panic);
            self.died(turn);
        }
        true
    }

    /// A handler returned (or panicked): free its slot, then count it and,
    /// if it was timed (`started` is set), keep its latencies in `batch` and
    /// return when it finished. The slot goes back before the reply, so a
    /// caller holding its reply sees its slot free.
    #[inline]
    fn finish(
        &self,
        record: &ShardRecord,
        batch: &mut LatencyBatch,
        posted: Ticks,
        started: Ticks,
    ) -> Ticks {
        let finished = if started == UNTIMED {
            UNTIMED
        } else {
            self.shared.now()
        };
        self.shard().release();
        ShardRecord::bump(&record.handled);
        if started != UNTIMED && batch.push(posted.get(), started.get(), finished.get()) {
            self.flush(record, batch);
        }
        finished
    }

    /// When the handling of a message posted at `posted` starts: untimed for
    /// an untimed message, else `waiting_since` if the message was already
    /// waiting when the previous timed one finished, else now.
    #[inline]
    fn start_time(&self, posted: Ticks, waiting_since: Ticks) -> Ticks {
        if posted == UNTIMED {
            UNTIMED
        } else if waiting_since != UNTIMED {
            waiting_since
        } else {
            self.shared.now()
        }
    }

    /// Records the latencies kept in `batch` into the shard's histograms,
    /// where [`WorkerPool::stats`](super::WorkerPool::stats) reads them. Done when the batch is full,
    /// before a reply, and before the worker waits for mail, so a sample is
    /// late in the stats only while its worker is busy with more messages.
    #[inline]
    fn flush(&self, record: &ShardRecord, batch: &mut LatencyBatch) {
        if !batch.is_empty() {
            self.flush_batch(record, batch);
        }
    }

    #[cold]
    #[inline(never)]
    fn flush_batch(&self, record: &ShardRecord, batch: &mut LatencyBatch) {
        let mut latency = lock(&record.latency);
        let ShardLatency {
            queue_wait,
            handling,
        } = &mut *latency;
        batch.record_into(crate::clock::clock(), queue_wait, handling);
    }

    /// The worker panicked: it is gone, and the shard admits nothing until
    /// a new one is built (the probe sends work to the other shards, or
    /// answers `Overload` at once when all are down). The death counts as a
    /// restart; past the restart intensity the shard stays down for good.
    /// Otherwise the factory is called at once.
    #[cold]
    fn died(&self, turn: &mut Turn<W>) {
        ShardRecord::bump(&self.record().panics);
        drop_quietly(turn.worker.take());
        self.set_up(false);
        crate::events::warn_event!(
            target: "sidejob::worker_pool",
            worker = std::thread::current().name().unwrap_or_default(),
            shard = self.shard,
            "a worker panicked: its shard admits nothing until it is rebuilt",
        );
        if turn.intensity.allow_another() {
            self.call_factory(turn);
        } else {
            self.gave_up(turn);
        }
    }

    /// Past the restart intensity: the shard stays down for good.
    #[cold]
    fn gave_up(&self, turn: &mut Turn<W>) {
        turn.gave_up = true;
        crate::events::error_event!(
            target: "sidejob::worker_pool",
            worker = std::thread::current().name().unwrap_or_default(),
            shard = self.shard,
            "a shard is down for good: past its restart intensity",
        );
    }

    /// One factory call: on success the worker is back and the shard admits
    /// again; a panic counts as a restart, past the intensity for good.
    fn call_factory(&self, turn: &mut Turn<W>) {
        match catch_unwind(AssertUnwindSafe(|| (self.factory)(self.shard))) {
            Ok(worker) => {
                turn.worker = Some(worker);
                // Open before counting: whoever sees the restart counted
                // finds the shard admitting.
                self.set_up(true);
                ShardRecord::bump(&self.record().restarts);
                crate::events::info_event!(
                    target: "sidejob::worker_pool",
                    worker = std::thread::current().name().unwrap_or_default(),
                    shard = self.shard,
                    "a worker was rebuilt: its shard admits again",
                );
            }
            Err(panic) => {
                drop_quietly(panic);
                if !turn.intensity.allow_another() {
                    self.gave_up(turn);
                }
            }
        }
    }

    /// The factory panicked when the worker died: calls it again, backing
    /// off (see `restart.rs`), until a worker is built or the shard gives
    /// up, for good past the restart intensity, or for now once the pool is
    /// closing. Without a worker, the shard answers what is left in its
    /// mailbox.
    #[cold]
    fn rebuild(&self, turn: &mut Turn<W>) {
        let mut backoff = Backoff::new();
        while turn.worker.is_none() && !turn.gave_up {
            if self.shared.closed.load(Ordering::Acquire) {
                turn.stopping = true;
                return;
            }
            backoff.pause();
            self.call_factory(turn);
        }
    }

    /// Opens the shard to admissions at its share of the capacity (`up`),
    /// or closes it (limit 0). Under the pool's limits lock, and never
    /// opened once the pool is closing, so a rebuild cannot reopen a shard
    /// that shutdown closed.
    fn set_up(&self, up: bool) {
        let shared = &self.shared;
        let _limits = lock(&shared.limits);
        if up && shared.closing.load(Ordering::Acquire) {
            return;
        }
        let share = limit_for(shared.capacity, shared.shards.len(), self.shard);
        self.shard().set_limit(if up { share } else { 0 });
        // Release: a reader that sees the shard up (`Acquire`) sees its
        // limit restored too.
        self.record().up.store(up, Ordering::Release);
    }
}
