//! [`PoolTag`]: what a tagged object has learned, CouchDB's database and
//! design-document affinity.

use std::hash::Hash;

/// A tag that an [`ObjectPool`](crate::ObjectPool) object can carry: a key
/// within a group. A tagged take
/// ([`take_tagged`](crate::ObjectPool::take_tagged)) prefers an idle object
/// with the exact tag, then one of the same group.
///
/// A `(group, key)` pair is a tag. A type of your own is one too, once it
/// says what its group is.
///
/// # Examples
///
/// ```
/// use sidejob::PoolTag;
///
/// // A pair: the first part is the group.
/// let tag = ("accounts".to_owned(), "_design/reports".to_owned());
/// assert_eq!(tag.group(), "accounts");
///
/// // A type of your own.
/// #[derive(Clone, PartialEq, Eq, Hash)]
/// struct DesignDoc {
///     database: String,
///     id: String,
/// }
/// impl PoolTag for DesignDoc {
///     type Group = String;
///     fn group(&self) -> &String {
///         &self.database
///     }
/// }
/// ```
pub trait PoolTag: Clone + Eq + Hash + Send + Sync + 'static {
    /// The group part, shared by related tags.
    type Group: Clone + Eq + Hash + Send + Sync + 'static;

    /// This tag's group.
    fn group(&self) -> &Self::Group;
}

impl<G, K> PoolTag for (G, K)
where
    G: Clone + Eq + Hash + Send + Sync + 'static,
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    type Group = G;

    #[inline]
    fn group(&self) -> &G {
        &self.0
    }
}
