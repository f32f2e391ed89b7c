//! The check on take of a take with a deadline: [`Manager::check`] run on a
//! helper thread, so that the take returns by its deadline however long the
//! check takes.
//!
//! The object goes to the helper with the pool's core, through a
//! [`PendingCreate`] cell (the same one-way hand-off as a bounded creation):
//! if the check answers by the deadline, the helper hands both back and the
//! take goes on as with an inline check; if not, the take answers
//! [`TakeError::Timeout`] and the helper, once the check returns, destroys
//! the object (its state is unknown), which frees its slot. The slot stays
//! counted until then: the object still exists, held by a call that has not
//! returned, so the pool's size never exceeds `max_size`.
//!
//! A take without a deadline (`try_take`) checks on its own thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use crate::sync::spawn_named;

use super::pending_create::PendingCreate;
use crate::object_pool::engine::Counted;
use crate::object_pool::engine::Hooks;
use crate::object_pool::engine::MemberBox;
use crate::object_pool::engine::PoolShared;
use crate::object_pool::error::TakeError;
use crate::object_pool::manager::Manager;

/// What a check on a helper thread answers: the object, whether it works
/// (or the check's panic), and the core, handed back with them (see
/// `create.rs`'s `Pending`).
type Checked<M> = (
    MemberBox<<M as Hooks>::Object>,
    std::thread::Result<bool>,
    Arc<PoolShared<M>>,
);

/// The object and the core, owned by the helper's closure: if the thread
/// never starts, dropping the closure destroys the object (freeing its
/// slot) rather than losing it.
struct CheckJob<M: Manager>(Option<Checking<M>>);

/// An object on its way to a check, with the core that checks it.
type Checking<M> = (MemberBox<<M as Hooks>::Object>, Arc<PoolShared<M>>);

impl<M: Manager> Drop for CheckJob<M> {
    fn drop(&mut self) {
        if let Some((member, shared)) = self.0.take() {
            shared.count(Counted::DiscardedPop);
            let _ = shared.destroy(member);
        }
    }
}

impl<M: Manager> PoolShared<M> {
    /// `check_on_take` for a take with `deadline` (`None`: on this thread,
    /// unbounded): the object if it works; `Ok(None)` if it failed, and was
    /// destroyed, so the take looks again; [`TakeError::Timeout`] if the
    /// check had not answered by the deadline. A panicking check destroys
    /// the object and the panic goes on to the taker.
    pub(in crate::object_pool) fn check_taken_by(
        &self,
        member: MemberBox<M::Object>,
        deadline: Option<Instant>,
    ) -> Result<Option<MemberBox<M::Object>>, TakeError<M::Error>> {
        let Some(deadline) = deadline else {
            return Ok(self.check_taken(member));
        };
        let Some(shared) = self.arc() else {
            return Ok(self.check_taken(member));
        };
        let pending: Arc<PendingCreate<Checked<M>>> = Arc::new(PendingCreate::new());
        let mut job = CheckJob(Some((member, shared)));
        let body = {
            let pending = Arc::clone(&pending);
            move || {
                let Some((mut member, shared)) = job.0.take() else {
                    return;
                };
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    shared.manager().check_now(member.object_mut())
                }));
                // Too late: the taker gave up, and the object's state is
                // unknown.
                if let Err((member, _, shared)) = pending.finish((member, outcome, shared)) {
                    let _ = shared.destroy(member);
                }
            }
        };
        if spawn_named("sidejob-check".to_owned(), None, body).is_err() {
            // The closure, and with it the object, was dropped: destroyed.
            return Ok(None);
        }
        let late = || {
            self.count(Counted::DiscardedPop);
            self.count(Counted::FailedTakeCheck);
            self.count(Counted::Timeout);
        };
        let Some((member, outcome, _core)) = pending.wait_until(deadline, late) else {
            // Told outside the cell's lock, once a spell.
            self.check_ran_late();
            return Err(TakeError::Timeout);
        };
        self.check_answered_in_time();
        Ok(self.judge_check(member, outcome))
    }
}
