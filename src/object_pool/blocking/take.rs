//! The blocking face's steps of the engine's `take.rs`: those that
//! call a [`Manager`]'s hooks directly or wait on a thread.

use crate::object_pool::engine::Counted;
use crate::object_pool::engine::MemberBox;
use crate::object_pool::engine::PoolShared;
use crate::object_pool::error::TakeError;
use crate::object_pool::manager::Manager;
use std::time::Instant;

/// The blocking face's takes, which create on the caller's thread.
impl<M: Manager> PoolShared<M> {
    /// [`take_cold`](Self::take_cold) for `try_take`, which counts a refusal.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn try_take_cold(
        &self,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let taken = self.take_cold(None);
        if let Err(TakeError::Overload) = taken {
            self.count(Counted::Rejected);
        }
        taken
    }

    /// The home stack's top, or else the cold path; `deadline` is the
    /// take's own, for a creation.
    #[inline]
    pub(in crate::object_pool) fn try_take(
        &self,
        home: usize,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        // No `closed` check here: `close` empties the stacks and nothing is
        // pushed after, so a closed pool always takes the cold path. A
        // check on take by a deadline runs on the cold path too.
        let bounded_check = deadline.is_some() && self.checks_on_take();
        if !bounded_check {
            if let Some(idle) = self.pop_idle(home) {
                return Ok(idle);
            }
        }
        self.take_cold(deadline)
    }

    /// Nothing idle at home: what [`look`](Self::look) finds, accepted (a
    /// new object in a slot it found), else `Overload`. A creation it
    /// starts ends by `deadline`, the take's own.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn take_cold(
        &self,
        deadline: Option<Instant>,
    ) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let home = self.home();
        loop {
            let found = self.look(home)?;
            if let Some(member) = self.accept_found(found, deadline)? {
                return Ok(member);
            }
            // It failed its check and was destroyed: look again.
        }
    }
}
