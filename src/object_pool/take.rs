//! Taking an object: the fast pop from the home stack, and the cold path
//! that steals from other stacks, takes a free slot, or falls back on the
//! least recently used tagged object. Objects found expired are destroyed.

use crate::admission::home_shard;
use crate::sync::{spin_lock, Ordering};

use super::error::TakeError;
use super::manager::Manager;
use super::member::MemberBox;
use super::shared::{bump, PoolShared};
use super::wait_queue::Handoff;

impl<M: Manager> PoolShared<M> {
    /// The calling thread's home shard.
    #[inline]
    pub(super) fn home(&self) -> usize {
        home_shard(self.idle.len())
    }

    /// Pops the top of `shard`'s idle stack, skipping (and destroying)
    /// objects whose lifetime ran out. Not for a caller that holds the
    /// queue lock: a destroy frees a slot, which takes that lock.
    #[inline]
    pub(super) fn pop_idle(&self, shard: usize) -> Option<MemberBox<M::Object>> {
        self.pop_idle_into(shard, None)
    }

    /// [`pop_idle`](Self::pop_idle), putting the expired objects it skips
    /// into `doomed` (when given) for the caller to destroy once it has let
    /// go of the queue lock.
    #[inline]
    pub(super) fn pop_idle_into(
        &self,
        shard: usize,
        doomed: Option<&mut Vec<MemberBox<M::Object>>>,
    ) -> Option<MemberBox<M::Object>> {
        let mut stack = spin_lock(&self.idle[shard]);
        let idle = stack.members.pop()?;
        stack.takes += 1;
        drop(stack);
        if self.gate.after_pop.load(Ordering::Relaxed) {
            return self.after_pop(idle, doomed);
        }
        Some(idle)
    }

    /// The pool keeps `min_idle` objects or has lifetimes: nudges the
    /// maintainer, and hands the object out only if it has not expired.
    #[cold]
    #[inline(never)]
    pub(super) fn after_pop(
        &self,
        idle: MemberBox<M::Object>,
        doomed: Option<&mut Vec<MemberBox<M::Object>>>,
    ) -> Option<MemberBox<M::Object>> {
        if self.gate.min_idle.load(Ordering::Relaxed) > 0 {
            self.maintenance.nudge();
        }
        if idle.may_expire() {
            return self.unless_expired(idle, doomed);
        }
        Some(idle)
    }

    /// An object with a lifetime was popped: hands it out only if the
    /// lifetime has not run out, checked against the precise clock.
    #[cold]
    #[inline(never)]
    pub(super) fn unless_expired(
        &self,
        idle: MemberBox<M::Object>,
        doomed: Option<&mut Vec<MemberBox<M::Object>>>,
    ) -> Option<MemberBox<M::Object>> {
        if self.gate.clock.precise() < idle.expires {
            return Some(idle);
        }
        let shard = idle.shard;
        bump(&self.counters.expired_pops);
        match doomed {
            Some(doomed) => {
                doomed.push(idle);
                self.pop_idle_into(shard, Some(doomed))
            }
            None => {
                self.expire(idle);
                self.pop_idle(shard)
            }
        }
    }

    /// Destroys an object whose lifetime ran out.
    pub(super) fn expire(&self, idle: MemberBox<M::Object>) {
        bump(&self.counters.expired);
        // A panicking `destroy` is not this taker's business.
        let _ = self.destroy(idle);
    }

    /// Destroys the expired objects a search under the queue lock set
    /// aside. Never called with that lock held.
    pub(super) fn expire_all(&self, doomed: Vec<MemberBox<M::Object>>) {
        for idle in doomed {
            self.expire(idle);
        }
    }

    /// [`take_cold`](Self::take_cold) for `try_take`, which counts a refusal.
    #[cold]
    #[inline(never)]
    pub(super) fn try_take_cold(&self) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let taken = self.take_cold();
        if let Err(TakeError::Overload) = taken {
            bump(&self.counters.rejected);
        }
        taken
    }

    /// The home stack's top, or else the cold path.
    #[inline]
    pub(super) fn try_take(&self) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        // No `closed` check here: `close` empties the stacks and nothing is
        // pushed after, so a closed pool always takes the cold path.
        match self.pop_idle(self.home()) {
            Some(idle) => Ok(idle),
            None => self.take_cold(),
        }
    }

    /// Nothing idle at home: another shard's idle object, else a new object,
    /// else `Overload`. Looks twice, so an object returned or a slot freed
    /// while the first look went by is still found. Expired objects the
    /// looks set aside are destroyed, which frees their slots; then it looks
    /// again, so an expired object never makes a take refuse in the slot it
    /// held (a take is refused only when every slot holds a live object, in
    /// use or idle, or one being made).
    #[cold]
    #[inline(never)]
    pub(super) fn take_cold(&self) -> Result<MemberBox<M::Object>, TakeError<M::Error>> {
        let home = self.home();
        let mut doomed = Vec::new();
        loop {
            if self.gate.closed.load(Ordering::Relaxed) {
                return Err(TakeError::Closed);
            }
            let found = (0..2).find_map(|_| self.find_free(home, &mut doomed));
            let destroyed_any = !doomed.is_empty();
            self.expire_all(std::mem::take(&mut doomed));
            match found {
                Some(found) => return self.accept(found),
                None if destroyed_any => continue,
                None => return Err(TakeError::Overload),
            }
        }
    }

    /// An idle object from any stack but `home`'s, in probe order; expired
    /// ones found on the way go to `doomed`.
    pub(super) fn steal(
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
    pub(super) fn find_free(
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
        bump(&self.counters.direct_takes);
        Some(Handoff::Object(idle))
    }

    /// The least recently used idle tagged object whose lifetime has not
    /// run out (expired ones found on the way go to `doomed`).
    pub(super) fn take_oldest_tagged(
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
    pub(super) fn unexpired(
        &self,
        idle: MemberBox<M::Object>,
        doomed: &mut Vec<MemberBox<M::Object>>,
    ) -> Option<MemberBox<M::Object>> {
        if idle.may_expire() && self.gate.clock.precise() >= idle.expires {
            doomed.push(idle);
            return None;
        }
        Some(idle)
    }
}
