//! The blocking face's steps of the engine's `maintainer.rs`: those that
//! call a [`Manager`]'s hooks directly or wait on a thread.

use crate::object_pool::engine::PoolShared;
use crate::object_pool::engine::RefillBackoff;
use crate::object_pool::engine::Wake;
use crate::object_pool::engine::{Refill, RefillFailed};
use crate::object_pool::manager::Manager;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

/// The blocking face's maintainer thread, which creates with
/// [`Manager::create`].
impl<M: Manager> PoolShared<M> {
    /// Tops the idle objects up to `min_idle`, stopping at the first failure
    /// (retried after the backoff), then replaces, as room allows, the
    /// untagged objects that tagged takes took, so that untagged takers
    /// keep finding one. Whether it made any object.
    pub(in crate::object_pool) fn refill(&self) -> Refill {
        let mut made_any = false;
        while self.short_of_min_idle() && self.create_idle().go_on()? {
            made_any = true;
        }
        let wanted = self.take_replenish();
        for made in 1..=wanted {
            if !self.replenished(self.create_idle(), wanted - made)? {
                break;
            }
            made_any = true;
        }
        Ok(made_any)
    }

    /// The maintainer thread's body: a round (reap, and refill unless held
    /// back by a failure), then sleep until nudged or the next round is due.
    pub(in crate::object_pool) fn maintain(
        &self,
        init_size: usize,
        started: std::sync::mpsc::SyncSender<()>,
    ) {
        self.create_initial(init_size);
        drop(started);
        let mut backoff = RefillBackoff::default();
        loop {
            let _ = catch_unwind(AssertUnwindSafe(|| self.reap()));
            if backoff.due(Instant::now()) {
                let refill =
                    catch_unwind(AssertUnwindSafe(|| self.refill())).unwrap_or(Err(RefillFailed));
                self.after_refill(&mut backoff, refill);
            }
            if self.maintenance().wait(self.pause(&backoff)) == Wake::Stop {
                return;
            }
        }
    }
}
