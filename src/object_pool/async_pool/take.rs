//! Taking an object for the async face: the same idle stacks, slots and
//! FIFO queue as the blocking face; a waiter waits on its task's waker
//! instead of a condition variable, and a creation is a future.
//!
//! # Cancel safety
//!
//! A take future may be dropped at any `.await`; a guard then hands on
//! whatever the take held: a queued waiter leaves the queue, and what it
//! was handed goes to the next waiter or back idle ([`Queued`]); an object
//! under `check` goes back idle, unchecked ([`FoundIdle`]); a creation's
//! future is dropped and then its slot freed (`create.rs`). A take that
//! was polled and dropped unfinished is counted in `cancelled`
//! ([`TakeWatch`]).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::sync::{AtomicU64, Ordering};

use super::super::engine::Held;
use super::super::engine::MemberBox;
use super::super::engine::PoolShared;
use super::super::engine::{Handoff, WaitCell};
use super::super::engine::{Joined, Served};
use super::super::error::TakeError;
use super::manager::{AsyncManaged, AsyncManager};
use super::AsyncPooled;
use crate::object_pool::engine::Counted;

/// Counts a take future dropped after its first poll and before it
/// finished.
pub(super) struct TakeWatch<'a> {
    cancelled: &'a AtomicU64,
    finished: bool,
}

impl<'a> TakeWatch<'a> {
    pub(super) fn new(cancelled: &'a AtomicU64) -> Self {
        TakeWatch {
            cancelled,
            finished: false,
        }
    }

    /// The take answered: not a cancellation.
    pub(super) fn finish<T>(mut self, answer: T) -> T {
        self.finished = true;
        answer
    }
}

impl Drop for TakeWatch<'_> {
    fn drop(&mut self) {
        // A panic in a poll is not a cancellation.
        if !self.finished && !std::thread::panicking() {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// An object found idle and not yet handed out (its `check` may run): if
/// the take is dropped meanwhile, the object goes back idle (it was never
/// used); if the check panics, it is destroyed.
pub(super) struct FoundIdle<'a, M: AsyncManager> {
    shared: &'a PoolShared<AsyncManaged<M>>,
    held: Held<M::Object>,
}

impl<'a, M: AsyncManager> FoundIdle<'a, M> {
    pub(super) fn new(
        shared: &'a PoolShared<AsyncManaged<M>>,
        member: MemberBox<M::Object>,
    ) -> Self {
        FoundIdle {
            shared,
            held: Held::new(member),
        }
    }
}

impl<M: AsyncManager> Drop for FoundIdle<'_, M> {
    fn drop(&mut self) {
        if let Some(member) = self.held.take() {
            if std::thread::panicking() {
                self.shared.count(Counted::DiscardedPop);
                self.shared.count(Counted::FailedTakeCheck);
                let _ = self.shared.destroy(member);
            } else {
                let home = member.home();
                self.shared.put_idle(member, home);
            }
        }
    }
}

/// A waiter in the queue: if its take is dropped, it leaves the queue and
/// hands on what it was handed, if anything.
struct Queued<'a, M: AsyncManager> {
    shared: &'a PoolShared<AsyncManaged<M>>,
    key: u64,
    cell: Arc<WaitCell<M::Object>>,
    started: Instant,
    left: bool,
}

impl<M: AsyncManager> Queued<'_, M> {
    /// Stops waiting: what was handed, or `Expired`.
    fn leave(mut self) -> Handoff<M::Object> {
        self.left = true;
        self.shared.stop_waiting(self.key, &self.cell, self.started)
    }
}

impl<M: AsyncManager> Drop for Queued<'_, M> {
    fn drop(&mut self) {
        if !self.left {
            let handoff = self.shared.stop_waiting(self.key, &self.cell, self.started);
            self.shared.hand_on(handoff);
        }
    }
}

/// A take future: the fast path (a plain pop, nothing to check) answers in
/// the first poll; anything else becomes one boxed future, so this one stays
/// three words whatever the manager's futures weigh.
pub(super) struct Take<'a, M: AsyncManager, F> {
    shared: &'a PoolShared<AsyncManaged<M>>,
    state: TakeState<'a, M, F>,
}

enum TakeState<'a, M: AsyncManager, F> {
    /// Not polled yet: `cold` makes the rest of the take from the home
    /// shard and what the pop found.
    Start { cold: F },
    /// Past the fast path.
    Cold(Pin<Box<dyn Future<Output = Taken<'a, M>> + Send + 'a>>),
    /// Answered.
    Done,
}

/// What a take answers: the member and the home shard it goes back to.
pub(super) type Taken<'a, M> =
    Result<(MemberBox<<M as AsyncManager>::Object>, usize), TakeError<<M as AsyncManager>::Error>>;

impl<'a, M, F, Fut> Take<'a, M, F>
where
    M: AsyncManager,
    F: FnOnce(usize, Option<FoundIdle<'a, M>>) -> Fut,
    Fut: Future<Output = Taken<'a, M>> + Send + 'a,
{
    pub(super) fn new(shared: &'a PoolShared<AsyncManaged<M>>, cold: F) -> Self {
        Take {
            shared,
            state: TakeState::Start { cold },
        }
    }
}

impl<M: AsyncManager, F> Unpin for Take<'_, M, F> {}

impl<'a, M, F, Fut> Future for Take<'a, M, F>
where
    M: AsyncManager,
    F: FnOnce(usize, Option<FoundIdle<'a, M>>) -> Fut,
    Fut: Future<Output = Taken<'a, M>> + Send + 'a,
{
    type Output = Result<AsyncPooled<'a, M>, TakeError<M::Error>>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let shared = self.shared;
        if let TakeState::Start { .. } = self.state {
            let home = shared.home();
            let popped = match shared.pop_ready(home) {
                Ok(member) => {
                    self.state = TakeState::Done;
                    return Poll::Ready(Ok(AsyncPooled::new(shared, member, home)));
                }
                Err(popped) => popped,
            };
            let TakeState::Start { cold } = std::mem::replace(&mut self.state, TakeState::Done)
            else {
                unreachable!("checked above")
            };
            self.state = TakeState::Cold(Box::pin(cold(home, popped)));
        }
        let TakeState::Cold(cold) = &mut self.state else {
            panic!("a take polled after it answered");
        };
        let taken = std::task::ready!(cold.as_mut().poll(cx));
        self.state = TakeState::Done;
        Poll::Ready(taken.map(|(member, home)| AsyncPooled::new(shared, member, home)))
    }
}

impl<M: AsyncManager> PoolShared<AsyncManaged<M>> {
    /// The fast path's pop: an object that needs no check, or else what
    /// the pop found that does (`None`: nothing, or only expired objects).
    #[inline]
    pub(super) fn pop_ready(
        &self,
        home: usize,
    ) -> Result<MemberBox<M::Object>, Option<FoundIdle<'_, M>>> {
        let Some(member) = self.pop_stack(home) else {
            return Err(None);
        };
        // `after_pop` is set whenever `check_on_take` is: one load decides.
        if !self.pops_need_care() {
            return Ok(member);
        }
        match self.after_pop(member, home, None) {
            Some(member) if !self.checks_on_take() => Ok(member),
            found => Err(found.map(|member| FoundIdle::new(self, member))),
        }
    }

    /// With `check_on_take`, awaits [`AsyncManager::check`] on an object
    /// found idle, until `deadline` (the take's own, if any): `Ok(None)` if
    /// it failed, and was destroyed (its slot freed, to a waiter first);
    /// [`TakeError::Timeout`] if the check had not answered by the
    /// deadline: its future is dropped and the object, whose state is
    /// unknown, destroyed, never handed out.
    async fn checked(
        &self,
        mut found: FoundIdle<'_, M>,
        deadline: Option<Instant>,
    ) -> Result<Option<MemberBox<M::Object>>, TakeError<M::Error>> {
        if !self.checks_on_take() {
            return Ok(Some(found.held.take_member()));
        }
        let works = {
            let check = self.manager().0.check(found.held.object_mut());
            match deadline {
                None => Some(check.await),
                Some(deadline) => tokio::time::timeout_at(deadline.into(), check).await.ok(),
            }
        };
        let member = found.held.take_member();
        let late = works.is_none();
        if late {
            self.check_ran_late();
        } else if deadline.is_some() {
            self.check_answered_in_time();
        }
        if works == Some(true) {
            return Ok(Some(member));
        }
        self.count(Counted::DiscardedPop);
        self.count(Counted::FailedTakeCheck);
        if late {
            self.count(Counted::Timeout);
        }
        self.destroy_or_resume(member);
        if late {
            Err(TakeError::Timeout)
        } else {
            Ok(None)
        }
    }

    /// What a taker does with what it found or was handed: an object found
    /// idle is checked (`Ok(None)` if it failed), a slot gets a new object
    /// made by `deadline`; the refusals are answered.
    pub(super) async fn accept_async(
        &self,
        handoff: Handoff<M::Object>,
        found_idle: bool,
        deadline: Option<Instant>,
    ) -> Result<Option<MemberBox<M::Object>>, TakeError<M::Error>> {
        match self.served(handoff)? {
            Served::Object(member) if found_idle => {
                self.checked(FoundIdle::new(self, member), deadline).await
            }
            Served::Object(member) => Ok(Some(member)),
            Served::Slot(shard) => self.create_for_async_taker(shard, deadline).await.map(Some),
        }
    }

    /// The object the home stack gave (`popped`), checked, else another
    /// idle object (checked), else a new one in a free slot, else
    /// `Overload`; a creation ends by `deadline`.
    pub(super) async fn take_now(
        &self,
        home: usize,
        popped: Option<FoundIdle<'_, M>>,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        if let Some(found) = popped {
            if let Some(member) = self.checked(found, deadline).await? {
                return Ok(member);
            }
        }
        loop {
            let found = self.look(home)?;
            if let Some(member) = self.accept_async(found, true, deadline).await? {
                return Ok(member);
            }
        }
    }

    /// [`take_now`](Self::take_now), else waits in the queue until
    /// `deadline` (`None`: no end).
    pub(super) async fn take_waiting(
        &self,
        home: usize,
        popped: Option<FoundIdle<'_, M>>,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        match self.take_now(home, popped, deadline).await {
            Err(TakeError::Overload) => self.wait_in_queue(deadline).await,
            taken => taken,
        }
    }

    /// Waits in the FIFO queue until `deadline` (`None`: no end), unless
    /// something is free after all (checked when found idle).
    pub(super) async fn wait_in_queue(
        &self,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        loop {
            let started = Instant::now();
            let (key, cell) = match self.join_queue(deadline)? {
                Joined::Found(found) => {
                    match self.accept_async(found, true, deadline).await? {
                        Some(member) => return Ok(member),
                        // It failed its check: look again, by the same
                        // deadline.
                        None => continue,
                    }
                }
                Joined::Queued { key, cell } => (key, cell),
            };
            let queued = Queued {
                shared: self,
                key,
                cell,
                started,
                left: false,
            };
            let filled = poll_fn(|cx| queued.cell.poll_filled(cx));
            match deadline {
                Some(deadline) => {
                    let _ = tokio::time::timeout_at(deadline.into(), filled).await;
                }
                None => filled.await,
            }
            // Handed straight from a returner: not checked.
            let handoff = queued.leave();
            if let Some(member) = self.accept_async(handoff, false, deadline).await? {
                return Ok(member);
            }
        }
    }
}
