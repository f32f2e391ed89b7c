//! An adaptive resource's protocol: sampled releases add to their shard's
//! accumulators while another release closes the window (takes every
//! shard's samples and resizes the counter). Under loom every sampled
//! release finds its window due and tries to close it.

use super::*;

use sidejob::adaptive::{Adaptive, Window};

/// (w) Two threads each acquire and release a sampled permit while each
/// release tries to close the window, and the rule flips the limit between
/// 1 and 2 at every close (each permit held 1 or 2 ms of mock time):
/// usage never exceeds 2, every sample lands in
/// exactly one closed window, and usage returns to 0.
#[test]
fn a_window_closing_while_admissions_and_releases_race_loses_no_sample() {
    loom::model(|| {
        let flip = |limit: usize, _: &Window| if limit == 2 { 1 } else { 2 };
        let resource = Arc::new(
            Resource::builder()
                .capacity(2)
                .shards(2)
                .adaptive(
                    Adaptive::custom(flip)
                        .min_limit(1)
                        .max_limit(2)
                        .min_samples(1),
                )
                .build()
                .unwrap(),
        );
        let holders = Arc::new(Holders::new(2));
        let threads: Vec<_> = (0..2)
            .map(|start| {
                let resource = Arc::clone(&resource);
                let holders = Arc::clone(&holders);
                thread::spawn(move || match resource.try_acquire_from(start) {
                    Ok(permit) => {
                        holders.enter();
                        // Held a while: the samples' latencies are not all 0
                        // (the same each replay: a model must be deterministic).
                        sidejob::advance_loom_clock(std::time::Duration::from_millis(
                            1 + start as u64,
                        ));
                        holders.leave();
                        drop(permit);
                        1
                    }
                    Err(_) => 0,
                })
            })
            .collect();
        let sampled: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        // One more, alone: its close takes whatever a lost race left.
        let last = resource
            .try_acquire()
            .expect("usage is 0 and the limit at least 1");
        drop(last);
        let stats = resource.adaptive_stats().unwrap();
        assert_eq!(stats.samples, sampled + 1);
        assert_eq!(resource.usage(), 0);
        assert!((1..=2).contains(&resource.capacity()));
    });
}

/// (x) A drop reported while another release closes the window is counted
/// in exactly one window.
#[test]
fn a_drop_racing_a_close_is_counted_once() {
    loom::model(|| {
        let resource = Arc::new(
            Resource::builder()
                .capacity(2)
                .shards(2)
                .adaptive(Adaptive::aimd().min_limit(1).max_limit(2).min_samples(1))
                .build()
                .unwrap(),
        );
        let dropping = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.try_acquire_from(0).unwrap().dropped())
        };
        let sampling = {
            let resource = Arc::clone(&resource);
            // May find the limit already backed off to 1 by the drop.
            thread::spawn(move || drop(resource.try_acquire_from(1)))
        };
        dropping.join().unwrap();
        sampling.join().unwrap();
        drop(resource.try_acquire().unwrap());
        let stats = resource.adaptive_stats().unwrap();
        assert_eq!(stats.drops, 1);
        assert!((1..=2).contains(&resource.capacity()));
        assert_eq!(resource.usage(), 0);
    });
}

/// (aa) A user's `set_capacity` races a window's close (from a permit
/// released as cancelled: a censored sample): the close resizes only over
/// the capacity it read and never waits for the resize lock, so the user's
/// capacity stands whichever runs first, and the cancelled permit's sample
/// lands in exactly one window.
#[test]
fn a_users_resize_racing_a_close_stands() {
    loom::model(|| {
        // The close would lower 3 to 2; at the user's 1 it keeps 1.
        let rule = |limit: usize, _: &Window| if limit == 3 { 2 } else { limit };
        let resource = Arc::new(
            Resource::builder()
                .capacity(3)
                .shards(1)
                .adaptive(
                    Adaptive::custom(rule)
                        .min_limit(1)
                        .max_limit(3)
                        .min_samples(1),
                )
                .build()
                .unwrap(),
        );
        let closing = {
            let resource = Arc::clone(&resource);
            // A shrink under way may refuse it (the core's own protocol,
            // modelled in resource.rs); then there is nothing to close.
            thread::spawn(move || match resource.try_acquire() {
                Ok(permit) => {
                    permit.cancelled();
                    1
                }
                Err(_) => 0,
            })
        };
        let resizing = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || resource.set_capacity(1).unwrap())
        };
        let cancelled = closing.join().unwrap();
        resizing.join().unwrap();
        assert_eq!(resource.capacity(), 1);
        assert_eq!(resource.usage(), 0);
        // One more, alone: its close takes whatever a lost race left.
        drop(resource.try_acquire().unwrap());
        assert_eq!(resource.adaptive_stats().unwrap().samples, cancelled + 1);
        assert_eq!(resource.capacity(), 1);
    });
}

/// (ah) A censored release (a cancelled call) races a close that a drop
/// starts: the close may take the sample's censored mark without its count
/// (they are two words). The window must still close on its figures (no
/// division by a zero count, no count below the censored ones), and the
/// limit go on adapting: a later close still runs.
#[test]
fn a_censored_release_racing_a_close_never_breaks_the_window() {
    loom::model(|| {
        let resource = Arc::new(
            Resource::builder()
                .capacity(2)
                .shards(1)
                .adaptive(Adaptive::aimd().min_limit(1).max_limit(2).min_samples(1))
                .build()
                .unwrap(),
        );
        let cancelling = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                if let Ok(permit) = resource.try_acquire() {
                    permit.cancelled();
                }
            })
        };
        let dropping = {
            let resource = Arc::clone(&resource);
            thread::spawn(move || {
                if let Ok(permit) = resource.try_acquire() {
                    permit.dropped();
                }
            })
        };
        cancelling.join().unwrap();
        dropping.join().unwrap();
        let windows = resource.adaptive_stats().unwrap().windows;
        drop(
            resource
                .try_acquire()
                .expect("usage is 0, the limit at least 1"),
        );
        assert!(resource.adaptive_stats().unwrap().windows > windows);
        assert_eq!(resource.usage(), 0);
    });
}
