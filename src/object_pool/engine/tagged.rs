//! The lookup order of a tagged take, shared by both pool faces: the tag
//! shelf (made at the first tagged take), an idle object of the tag, then
//! of its group, then an untagged one, then a free slot, then the eviction
//! of the least recently used tagged objects at the hard limit (CouchDB's).

use super::counters::Counted;
use super::hooks::TagHooks;
use super::member::MemberBox;
use super::shared::PoolShared;
use super::tag_shelf::TagShelf;
use super::wait_queue::Handoff;
use crate::object_pool::error::TakeError;
use crate::object_pool::tags::PoolTag;

/// The lookup order, shared by both faces.
impl<M: TagHooks> PoolShared<M> {
    /// The typed tag shelf, made at the first tagged take.
    pub(in crate::object_pool) fn tag_shelf(&self) -> &TagShelf<M::Object, M::Tag> {
        self.tags
            .get_or_init(|| Box::new(TagShelf::<M::Object, M::Tag>::new()))
            .as_any()
            .downcast_ref()
            .expect("a manager has one tag type")
    }

    /// Steps 1 to 5 of `take_tagged`: what it found, or `None` to wait.
    pub(in crate::object_pool) fn find_tagged(
        &self,
        tag: &M::Tag,
    ) -> Result<Option<Handoff<M::Object>>, TakeError<M::Error>> {
        if self.gate.is_closed() {
            return Err(TakeError::Closed);
        }
        let mut doomed = Vec::new();
        let found = self.find_tagged_into(tag, &mut doomed);
        self.expire_all(doomed);
        Ok(found)
    }

    /// [`find_tagged`](Self::find_tagged)'s search, setting expired objects
    /// aside in `doomed`.
    fn find_tagged_into(
        &self,
        tag: &M::Tag,
        doomed: &mut Vec<MemberBox<M::Object>>,
    ) -> Option<Handoff<M::Object>> {
        let index = self.tag_shelf();
        let tagged = std::iter::from_fn(|| index.take_exact(tag))
            .chain(std::iter::from_fn(|| index.take_group(tag.group())))
            .find_map(|idle| self.unexpired(idle, doomed));
        if let Some(idle) = tagged {
            self.counters.count(Counted::DirectTake);
            return Some(Handoff::Object(idle));
        }
        let home = self.home();
        let untagged = match self.pop_idle_into(home, Some(doomed)) {
            Some(idle) => Some(idle),
            None => self.steal(home, doomed),
        };
        if let Some(idle) = untagged {
            self.counters.replenish_more(1);
            self.maintenance.wake_now();
            return Some(Handoff::Object(idle));
        }
        if let Ok(shard) = self.slots.admit_from(home) {
            return Some(Handoff::Slot(shard));
        }
        let mut evicted = false;
        for _ in 0..eviction_count(self.slots.capacity()) {
            let Some(idle) = self.tags.get().and_then(|shelf| shelf.take_oldest()) else {
                break;
            };
            self.counters.count(Counted::Evicted);
            // A panicking `destroy` is not this taker's business.
            let _ = self.destroy(idle);
            evicted = true;
        }
        if evicted {
            if let Ok(shard) = self.slots.admit_from(home) {
                return Some(Handoff::Slot(shard));
            }
        }
        None
    }
}

/// How many idle tagged objects a tagged take at the hard limit evicts:
/// CouchDB's `round(0.1 × max + 1)`, with Erlang's rounding (halves away
/// from zero), in integers.
fn eviction_count(max_size: usize) -> usize {
    (max_size + 15) / 10
}

#[cfg(test)]
mod tests {
    use super::eviction_count;

    #[test]
    fn eviction_follows_couchdb() {
        let couchdb = |max: usize| (0.1 * max as f64 + 1.0).round() as usize;
        for max in 0..1000 {
            assert_eq!(eviction_count(max), couchdb(max), "max_size {max}");
        }
    }
}
