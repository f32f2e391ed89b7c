//! The shelf of idle tagged objects, indexed by tag and by group, in least
//! recently used order.
//!
//! Untagged idle objects stay on the per-shard stacks of `idle_stacks.rs`, where
//! the fast path finds them; a tagged object comes back here instead. Each
//! idle tagged object gets a sequence number when it is shelved, which orders
//! the shelf from least to most recently returned. Three maps share those
//! numbers: the objects by number (so the least recently used is the first
//! entry), and the numbers by tag and by group. Every lookup, whether by
//! exact tag, by group or for the least recently used, is a few `O(log n)`
//! map operations and never a scan.
//!
//! The pool's type names only its manager, not the tag type, so the pool
//! holds the shelf as a [`DynTagShelf`] trait object and each object's tag as
//! `dyn Any`; `take_tagged`, which knows the tag type, downcasts to the
//! typed [`TagShelf`].

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::Hash;

use crate::sync::{lock, Mutex};

use super::super::tags::PoolTag;
use super::member::MemberBox;

/// The shelf as the untyped parts of the pool see it.
pub(in crate::object_pool) trait DynTagShelf<O>: Send + Sync {
    /// Shelves `idle` if `admit` (called under the shelf's
    /// lock) says so; otherwise hands it back.
    fn put(&self, idle: MemberBox<O>, admit: &dyn Fn() -> bool) -> Result<(), MemberBox<O>>;
    /// Takes the least recently used idle tagged object.
    fn take_oldest(&self) -> Option<MemberBox<O>>;
    /// Takes every idle tagged object.
    fn drain(&self) -> Vec<MemberBox<O>>;
    /// Takes the objects whose lifetime ran out by `now`, and those idle
    /// longer than `idle_limit`.
    fn reap(&self, now: u64, idle_limit: Option<u64>) -> (Vec<MemberBox<O>>, Vec<MemberBox<O>>);
    /// How many idle tagged objects there are.
    fn len(&self) -> usize;
    /// The typed index, for downcasting.
    fn as_any(&self) -> &dyn Any;
}

/// The typed shelf.
pub(in crate::object_pool) struct TagShelf<O, T: PoolTag> {
    inner: Mutex<TagShelfState<O, T>>,
}

struct TagShelfState<O, T: PoolTag> {
    /// The next sequence number.
    next: u64,
    /// Idle tagged objects, least recently returned first.
    objects: BTreeMap<u64, MemberBox<O>>,
    by_tag: HashMap<T, BTreeSet<u64>>,
    by_group: HashMap<T::Group, BTreeSet<u64>>,
}

impl<O, T: PoolTag> TagShelf<O, T> {
    pub(in crate::object_pool) fn new() -> Self {
        TagShelf {
            inner: Mutex::new(TagShelfState {
                next: 0,
                objects: BTreeMap::new(),
                by_tag: HashMap::new(),
                by_group: HashMap::new(),
            }),
        }
    }

    /// Takes the most recently returned idle object tagged `tag`.
    pub(in crate::object_pool) fn take_exact(&self, tag: &T) -> Option<MemberBox<O>> {
        let mut shelved = lock(&self.inner);
        let seq = *shelved.by_tag.get(tag)?.last()?;
        shelved.remove(seq)
    }

    /// Takes the most recently returned idle object of `group`.
    pub(in crate::object_pool) fn take_group(&self, group: &T::Group) -> Option<MemberBox<O>> {
        let mut shelved = lock(&self.inner);
        let seq = *shelved.by_group.get(group)?.last()?;
        shelved.remove(seq)
    }
}

/// The tag an object carries, which a shelved object always has.
pub(in crate::object_pool) fn tag_of<O, T: PoolTag>(idle: &MemberBox<O>) -> Option<&T> {
    idle.tag.as_ref()?.downcast_ref::<T>()
}

impl<O, T: PoolTag> TagShelfState<O, T> {
    fn insert(&mut self, idle: MemberBox<O>) -> Result<(), MemberBox<O>> {
        let Some(tag) = tag_of::<O, T>(&idle) else {
            return Err(idle);
        };
        let seq = self.next;
        self.next += 1;
        insert_seq(&mut self.by_tag, tag.clone(), seq);
        insert_seq(&mut self.by_group, tag.group().clone(), seq);
        self.objects.insert(seq, idle);
        Ok(())
    }

    fn remove(&mut self, seq: u64) -> Option<MemberBox<O>> {
        let idle = self.objects.remove(&seq)?;
        if let Some(tag) = tag_of::<O, T>(&idle) {
            remove_seq(&mut self.by_tag, tag, seq);
            remove_seq(&mut self.by_group, tag.group(), seq);
        }
        Some(idle)
    }
}

fn insert_seq<K: Eq + Hash>(map: &mut HashMap<K, BTreeSet<u64>>, key: K, seq: u64) {
    map.entry(key).or_default().insert(seq);
}

fn remove_seq<K: Eq + Hash>(map: &mut HashMap<K, BTreeSet<u64>>, key: &K, seq: u64) {
    if let Some(seqs) = map.get_mut(key) {
        seqs.remove(&seq);
        if seqs.is_empty() {
            map.remove(key);
        }
    }
}

impl<O: Send + 'static, T: PoolTag> DynTagShelf<O> for TagShelf<O, T> {
    fn put(&self, idle: MemberBox<O>, admit: &dyn Fn() -> bool) -> Result<(), MemberBox<O>> {
        let mut shelved = lock(&self.inner);
        if !admit() {
            return Err(idle);
        }
        shelved.insert(idle)
    }

    fn take_oldest(&self) -> Option<MemberBox<O>> {
        let mut shelved = lock(&self.inner);
        let seq = *shelved.objects.keys().next()?;
        shelved.remove(seq)
    }

    fn drain(&self) -> Vec<MemberBox<O>> {
        let mut shelved = lock(&self.inner);
        shelved.by_tag.clear();
        shelved.by_group.clear();
        std::mem::take(&mut shelved.objects).into_values().collect()
    }

    fn reap(&self, now: u64, idle_limit: Option<u64>) -> (Vec<MemberBox<O>>, Vec<MemberBox<O>>) {
        let mut shelved = lock(&self.inner);
        let (mut expired, mut idled) = (Vec::new(), Vec::new());
        let doomed: Vec<(u64, bool)> = shelved
            .objects
            .iter()
            .filter_map(|(&seq, idle)| {
                let timed_out =
                    idle_limit.is_some_and(|limit| now.saturating_sub(idle.idle_since) > limit);
                (now >= idle.expires || timed_out).then_some((seq, now >= idle.expires))
            })
            .collect();
        for (seq, is_expired) in doomed {
            if let Some(idle) = shelved.remove(seq) {
                if is_expired {
                    expired.push(idle);
                } else {
                    idled.push(idle);
                }
            }
        }
        (expired, idled)
    }

    fn len(&self) -> usize {
        lock(&self.inner).objects.len()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
