//! Taking an object: the fast pop from the home stack, and the cold path
//! that steals from other stacks, takes a free slot, or falls back on the
//! least recently used tagged object. Objects found expired are destroyed.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use crate::admission::home_shard;
use crate::sync::spin_lock;

use super::super::error::TakeError;
use super::counters::Counted;
use super::hooks::Hooks;
use super::member::MemberBox;
use super::shared::PoolShared;
use super::wait_queue::Handoff;

impl<M: Hooks> PoolShared<M> {
    /// The calling thread's home shard.
    #[inline]
    pub(in crate::object_pool) fn home(&self) -> usize {
        home_shard(self.idle.len())
    }

    /// Pops the top of `stack`'s idle objects, skipping (and destroying)
    /// objects whose lifetime ran out and, with `check_on_take`, those that
    /// fail [`Manager::check`]. Not for a caller that holds the queue lock:
    /// a destroy frees a slot, which takes that lock.
    #[inline]
    pub(in crate::object_pool) fn pop_idle(&self, stack: usize) -> Option<MemberBox<M::Object>> {
        self.pop_idle_into(stack, None)
    }

    /// [`pop_idle`](Self::pop_idle), putting the expired objects it skips
    /// into `doomed` (when given) for the caller to destroy once it has let
    /// go of the queue lock. With `doomed`, it runs no `check` either (user
    /// code must not run under the queue lock): the caller checks what it
    /// found with [`accept_found`](Self::accept_found).
    #[inline]
    pub(in crate::object_pool) fn pop_idle_into(
        &self,
        stack: usize,
        doomed: Option<&mut Vec<MemberBox<M::Object>>>,
    ) -> Option<MemberBox<M::Object>> {
        let member = self.pop_stack(stack)?;
        if self.gate.after_pop() {
            return self.after_pop(member, stack, doomed);
        }
        Some(member)
    }

    /// The top of one idle stack, counted as a take from it.
    #[inline]
    pub(in crate::object_pool) fn pop_stack(&self, stack: usize) -> Option<MemberBox<M::Object>> {
        spin_lock(&self.idle[stack]).pop()
    }

    /// The pool keeps `min_idle` objects, has lifetimes or checks on take:
    /// nudges the maintainer, and hands the object out only if its lifetime
    /// has not run out (checked against the precise clock) and, when the
    /// caller holds no lock, it passes the check; otherwise pops the next.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn after_pop(
        &self,
        mut member: MemberBox<M::Object>,
        stack: usize,
        mut doomed: Option<&mut Vec<MemberBox<M::Object>>>,
    ) -> Option<MemberBox<M::Object>> {
        if self.gate.keeps_min_idle() {
            self.maintenance.nudge();
        }
        loop {
            if member.may_expire() && self.gate.clock().precise() >= member.expires {
                self.counters.count(Counted::DiscardedPop);
                match doomed.as_deref_mut() {
                    Some(doomed) => doomed.push(member),
                    None => self.expire(member),
                }
            } else if doomed.is_none() && self.gate.check_on_take() {
                if let Some(member) = self.check_taken(member) {
                    return Some(member);
                }
            } else {
                return Some(member);
            }
            member = self.pop_stack(stack)?;
        }
    }

    /// `check_on_take`: asks the manager whether an object found idle still
    /// works. One that does not is destroyed (its slot freed, to a waiter
    /// first) and counted; `None` then, and the take goes on. A panicking
    /// `check` destroys the object too, then the panic goes on to the taker.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn check_taken(
        &self,
        mut member: MemberBox<M::Object>,
    ) -> Option<MemberBox<M::Object>> {
        let object = &mut member.object;
        let outcome = catch_unwind(AssertUnwindSafe(|| self.manager.check_now(object)));
        self.judge_check(member, outcome)
    }

    /// What a check on take answered, or its panic, for `member`: the
    /// object if it works; else it is destroyed and counted (`None`), and a
    /// panic goes on once it is.
    pub(in crate::object_pool) fn judge_check(
        &self,
        member: MemberBox<M::Object>,
        outcome: std::thread::Result<bool>,
    ) -> Option<MemberBox<M::Object>> {
        if let Ok(true) = outcome {
            return Some(member);
        }
        self.counters.count(Counted::DiscardedPop);
        self.counters.count(Counted::FailedTakeCheck);
        match outcome {
            Err(panic) => {
                let _ = self.destroy(member);
                resume_unwind(panic)
            }
            _ => {
                self.destroy_or_resume(member);
                None
            }
        }
    }

    /// Destroys an object whose lifetime ran out.
    pub(in crate::object_pool) fn expire(&self, idle: MemberBox<M::Object>) {
        self.counters.count(Counted::Expired);
        // A panicking `destroy` is not this taker's business.
        let _ = self.destroy(idle);
    }

    /// Destroys the expired objects a search under the queue lock set
    /// aside. Never called with that lock held.
    pub(in crate::object_pool) fn expire_all(&self, doomed: Vec<MemberBox<M::Object>>) {
        for idle in doomed {
            self.expire(idle);
        }
    }

    /// Looks for something free for a take that found its home stack
    /// empty: another shard's idle object, else a free slot, else
    /// `Overload`. Looks twice, so an object returned or a slot freed while
    /// the first look went by is still found. Expired objects the looks set
    /// aside are destroyed, which frees their slots; then it looks again, so
    /// an expired object never makes a take refuse in the slot it held (a
    /// take is refused only when every slot holds a live object, in use or
    /// idle, or one being made). The face then accepts what it found: it
    /// checks an idle object with `check_on_take`, and makes an object in a
    /// slot.
    #[cold]
    #[inline(never)]
    pub(in crate::object_pool) fn look(
        &self,
        home: usize,
    ) -> Result<Handoff<M::Object>, TakeError<M::Error>> {
        let mut doomed = Vec::new();
        loop {
            if self.gate.is_closed() {
                return Err(TakeError::Closed);
            }
            let found = (0..2).find_map(|_| self.find_free(home, &mut doomed));
            let destroyed_any = !doomed.is_empty();
            self.expire_all(std::mem::take(&mut doomed));
            match found {
                Some(found) => return Ok(found),
                None if destroyed_any => continue,
                None => return Err(TakeError::Overload),
            }
        }
    }

    /// An idle object from any stack but `home`'s, in probe order; expired
    /// ones found on the way go to `doomed`.
    pub(in crate::object_pool) fn steal(
        &self,
        home: usize,
        doomed: &mut Vec<MemberBox<M::Object>>,
    ) -> Option<MemberBox<M::Object>> {
        let count = self.idle.len();
        (1..count).find_map(|offset| self.pop_idle_into((home + offset) % count, Some(doomed)))
    }

    /// An idle untagged object from any stack, or else a free slot, or else
    /// the least recently used idle tagged object. Never creates or
    /// destroys (expired objects go to `doomed`): the caller may hold the
    /// queue lock.
    pub(in crate::object_pool) fn find_free(
        &self,
        home: usize,
        doomed: &mut Vec<MemberBox<M::Object>>,
    ) -> Option<Handoff<M::Object>> {
        let untagged = match self.pop_idle_into(home, Some(doomed)) {
            Some(idle) => Some(idle),
            None => self.steal(home, doomed),
        };
        if let Some(idle) = untagged {
            return Some(Handoff::Object(idle));
        }
        if let Ok(shard) = self.slots.admit_from(home) {
            return Some(Handoff::Slot(shard));
        }
        let idle = self.take_oldest_tagged(doomed)?;
        self.counters.count(Counted::DirectTake);
        Some(Handoff::Object(idle))
    }

    /// The least recently used idle tagged object whose lifetime has not
    /// run out (expired ones found on the way go to `doomed`).
    pub(in crate::object_pool) fn take_oldest_tagged(
        &self,
        doomed: &mut Vec<MemberBox<M::Object>>,
    ) -> Option<MemberBox<M::Object>> {
        let shelf = self.tags.get()?;
        loop {
            let idle = shelf.take_oldest()?;
            if let Some(idle) = self.unexpired(idle, doomed) {
                return Some(idle);
            }
        }
    }

    /// `idle`, unless its lifetime ran out: then it goes to `doomed`.
    pub(in crate::object_pool) fn unexpired(
        &self,
        idle: MemberBox<M::Object>,
        doomed: &mut Vec<MemberBox<M::Object>>,
    ) -> Option<MemberBox<M::Object>> {
        if idle.may_expire() && self.gate.clock().precise() >= idle.expires {
            doomed.push(idle);
            return None;
        }
        Some(idle)
    }
}
