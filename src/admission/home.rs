//! Home shards: each thread's stable starting point for the probe.
//!
//! The first time a thread acquires, it draws the next number from a global
//! round-robin counter and keeps it in a thread-local. Its home shard in a
//! resource of `n` shards is that number modulo `n`, so threads spread evenly
//! over the shards, and a thread keeps returning to the same cache line.
//!
//! The modulo is a division, too slow for the fast path, so the thread-local
//! also caches the last `(n, number % n)` pair: in the common case of one shard
//! count per program, finding home is a thread-local read and a compare.
//!
//! # Orderings
//!
//! The counter only hands out distinct numbers; `Relaxed` suffices.

use std::cell::Cell;

/// `(thread number, shard count of the cached home, cached home)`.
type HomeCache = (usize, usize, usize);

/// A thread that has not drawn its number yet.
const UNASSIGNED: HomeCache = (usize::MAX, 0, 0);

#[cfg(not(sidejob_loom))]
std::thread_local! {
    static HOME: Cell<HomeCache> = const { Cell::new(UNASSIGNED) };
}

#[cfg(sidejob_loom)]
loom::thread_local! {
    static HOME: Cell<HomeCache> = Cell::new(UNASSIGNED);
}

#[cfg(not(sidejob_loom))]
fn next_thread_number() -> usize {
    use crate::sync::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(sidejob_loom)]
fn next_thread_number() -> usize {
    use crate::sync::{AtomicUsize, Ordering};
    loom::lazy_static! {
        static ref NEXT: AtomicUsize = AtomicUsize::new(0);
    }
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The calling thread's home shard among `shards` shards.
#[inline]
pub(crate) fn home_shard(shards: usize) -> usize {
    HOME.with(|cell| {
        let (_, cached_shards, home) = cell.get();
        if cached_shards == shards {
            home
        } else {
            rehome(cell, shards)
        }
    })
}

#[cold]
#[inline(never)]
fn rehome(cell: &Cell<HomeCache>, shards: usize) -> usize {
    let (mut number, _, _) = cell.get();
    if number == usize::MAX {
        number = next_thread_number();
    }
    let home = number % shards;
    cell.set((number, shards, home));
    home
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    #[test]
    fn home_is_stable_per_thread_and_threads_spread_round_robin() {
        let first = home_shard(4);
        assert_eq!(home_shard(4), first);
        assert_eq!(home_shard(1), 0);
        assert_eq!(home_shard(4), first);
        // Threads drawn in a row cover the shards; other tests may draw
        // numbers concurrently, so only require distinctness for a clean run.
        let homes: Vec<usize> = (0..64)
            .map(|_| std::thread::spawn(|| home_shard(1000)).join().unwrap())
            .collect();
        let mut distinct = homes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), homes.len());
    }
}
