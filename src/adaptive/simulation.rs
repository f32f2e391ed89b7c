//! Each rule against a simulated downstream in virtual time: no clock, no
//! threads, no sleeps. A window is computed from the limit, the demand and
//! the downstream's knee `K`, and handed to the [`Controller`] as the
//! shards would.
//!
//! The downstream serves `K` requests at once in `BASE`; beyond `K` they
//! queue, and every request waits its turn (latency `BASE × in flight /
//! K`). Past `K × DROP_AT` in flight its queue is full and it sheds: the
//! window has drops.

use std::time::Duration;

use super::{Adaptive, Aimd, Controller};
use crate::admission::SampleTotals;

const BASE: Duration = Duration::from_millis(10);
/// The downstream's queue holds this many times `K` more.
const DROP_AT: f64 = 2.0;

/// A downstream with knee `k`, and clients wanting `demand` permits.
struct Downstream {
    k: usize,
    demand: usize,
}

impl Downstream {
    /// What one window of 100 samples looks like at `limit`.
    fn window(&self, limit: usize) -> (SampleTotals, u64) {
        let in_flight = limit.min(self.demand);
        let latency = BASE.as_nanos() as f64 * (in_flight as f64 / self.k as f64).max(1.0);
        let drops = if in_flight as f64 > self.k as f64 * DROP_AT {
            10
        } else {
            0
        };
        let samples = 100;
        let totals = SampleTotals {
            samples,
            sum_nanos: latency as u64 * samples,
            min_nanos: latency as u64,
            peak: in_flight as u64,
            drops,
        };
        let refused = u64::from(self.demand > limit) * 50;
        (totals, refused)
    }
}

/// Runs `windows` windows from `limit`; returns every limit on the way.
fn run(
    controller: &mut Controller,
    limit: &mut usize,
    downstream: &Downstream,
    windows: usize,
) -> Vec<usize> {
    (0..windows)
        .map(|_| {
            let (totals, refused) = downstream.window(*limit);
            if let Some(next) = controller.close(*limit, totals, refused) {
                *limit = next;
            }
            *limit
        })
        .collect()
}

fn rules() -> Vec<Adaptive> {
    vec![
        // Aimd reads latency only against its timeout: give it the one a
        // caller of this downstream would (1.4 × the latency unloaded).
        Adaptive::from(Aimd::default().timeout(BASE.mul_f64(1.4))),
        Adaptive::gradient(),
        Adaptive::vegas(),
    ]
}

/// Windows after which the limit stays within `[lo, hi]` to the end, if it does.
fn settled_after(limits: &[usize], lo: usize, hi: usize) -> Option<usize> {
    let last_out = limits.iter().rposition(|l| !(lo..=hi).contains(l));
    match last_out {
        None => Some(0),
        Some(i) if i + 1 < limits.len() => Some(i + 1),
        Some(_) => None,
    }
}

#[test]
fn each_rule_settles_within_k_and_one_and_a_half_k_after_every_change() {
    for adaptive in rules() {
        let name = adaptive.algorithm_name();
        let mut controller = Controller::new(adaptive, 4);
        let mut limit = 4;
        for k in [16, 6, 24, 16] {
            let downstream = Downstream {
                k,
                demand: 4 * k.max(24),
            };
            let limits = run(&mut controller, &mut limit, &downstream, 60);
            let hi = k + k / 2;
            let settled = settled_after(&limits, k, hi);
            // AIMD climbs one request a window; the others in a few.
            let most = if name == "aimd" { 16 } else { 10 };
            assert!(
                settled.is_some_and(|windows| windows <= most),
                "{name} at K = {k}: {limits:?}"
            );
        }
    }
}

#[test]
fn each_rule_backs_off_on_drops_and_recovers() {
    for adaptive in rules() {
        let name = adaptive.algorithm_name();
        let mut controller = Controller::new(adaptive, 40);
        let mut limit = 40;
        let calm = SampleTotals {
            samples: 100,
            sum_nanos: BASE.as_nanos() as u64 * 100,
            min_nanos: BASE.as_nanos() as u64,
            peak: 40,
            drops: 0,
        };
        limit = controller.close(limit, calm, 5).unwrap_or(limit);
        let before = limit;
        let dropping = SampleTotals { drops: 20, ..calm };
        limit = controller.close(limit, dropping, 5).unwrap_or(limit);
        assert!(limit < before, "{name}: drops did not lower {before}");
        let lowered = limit;
        for _ in 0..5 {
            limit = controller
                .close(
                    limit,
                    SampleTotals {
                        peak: limit as u64,
                        ..calm
                    },
                    5,
                )
                .unwrap_or(limit);
        }
        assert!(limit > lowered, "{name} did not recover from {lowered}");
    }
}

#[test]
fn a_window_with_drops_never_raises_the_limit_whatever_the_rule() {
    let mut controller = Controller::new(
        Adaptive::custom(|limit: usize, _: &super::Window| limit * 2),
        10,
    );
    let dropping = SampleTotals {
        samples: 50,
        sum_nanos: 50,
        min_nanos: 1,
        peak: 10,
        drops: 1,
    };
    assert_eq!(controller.close(10, dropping, 3), None);
    assert_eq!(
        controller.close(
            10,
            SampleTotals {
                drops: 0,
                ..dropping
            },
            3
        ),
        Some(20)
    );
}

#[test]
fn each_rule_holds_its_min_and_max() {
    for adaptive in rules() {
        let name = adaptive.algorithm_name();
        let mut controller = Controller::new(adaptive.min_limit(5).max_limit(20), 10);
        let mut limit = 10;
        let roomy = Downstream {
            k: 1000,
            demand: 4000,
        };
        let limits = run(&mut controller, &mut limit, &roomy, 200);
        assert_eq!(*limits.last().unwrap(), 20, "{name}: {limits:?}");
        assert!(limits.iter().all(|&l| l <= 20), "{name}: {limits:?}");
        let tight = Downstream { k: 1, demand: 4000 };
        let limits = run(&mut controller, &mut limit, &tight, 200);
        assert_eq!(*limits.last().unwrap(), 5, "{name}: {limits:?}");
        assert!(limits.iter().all(|&l| l >= 5), "{name}: {limits:?}");
    }
}

#[test]
fn each_rule_stays_put_while_the_application_is_the_bottleneck() {
    for adaptive in rules() {
        let name = adaptive.algorithm_name();
        let mut controller = Controller::new(adaptive, 30);
        let mut limit = 30;
        // The downstream could take 100, the application sends 10.
        let idle = Downstream { k: 100, demand: 10 };
        let limits = run(&mut controller, &mut limit, &idle, 100);
        assert!(limits.iter().all(|&l| l == 30), "{name}: {limits:?}");
    }
}

#[test]
fn a_thin_window_is_carried_into_the_next() {
    let mut controller = Controller::new(
        Adaptive::custom(|limit: usize, w: &super::Window| {
            assert_eq!(w.samples, 12);
            limit + 1
        }),
        10,
    );
    let few = SampleTotals {
        samples: 6,
        sum_nanos: 600,
        min_nanos: 100,
        peak: 10,
        drops: 0,
    };
    assert_eq!(controller.close(10, few, 0), None);
    assert_eq!(controller.stats().windows, 0);
    assert_eq!(controller.close(10, few, 0), Some(11));
    assert_eq!(controller.stats().windows, 1);
}

#[test]
fn a_panicking_rule_keeps_the_limit_and_the_controller_goes_on() {
    let mut calls = 0;
    let mut controller = Controller::new(
        Adaptive::custom(move |limit: usize, _: &super::Window| {
            calls += 1;
            if calls == 1 {
                panic!("a bug in the rule");
            }
            limit + 1
        }),
        10,
    );
    let window = SampleTotals {
        samples: 20,
        sum_nanos: 2000,
        min_nanos: 100,
        peak: 10,
        drops: 0,
    };
    assert_eq!(controller.close(10, window, 0), None);
    assert_eq!(controller.close(10, window, 0), Some(11));
}

#[test]
fn the_baseline_falls_at_once_and_does_not_follow_a_queue_the_limit_lets_build() {
    let mut controller = Controller::new(
        Adaptive::custom(|limit: usize, _: &super::Window| limit),
        10,
    );
    let at = |min: u64, peak: u64| SampleTotals {
        samples: 20,
        sum_nanos: min * 20,
        min_nanos: min,
        peak,
        drops: 0,
    };
    controller.close(10, at(1000, 10), 0);
    controller.close(10, at(400, 10), 0);
    assert_eq!(controller.stats().baseline, Duration::from_nanos(400));
    for _ in 0..50 {
        controller.close(10, at(2000, 10), 5); // bound by the limit: a queue of ours
    }
    assert_eq!(controller.stats().baseline, Duration::from_nanos(400));
    for _ in 0..50 {
        controller.close(10, at(2000, 3), 0); // the application sends little: the downstream got slower
    }
    assert!(controller.stats().baseline > Duration::from_nanos(1900));
}
