//! One worker thread's loop: take the next message, run its handler under
//! `catch_unwind`, give its slot back, reply; tick when idle; rebuild a
//! worker that panicked; after the stop message, exit once its shard holds
//! no slot.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use crate::admission::SplitShard;
use crate::latency::LatencyBatch;
use crate::sync::{lock, Ordering};

use super::envelope::{CallAnswer, Envelope, Failure, Ticks, UNTIMED};
use super::mailbox::{MailReceiver, Received};
use super::pinning::{pin_to, CoreId};
use super::record::{ShardLatency, ShardRecord};
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
}

/// What the loop carries from one message to the next.
struct Turn<W> {
    /// The worker, unless it panicked and could not be rebuilt yet.
    worker: Option<W>,
    /// The stop message has arrived.
    stopping: bool,
    /// When the previous (timed) handler finished; the start of the next
    /// one if its message was already waiting (saves a clock read).
    last_finished: Ticks,
    /// Latency samples not yet in the shard's histograms.
    batch: LatencyBatch,
}

impl<W, F> WorkerRun<W, F>
where
    W: Worker,
    F: Fn(usize) -> W + Send + Sync + 'static,
{
    pub(super) fn run(self, worker: W) {
        if let Some(core) = self.core {
            pin_to(core);
        }
        let mut turn = Turn {
            worker: Some(worker),
            stopping: false,
            last_finished: UNTIMED,
            batch: LatencyBatch::new(),
        };
        // After the stop message, exit once nothing holds a slot here: every
        // admitted message has then been posted and handled.
        while !(turn.stopping && self.shard().usage_from_releaser() == 0) {
            let Some((envelope, started)) = self.next_envelope(&mut turn) else {
                continue;
            };
            let check_worker = match envelope {
                Envelope::Stop => {
                    turn.stopping = true;
                    true
                }
                Envelope::Message {
                    request,
                    reply: Some(reply),
                    posted,
                } => self.call(&mut turn, request, reply, posted, started),
                Envelope::Message {
                    request,
                    reply: None,
                    posted,
                } => self.cast(&mut turn, request, posted, started),
            };
            if check_worker && turn.worker.is_none() {
                turn.worker = self.rebuild(&mut turn.stopping);
            }
        }
        self.flush(self.record(), &mut turn.batch);
        if let Some(mut worker) = turn.worker {
            let _ = catch_unwind(AssertUnwindSafe(|| worker.terminate()));
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
        match self.tick_interval {
            Some(interval) if !turn.stopping => match self.mailbox.recv_timeout(interval) {
                Received::Message(envelope) => Some((envelope, UNTIMED)),
                Received::Idle => {
                    self.tick(turn);
                    None
                }
            },
            _ => Some((self.mailbox.recv(), UNTIMED)),
        }
    }

    /// No mail for a tick interval: run the worker's tick, rebuilding the
    /// worker if it panicked (or was already gone).
    #[cold]
    fn tick(&self, turn: &mut Turn<W>) {
        if let Some(current) = turn.worker.as_mut() {
            if catch_unwind(AssertUnwindSafe(|| current.tick())).is_err() {
                ShardRecord::bump(&self.record().panics);
                turn.worker = None;
            }
        }
        if turn.worker.is_none() {
            turn.worker = self.rebuild(&mut turn.stopping);
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
            return false;
        }
        let Some(current) = turn.worker.as_mut() else {
            // Only when shutting down with no worker to be had.
            self.shard().release();
            ShardRecord::bump(&record.skipped);
            reply.send(Err(Failure::Closed(request)));
            return false;
        };
        let started = self.start_time(posted, started);
        let outcome = catch_unwind(AssertUnwindSafe(|| current.handle_call(request)));
        turn.last_finished = self.finish(record, &mut turn.batch, posted, started);
        // The caller who holds its reply sees its latencies.
        self.flush(record, &mut turn.batch);
        match outcome {
            Ok(value) => reply.send(Ok(value)),
            Err(_) => {
                reply.send(Err(Failure::Panicked));
                ShardRecord::bump(&record.panics);
                turn.worker = None;
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
            return false;
        };
        let started = self.start_time(posted, started);
        let outcome = catch_unwind(AssertUnwindSafe(|| current.handle_cast(request)));
        turn.last_finished = self.finish(record, &mut turn.batch, posted, started);
        if outcome.is_err() {
            ShardRecord::bump(&record.panics);
            turn.worker = None;
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
        batch.record_into(&self.shared.clock, queue_wait, handling);
    }

    /// Builds a replacement worker after a panic. A factory that panics too
    /// is retried with a growing pause; once the pool is closing, the shard
    /// gives up and answers what is left in its mailbox without a worker.
    #[cold]
    fn rebuild(&self, stopping: &mut bool) -> Option<W> {
        let record = &self.shared.records[self.shard];
        let mut pause = Duration::from_millis(1);
        loop {
            if let Ok(worker) = catch_unwind(AssertUnwindSafe(|| (self.factory)(self.shard))) {
                ShardRecord::bump(&record.restarts);
                return Some(worker);
            }
            if self.shared.closed.load(Ordering::Acquire) {
                *stopping = true;
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}
