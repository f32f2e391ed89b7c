//! Placing work on a chosen home shard: a thread's home shard is fixed when
//! it first admits, round robin over threads, the same for every face with
//! the same shard count.

use sidejob::Resource;

/// The calling thread's home shard among `shards` shards.
pub fn home_shard(shards: usize) -> usize {
    let probe = Resource::builder()
        .capacity(shards)
        .shards(shards)
        .build()
        .unwrap();
    let permit = probe.try_acquire().unwrap();
    permit.shard()
}

/// Runs `work` on a new thread whose home shard among `shards` is `home`,
/// and returns what it returns. Threads draw homes round robin, so a few
/// threads find one; a thread with another home hands `work` back unrun.
pub fn on_home<T: Send, F: FnOnce() -> T + Send>(shards: usize, home: usize, work: F) -> T {
    let mut work = work;
    loop {
        let attempt = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    if home_shard(shards) == home {
                        Ok(work())
                    } else {
                        Err(work)
                    }
                })
                .join()
                .unwrap()
        });
        match attempt {
            Ok(output) => return output,
            Err(unrun) => work = unrun,
        }
    }
}
