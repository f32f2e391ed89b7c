//! Request-scoped background jobs under a `TaskSupervisor` on a tokio
//! runtime: more jobs are offered than the bound admits, the excess is
//! refused at once, the capacity is raised midway, and a shutdown ends it.
//!
//! Each simulated request spawns a background job (an index update, say)
//! that sleeps 5 to 30 ms and watches for cancellation; a job the
//! supervisor refuses is dropped (the request would answer without it).
//! A progress line shows live/capacity, spawned and rejected; at the end a
//! shutdown cancels what is left and the example checks its own figures.
//!
//! ```text
//! cargo run --release --features tokio --example task_supervisor
//! cargo run --release --features tokio --example task_supervisor -- --seconds 1
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use sidejob::{SpawnError, TaskSupervisor};

/// Command-line settings.
#[derive(Debug, Parser)]
#[command(about = "Background jobs under a TaskSupervisor")]
struct Args {
    /// How long requests arrive.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// The bound at the start; it doubles halfway.
    #[arg(long, default_value_t = 8)]
    capacity: usize,
    /// Requests per millisecond.
    #[arg(long, default_value_t = 2)]
    rate: usize,
}

/// What the jobs themselves count.
#[derive(Default)]
struct Seen {
    running: AtomicUsize,
    peak: AtomicUsize,
    completed: AtomicUsize,
    stopped_early: AtomicUsize,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    let supervisor = TaskSupervisor::builder()
        .capacity(args.capacity)
        .name("background-jobs")
        .build()
        .expect("a valid capacity");
    let seen = Arc::new(Seen::default());
    let duration = Duration::from_secs_f64(args.seconds);
    let started = Instant::now();
    let mut raised = false;
    let mut next_report = Duration::ZERO;
    let mut offered = 0u64;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    while started.elapsed() < duration {
        tick.tick().await;
        if !raised && started.elapsed() >= duration / 2 {
            supervisor
                .set_capacity(args.capacity * 2)
                .expect("the doubled capacity fits");
            raised = true;
        }
        for request in 0..args.rate {
            offered += 1;
            let seen = Arc::clone(&seen);
            let work = Duration::from_millis(5 + (offered * 7 + request as u64) % 26);
            match supervisor.try_spawn(move |context| async move {
                let now = seen.running.fetch_add(1, Ordering::SeqCst) + 1;
                seen.peak.fetch_max(now, Ordering::SeqCst);
                tokio::select! {
                    _ = tokio::time::sleep(work) => {
                        seen.completed.fetch_add(1, Ordering::SeqCst);
                    }
                    _ = context.cancelled() => {
                        seen.stopped_early.fetch_add(1, Ordering::SeqCst);
                    }
                }
                seen.running.fetch_sub(1, Ordering::SeqCst);
            }) {
                Ok(handle) => drop(handle), // detached: it stays counted until it ends
                Err(SpawnError::Overload(_job)) => {} // the request goes on without it
                Err(other) => panic!("unexpected {other}"),
            }
        }
        if started.elapsed() >= next_report {
            let stats = supervisor.stats();
            eprint!(
                "\r{:>5.2} s  live {:>3}/{:<3}  spawned {:>6}  rejected {:>6}",
                started.elapsed().as_secs_f64(),
                stats.live,
                stats.capacity,
                stats.spawned,
                stats.rejected
            );
            next_report += Duration::from_millis(250);
        }
    }
    eprintln!();

    let report = supervisor.shutdown(Duration::from_millis(500)).await;
    let stats = supervisor.stats();
    println!(
        "offered {offered} jobs; spawned {}, rejected {}; {} completed, {} stopped by the shutdown",
        stats.spawned,
        stats.rejected,
        seen.completed.load(Ordering::SeqCst),
        seen.stopped_early.load(Ordering::SeqCst),
    );
    println!(
        "peak running {} (capacity {} then {}); shutdown cancelled {}, {} left after the grace",
        seen.peak.load(Ordering::SeqCst),
        args.capacity,
        args.capacity * 2,
        report.cancelled,
        report.remaining.len()
    );

    // Self-checks.
    assert!(seen.peak.load(Ordering::SeqCst) <= args.capacity * 2);
    assert_eq!(
        stats.spawned + stats.rejected,
        offered,
        "every job counted once"
    );
    assert!(stats.rejected > 0, "the load went over the bound");
    assert_eq!(stats.live, 0, "nothing alive after the shutdown");
    assert_eq!(stats.finished, stats.spawned);
    assert!(
        report.remaining.is_empty(),
        "every job stops when cancelled"
    );
    assert_eq!(
        seen.completed.load(Ordering::SeqCst) + seen.stopped_early.load(Ordering::SeqCst),
        stats.spawned as usize
    );
    println!("self-checks passed");
}
