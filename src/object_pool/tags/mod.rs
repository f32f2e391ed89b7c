//! Tags: CouchDB's affinity of a process to a database. A tagged take
//! prefers an idle object that already carries its tag, then one of its
//! group, then teaches an untagged (or the least recently used) object.
//!
//! * `tag.rs`: [`PoolTag`], what a tag is;
//! * the tag shelf, where idle tagged objects wait, by tag, by group and in
//!   least recently used order, is the engine's (`engine/tag_shelf.rs`);
//! * the blocking face's tagged take,
//!   [`ObjectPool::take_tagged`](crate::ObjectPool::take_tagged), and the
//!   lookup order behind it, are in `blocking/tagged_take.rs`.

mod tag;

pub use tag::PoolTag;
