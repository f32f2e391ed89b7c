//! Every genuine refusal sweeps (#40), over many shards and threads: no
//! false overload (a thread that freed a slot is never refused while the
//! others hold fewer than the capacity), usage never over the capacity, and
//! no slot lost (idle, the leases and the reserve sum to the capacity),
//! through overload, shares, resizes and expiring leases.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use sidejob::{Priority, Resource};

fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Idle: usage 0, leases + reserve == capacity, and one thread can take the
/// whole capacity again from any start, then is refused.
fn check_idle(resource: &Resource, capacity: usize, what: &str) {
    let stats = resource.stats();
    assert_eq!(stats.usage, 0, "{what}: idle usage {stats:?}");
    let leased: i64 = stats.shards.iter().map(|s| s.limit as i64).sum();
    assert_eq!(
        leased + stats.reserve,
        capacity as i64,
        "{what}: leases + reserve != capacity: {stats:?}"
    );
    for s in &stats.shards {
        assert_eq!(s.usage, 0, "{what}: shard usage {stats:?}");
    }
    let shards = resource.shard_count();
    for start in [0, shards / 2, shards - 1] {
        let held: Vec<_> = (0..capacity)
            .map(|i| {
                resource.try_acquire_from(start).unwrap_or_else(|_| {
                    panic!(
                        "{what}: false overload at permit {i} of {capacity} from {start}: {:?}",
                        resource.stats()
                    )
                })
            })
            .collect();
        assert!(
            resource.try_acquire_from(start).is_err(),
            "{what}: over capacity from {start}"
        );
        drop(held);
    }
    assert_eq!(resource.usage(), 0, "{what}");
}

/// Phase A: free-for-all (genuine refusals, sweeps). Phase B: the threads
/// together never hold more than capacity - 1 (tokens), so every acquire
/// must succeed.
#[test]
fn phases_of_overload_then_bounded_demand_never_refuse_falsely() {
    let started = Instant::now();
    for &(shards, capacity, threads) in &[
        (64usize, 1usize, 8usize),
        (64, 2, 8),
        (64, 5, 16),
        (128, 9, 12),
        (256, 20, 16),
        (256, 3, 8),
        (200, 17, 16),
        (64, 20, 8),
    ] {
        let resource = Resource::builder()
            .capacity(capacity)
            .shards(shards)
            .build()
            .unwrap();
        let held_ext = AtomicI64::new(0);
        let tokens = AtomicI64::new(0);
        let attempts = AtomicU64::new(0);
        let false_overloads = AtomicU64::new(0);
        let over = AtomicU64::new(0);
        let barrier = Barrier::new(threads);
        let rounds = 40;
        thread::scope(|scope| {
            for t in 0..threads {
                let (resource, held_ext, tokens, attempts, false_overloads, over, barrier) = (
                    &resource,
                    &held_ext,
                    &tokens,
                    &attempts,
                    &false_overloads,
                    &over,
                    &barrier,
                );
                scope.spawn(move || {
                    let mut seed = 0x9E3779B97F4A7C15u64 ^ ((t as u64 + 1) * 7919);
                    for round in 0..rounds {
                        // Phase A: free-for-all.
                        let mut mine = Vec::new();
                        for _ in 0..300 {
                            let start = (rng(&mut seed) as usize) % shards;
                            attempts.fetch_add(1, SeqCst);
                            if let Ok(p) = resource.try_acquire_from(start) {
                                let now = held_ext.fetch_add(1, SeqCst) + 1;
                                if now > capacity as i64 {
                                    over.fetch_add(1, SeqCst);
                                }
                                mine.push(p);
                            }
                            if rng(&mut seed).is_multiple_of(3) && !mine.is_empty() {
                                let i = rng(&mut seed) as usize % mine.len();
                                held_ext.fetch_sub(1, SeqCst);
                                drop(mine.swap_remove(i));
                            }
                        }
                        // Keep a random few across the barrier.
                        let keep = if round % 2 == 0 {
                            0
                        } else {
                            rng(&mut seed) as usize % 2
                        };
                        while mine.len() > keep {
                            held_ext.fetch_sub(1, SeqCst);
                            drop(mine.pop());
                        }
                        barrier.wait();
                        if t == 0 {
                            let h = held_ext.load(SeqCst);
                            tokens.store(capacity as i64 - 1 - h, SeqCst);
                        }
                        barrier.wait();
                        // Phase B: bounded demand; every acquire must succeed.
                        for _ in 0..300 {
                            // take a token
                            let got = loop {
                                let n = tokens.load(SeqCst);
                                if n <= 0 {
                                    break false;
                                }
                                if tokens.compare_exchange(n, n - 1, SeqCst, SeqCst).is_ok() {
                                    break true;
                                }
                            };
                            if !got {
                                // Release one of ours, if any, to make room.
                                if let Some(p) = mine.pop() {
                                    held_ext.fetch_sub(1, SeqCst);
                                    drop(p);
                                    tokens.fetch_add(1, SeqCst);
                                }
                                thread::yield_now();
                                continue;
                            }
                            let start = (rng(&mut seed) as usize) % shards;
                            attempts.fetch_add(1, SeqCst);
                            match resource.try_acquire_from(start) {
                                Ok(p) => {
                                    held_ext.fetch_add(1, SeqCst);
                                    mine.push(p);
                                }
                                Err(_) => {
                                    false_overloads.fetch_add(1, SeqCst);
                                    tokens.fetch_add(1, SeqCst);
                                }
                            }
                            if rng(&mut seed).is_multiple_of(2) && !mine.is_empty() {
                                let i = rng(&mut seed) as usize % mine.len();
                                held_ext.fetch_sub(1, SeqCst);
                                drop(mine.swap_remove(i));
                                tokens.fetch_add(1, SeqCst);
                            }
                        }
                        while let Some(p) = mine.pop() {
                            held_ext.fetch_sub(1, SeqCst);
                            drop(p);
                        }
                        barrier.wait();
                    }
                });
            }
        });
        let what = format!("{shards} shards, capacity {capacity}, {threads} threads");
        assert_eq!(over.load(SeqCst), 0, "{what}: usage over capacity");
        assert_eq!(
            false_overloads.load(SeqCst),
            0,
            "{what}: false overloads in bounded phase; stats {:?}",
            resource.stats()
        );
        let stats = resource.stats();
        assert_eq!(
            stats.accepted + stats.rejected,
            attempts.load(SeqCst),
            "{what}: counts"
        );
        check_idle(&resource, capacity, &what);
        eprintln!("{what}: ok ({:?})", started.elapsed());
    }
}

/// Normal-priority threads bounded by tokens (never more than capacity-1
/// held among everyone), Sheddable threads (share < 1) using the same
/// tokens and sweeping on their refusals: no Normal acquire may be refused.
#[test]
fn sheddable_sweeps_never_make_normal_refusals_false() {
    for &(shards, capacity, threads) in &[
        (64usize, 4usize, 8usize),
        (256, 10, 12),
        (128, 20, 16),
        (256, 2, 8),
    ] {
        let resource = Arc::new(
            Resource::builder()
                .capacity(capacity)
                .shards(shards)
                .share(Priority::Sheddable, 0.5)
                .build()
                .unwrap(),
        );
        let tokens = AtomicI64::new(capacity as i64 - 1);
        let false_overloads = AtomicU64::new(0);
        let normal_ok = AtomicU64::new(0);
        let shed_refused = AtomicU64::new(0);
        let held_ext = AtomicI64::new(0);
        let over = AtomicU64::new(0);
        let deadline = Instant::now() + Duration::from_secs(4);
        thread::scope(|scope| {
            for t in 0..threads {
                let r = (
                    &resource,
                    &tokens,
                    &false_overloads,
                    &normal_ok,
                    &shed_refused,
                    &held_ext,
                    &over,
                );
                scope.spawn(move || {
                    let (
                        resource,
                        tokens,
                        false_overloads,
                        normal_ok,
                        shed_refused,
                        held_ext,
                        over,
                    ) = r;
                    let mut seed = 0xDEADBEEFu64 ^ ((t as u64 + 1) * 104729);
                    let shed = t % 2 == 1;
                    let mut mine = Vec::new();
                    while Instant::now() < deadline {
                        let n = tokens.load(SeqCst);
                        if n <= 0 || tokens.compare_exchange(n, n - 1, SeqCst, SeqCst).is_err() {
                            if let Some(p) = mine.pop() {
                                held_ext.fetch_sub(1, SeqCst);
                                drop(p);
                                tokens.fetch_add(1, SeqCst);
                            }
                            continue;
                        }
                        let start = rng(&mut seed) as usize % shards;
                        let got = if shed {
                            resource.try_acquire_owned_with(Priority::Sheddable).ok()
                        } else {
                            resource.try_acquire_owned_from(start).ok()
                        };
                        let _ = start;
                        match got {
                            Some(p) => {
                                let now = held_ext.fetch_add(1, SeqCst) + 1;
                                if now > capacity as i64 {
                                    over.fetch_add(1, SeqCst);
                                }
                                if !shed {
                                    normal_ok.fetch_add(1, SeqCst);
                                }
                                mine.push(p);
                            }
                            None => {
                                if shed {
                                    shed_refused.fetch_add(1, SeqCst);
                                } else {
                                    false_overloads.fetch_add(1, SeqCst);
                                }
                                tokens.fetch_add(1, SeqCst);
                            }
                        }
                        if rng(&mut seed).is_multiple_of(2) && !mine.is_empty() {
                            let i = rng(&mut seed) as usize % mine.len();
                            held_ext.fetch_sub(1, SeqCst);
                            drop(mine.swap_remove(i));
                            tokens.fetch_add(1, SeqCst);
                        }
                    }
                    for p in mine.drain(..) {
                        held_ext.fetch_sub(1, SeqCst);
                        drop(p);
                    }
                });
            }
        });
        let what = format!("{shards} shards, capacity {capacity}, {threads} threads");
        eprintln!(
            "{what}: normal ok {}, shed refused {}",
            normal_ok.load(SeqCst),
            shed_refused.load(SeqCst)
        );
        assert_eq!(over.load(SeqCst), 0, "{what}: over capacity");
        assert_eq!(false_overloads.load(SeqCst), 0, "{what}: false overloads");
        check_idle(&resource, capacity, &what);
    }
}

/// Many shards, free-for-all plus a resizer growing and shrinking and a
/// `CapacityLease::set_until` lease: usage never exceeds the largest capacity, and
/// the resource is whole at the end.
#[test]
fn resizes_and_expiring_leases_under_overload_lose_no_slot() {
    for &(shards, threads) in &[(64usize, 8usize), (256, 16), (128, 12)] {
        let resource = Arc::new(
            Resource::builder()
                .capacity(5)
                .shards(shards)
                .share(Priority::Sheddable, 0.5)
                .build()
                .unwrap(),
        );
        let max_cap = 20usize;
        let held_ext = AtomicI64::new(0);
        let over = AtomicU64::new(0);
        let attempts = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let panicked = AtomicUsize::new(0);
        thread::scope(|scope| {
            for t in 0..threads {
                let (resource, held_ext, over, attempts, stop) =
                    (&resource, &held_ext, &over, &attempts, &stop);
                scope.spawn(move || {
                    let mut seed = 0xABCDEF12u64 ^ ((t as u64 + 1) * 31337);
                    let mut mine = Vec::new();
                    while !stop.load(SeqCst) {
                        let start = rng(&mut seed) as usize % shards;
                        let pri = match rng(&mut seed) % 4 {
                            0 => Priority::Sheddable,
                            1 => Priority::Critical,
                            _ => Priority::Normal,
                        };
                        attempts.fetch_add(1, SeqCst);
                        let got = if pri == Priority::Normal {
                            resource.try_acquire_owned_from(start)
                        } else {
                            resource.try_acquire_owned_with(pri)
                        };
                        if let Ok(p) = got {
                            let now = held_ext.fetch_add(1, SeqCst) + 1;
                            if now > max_cap as i64 {
                                over.fetch_add(1, SeqCst);
                            }
                            mine.push(p);
                        }
                        while mine.len() > 2
                            || (!mine.is_empty() && rng(&mut seed).is_multiple_of(2))
                        {
                            let i = rng(&mut seed) as usize % mine.len();
                            held_ext.fetch_sub(1, SeqCst);
                            drop(mine.swap_remove(i));
                        }
                    }
                    for p in mine.drain(..) {
                        held_ext.fetch_sub(1, SeqCst);
                        drop(p);
                    }
                });
            }
            // resizer
            let (resource, stop, panicked) = (&resource, &stop, &panicked);
            scope.spawn(move || {
                let lease = resource.lease_capacity().unwrap();
                let mut seed = 77u64;
                let end = Instant::now() + Duration::from_secs(4);
                while Instant::now() < end {
                    let cap = 1 + rng(&mut seed) as usize % max_cap;
                    match rng(&mut seed) % 3 {
                        0 => {
                            let fallback = 1 + rng(&mut seed) as usize % max_cap;
                            let until =
                                Instant::now() + Duration::from_micros(rng(&mut seed) % 500);
                            lease.set_until(cap, until, fallback).unwrap();
                        }
                        _ => lease.set(cap).unwrap(),
                    }
                    thread::sleep(Duration::from_micros(rng(&mut seed) % 300));
                }
                stop.store(true, SeqCst);
                let _ = panicked;
            });
        });
        let what = format!("{shards} shards, {threads} threads, resizing");
        assert_eq!(over.load(SeqCst), 0, "{what}: usage over max capacity");
        // Let any lease expire, then settle to a fixed capacity.
        thread::sleep(Duration::from_millis(5));
        drop(resource.try_acquire()); // trigger expiry
        resource.set_capacity(7).unwrap();
        let stats = resource.stats();
        assert_eq!(
            stats.accepted + stats.rejected,
            attempts.load(SeqCst) + 1,
            "{what}: counts {stats:?}"
        );
        check_idle(&resource, 7, &what);
        resource.set_capacity(1).unwrap();
        check_idle(&resource, 1, &what);
        resource.set_capacity(20).unwrap();
        check_idle(&resource, 20, &what);
        eprintln!("{what}: ok");
    }
}

/// After a genuine refusal (scarce), releasing half makes capacity spread
/// again, and then the shards keep their slots (fast path) — and nothing is
/// lost along many cycles.
#[test]
fn scarce_and_spread_cycles_with_many_threads() {
    for &(shards, capacity, threads) in &[(256usize, 16usize, 16usize), (64, 8, 8), (128, 1, 8)] {
        let resource = Resource::builder()
            .capacity(capacity)
            .shards(shards)
            .build()
            .unwrap();
        let barrier = Barrier::new(threads);
        let wins = AtomicUsize::new(0);
        let bad = AtomicU64::new(0);
        thread::scope(|scope| {
            for t in 0..threads {
                let (resource, barrier, wins, bad) = (&resource, &barrier, &wins, &bad);
                scope.spawn(move || {
                    for round in 0..300 {
                        // Everyone grabs as many as they can.
                        barrier.wait();
                        let mut mine = Vec::new();
                        while let Ok(p) = resource.try_acquire_from((t * 31 + round) % shards) {
                            mine.push(p);
                            if mine.len() > capacity {
                                bad.fetch_add(1, SeqCst);
                                break;
                            }
                        }
                        wins.fetch_add(mine.len(), SeqCst);
                        barrier.wait();
                        // After all grabbed until refused: every slot must be held.
                        if t == 0 {
                            let w = wins.swap(0, SeqCst);
                            if w != capacity {
                                eprintln!(
                                    "round {round}: held {w} of {capacity}: {:?}",
                                    resource.stats()
                                );
                                bad.fetch_add(1, SeqCst);
                            }
                        }
                        barrier.wait();
                        drop(mine);
                    }
                });
            }
        });
        let what = format!("{shards} shards, capacity {capacity}, {threads} threads cycles");
        assert_eq!(bad.load(SeqCst), 0, "{what}");
        check_idle(&resource, capacity, &what);
    }
}

/// Episodes: everything held (G holds C - m, each H_i one). G asks once
/// more (a genuine refusal that sweeps, unless a release beat it) while
/// each H_i releases its own slot and asks again at once. Demand is C + 1
/// at most, so at most one of them may be refused, and if G was refused
/// no H_i may be (when H_i asks, at most C - 1 are held).
#[test]
fn a_sweep_in_flight_never_refuses_a_thread_that_just_freed_a_slot() {
    sweep_episodes(false);
}

#[test]
fn a_share_sweep_in_flight_never_refuses_a_thread_that_just_freed_a_slot() {
    sweep_episodes(true);
}

fn sweep_episodes(shed: bool) {
    for &(shards, capacity, m, episodes) in &[
        (256usize, 16usize, 8usize, 3000usize),
        (64, 4, 3, 5000),
        (128, 9, 6, 3000),
        (256, 2, 1, 5000),
    ] {
        let mut builder = Resource::builder().capacity(capacity).shards(shards);
        if shed {
            // Sheddable may fill (C - m) / C at most: G, holding C - m, is
            // never admitted, and each of its attempts sweeps while plentiful.
            builder = builder.share(Priority::Sheddable, (capacity - m) as f64 / capacity as f64);
        }
        let resource = builder.build().unwrap();
        let barrier = Barrier::new(m + 1);
        let h_refused = AtomicUsize::new(0);
        let g_admitted = AtomicBool::new(false);
        let bad = AtomicU64::new(0);
        let g_refusals = AtomicU64::new(0);
        thread::scope(|scope| {
            for i in 0..m {
                let (resource, barrier, h_refused) = (&resource, &barrier, &h_refused);
                scope.spawn(move || {
                    let home = (i + 1) * (shards / (m + 1));
                    let mut seed = (i as u64 + 1).wrapping_mul(0x2545F4914F6CDD1D);
                    for _ in 0..episodes {
                        barrier.wait(); // 1: G holds its share
                        let mine = resource.try_acquire_from(home).expect("setup");
                        barrier.wait(); // 2: all held
                        barrier.wait(); // 3: go
                        for _ in 0..(rng(&mut seed) % 400) {
                            std::hint::spin_loop();
                        }
                        drop(mine);
                        let again = resource.try_acquire_from((home + 7) % shards);
                        if again.is_err() {
                            h_refused.fetch_add(1, SeqCst);
                        }
                        barrier.wait(); // 4: verdicts in
                        drop(again);
                        barrier.wait(); // 5: all released
                    }
                });
            }
            let (resource, barrier, h_refused, g_admitted, bad, g_refusals) = (
                &resource,
                &barrier,
                &h_refused,
                &g_admitted,
                &bad,
                &g_refusals,
            );
            scope.spawn(move || {
                let mut seed = 0x1234_5678_9ABC_DEF1u64;
                for e in 0..episodes {
                    let mine: Vec<_> = (0..capacity - m)
                        .map(|_| resource.try_acquire_from(0).expect("setup g"))
                        .collect();
                    barrier.wait(); // 1
                    barrier.wait(); // 2
                    assert_eq!(resource.usage(), capacity);
                    barrier.wait(); // 3
                    for _ in 0..(rng(&mut seed) % 400) {
                        std::hint::spin_loop();
                    }
                    let extra = if shed {
                        resource.try_acquire_with(Priority::Sheddable).ok()
                    } else {
                        resource.try_acquire_from(shards - 1).ok()
                    };
                    g_admitted.store(extra.is_some(), SeqCst);
                    if extra.is_none() {
                        g_refusals.fetch_add(1, SeqCst);
                    }
                    barrier.wait(); // 4
                    let refused = h_refused.swap(0, SeqCst);
                    let allowed = usize::from(g_admitted.load(SeqCst));
                    if refused > allowed {
                        eprintln!(
                            "episode {e}: {refused} H refused, G admitted {}: {:?}",
                            g_admitted.load(SeqCst),
                            resource.stats()
                        );
                        bad.fetch_add(1, SeqCst);
                    }
                    drop(extra);
                    drop(mine);
                    barrier.wait(); // 5
                }
            });
        });
        let what = format!("shed {shed}: {shards} shards, capacity {capacity}, {m} releasers");
        eprintln!("{what}: G refused {} times", g_refusals.load(SeqCst));
        assert_eq!(bad.load(SeqCst), 0, "{what}: false overloads");
        check_idle(&resource, capacity, &what);
    }
}
