//! A tonic gRPC server behind `sidejob::tower::GrpcShedLayer`, loaded by
//! tonic clients of its own, printing what the clients saw.
//!
//! The service (hand-written `prost` messages, as tonic's code generator
//! would write them; see `tests/support/grpc.rs`) has three unary methods
//! and a server-streaming one, with priorities read from the method's
//! path:
//!
//! * `/demo.Demo/Check`, a health check: critical (it may take the last
//!   slots the others leave, so a load balancer's probe gets through an
//!   overload);
//! * `/demo.Demo/Bulk`, batch work: sheddable (it may fill half the
//!   capacity, and is refused first);
//! * `/demo.Demo/Unary` and `/demo.Demo/Stream` (five messages): normal
//!   (three quarters of the capacity).
//!
//! Each call but the check does `--work-ms` of work (per message, for a
//! stream). `--clients` tasks call in a closed loop over one HTTP/2
//! connection for `--duration` seconds; a refused client waits the
//! `grpc-retry-pushback-ms` it was told, capped at 5 ms, before it tries
//! again. The report shows, per method, the calls, the answers, the
//! statuses the clients got (`RESOURCE_EXHAUSTED` from the layer, in a
//! trailers-only response), the pushback they read, and the median time a
//! refusal took to reach the client.
//!
//! ```text
//! cargo run --release --features grpc --example grpc_server
//! cargo run --release --features grpc --example grpc_server -- --capacity 4 --clients 64 --duration 5
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use sidejob::tower::GrpcShedLayer;
use sidejob::{Priority, Resource};
use tonic::Code;

#[allow(dead_code)]
#[path = "../tests/support/draw.rs"]
mod draw;
#[allow(dead_code)]
#[path = "../tests/support/grpc.rs"]
mod grpc;

use grpc::{call, open_stream, Ask, BULK, CHECK, STREAM, UNARY};

#[derive(Debug, Parser)]
#[command(about = "A tonic server behind GrpcShedLayer, loaded by tonic clients")]
struct Args {
    /// Calls in flight the server admits.
    #[arg(long, default_value_t = 8)]
    capacity: usize,
    /// Client tasks calling in a closed loop.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 3)]
    duration: u64,
    /// The work of a call (of each message of a stream), in milliseconds.
    #[arg(long, default_value_t = 10)]
    work_ms: u32,
}

/// What the clients saw of one method.
#[derive(Default)]
struct Seen {
    calls: u64,
    answered: u64,
    statuses: BTreeMap<String, u64>,
    pushback: Option<String>,
    refusal: Option<Histogram<u64>>,
}

impl Seen {
    fn merge(&mut self, other: Seen) {
        self.calls += other.calls;
        self.answered += other.answered;
        for (status, count) in other.statuses {
            *self.statuses.entry(status).or_default() += count;
        }
        self.pushback = self.pushback.take().or(other.pushback);
        match (&mut self.refusal, other.refusal) {
            (Some(mine), Some(theirs)) => mine.add(&theirs).unwrap(),
            (mine @ None, theirs) => *mine = theirs,
            _ => {}
        }
    }

    fn refused(&self) -> u64 {
        self.statuses.get("ResourceExhausted").copied().unwrap_or(0)
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let resource = Arc::new(
        Resource::builder()
            .name("grpc")
            .capacity(args.capacity)
            .share(Priority::Normal, 0.75)
            .share(Priority::Sheddable, 0.5)
            .build()
            .expect("--capacity fits the shards"),
    );
    let layer = GrpcShedLayer::new(Arc::clone(&resource))
        .retry_after(Duration::from_millis(5))
        .priority(
            |request: &http::Request<tonic::body::Body>| match request.uri().path() {
                CHECK => Priority::Critical,
                BULK => Priority::Sheddable,
                _ => Priority::Normal,
            },
        );
    let served = grpc::serve(layer).await;
    let channel = served.channel().await;
    println!(
        "grpc_server on {}: capacity {}, {} clients for {} s, {} ms of work a call",
        served.address, args.capacity, args.clients, args.duration, args.work_ms
    );

    let seen: Arc<Mutex<BTreeMap<&'static str, Seen>>> = Arc::default();
    let end = Instant::now() + Duration::from_secs(args.duration);
    let clients: Vec<_> = (0..args.clients)
        .map(|client| {
            let (channel, seen) = (channel.clone(), Arc::clone(&seen));
            let work_ms = args.work_ms;
            tokio::spawn(async move {
                let mut draw =
                    draw::Draw(0x9e37_79b9_7f4a_7c15 ^ ((client as u64 + 1) * 0x2545_f491));
                let mut mine: BTreeMap<&'static str, Seen> = BTreeMap::new();
                while Instant::now() < end {
                    let method = match draw.below(100) {
                        0..=9 => CHECK,
                        10..=39 => BULK,
                        40..=79 => UNARY,
                        _ => STREAM,
                    };
                    let ask = Ask {
                        code: 0,
                        gated: false,
                        count: 5,
                        work_ms: if method == CHECK { 0 } else { work_ms },
                    };
                    let began = Instant::now();
                    let outcome = if method == STREAM {
                        match open_stream(channel.clone(), ask).await {
                            Ok(mut stream) => loop {
                                match stream.message().await {
                                    Ok(Some(_)) => continue,
                                    Ok(None) => break Ok(()),
                                    Err(status) => break Err(status),
                                }
                            },
                            Err(status) => Err(status),
                        }
                    } else {
                        call(channel.clone(), method, ask).await.map(drop)
                    };
                    let seen = mine.entry(method).or_default();
                    seen.calls += 1;
                    match outcome {
                        Ok(()) => seen.answered += 1,
                        Err(status) => {
                            *seen
                                .statuses
                                .entry(format!("{:?}", status.code()))
                                .or_default() += 1;
                            if status.code() == Code::ResourceExhausted {
                                let refusal = seen.refusal.get_or_insert_with(|| {
                                    Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap()
                                });
                                refusal.saturating_record(began.elapsed().as_nanos() as u64);
                                let pushback = status
                                    .metadata()
                                    .get("grpc-retry-pushback-ms")
                                    .and_then(|value| value.to_str().ok())
                                    .and_then(|value| value.parse::<u64>().ok());
                                seen.pushback = pushback.map(|ms| format!("{ms} ms"));
                                let wait = Duration::from_millis(pushback.unwrap_or(5).min(5));
                                tokio::time::sleep(wait).await;
                            }
                        }
                    }
                }
                let mut seen = seen.lock().unwrap();
                for (method, figures) in mine {
                    seen.entry(method).or_default().merge(figures);
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }

    let seen = Arc::try_unwrap(seen).ok().unwrap().into_inner().unwrap();
    println!(
        "\n{:<20} {:>10} {:>8} {:>9} {:>14} {:>9} {:>12}",
        "method", "priority", "calls", "answered", "exhausted", "pushback", "refusal p50"
    );
    for (method, priority) in [
        (CHECK, "critical"),
        (UNARY, "normal"),
        (STREAM, "normal"),
        (BULK, "sheddable"),
    ] {
        let Some(figures) = seen.get(method) else {
            continue;
        };
        let p50 = figures.refusal.as_ref().map_or_else(
            || "-".to_owned(),
            |histogram| format!("{:.0} µs", histogram.value_at_quantile(0.5) as f64 / 1e3),
        );
        println!(
            "{:<20} {:>10} {:>8} {:>9} {:>14} {:>9} {:>12}",
            method,
            priority,
            figures.calls,
            figures.answered,
            figures.refused(),
            figures.pushback.as_deref().unwrap_or("-"),
            p50
        );
        let others: Vec<String> = figures
            .statuses
            .iter()
            .filter(|(status, _)| status.as_str() != "ResourceExhausted")
            .map(|(status, count)| format!("{status}: {count}"))
            .collect();
        if !others.is_empty() {
            println!("  other statuses: {}", others.join(", "));
        }
    }
    let stats = resource.stats();
    println!(
        "\nthe server's resource: accepted {}, rejected {}, in flight now {}",
        stats.accepted, stats.rejected, stats.usage
    );
    let rate = |method| {
        seen.get(method).map_or(0.0, |figures: &Seen| {
            figures.refused() as f64 / figures.calls.max(1) as f64
        })
    };
    let (critical, sheddable) = (rate(CHECK), rate(BULK));
    let ordered = critical < sheddable || sheddable == 0.0;
    println!(
        "refused: critical {:.1}%, sheddable {:.1}%: {}",
        critical * 100.0,
        sheddable * 100.0,
        if ordered {
            "sheddable calls went first"
        } else {
            "FAILED: the priorities did not hold"
        }
    );
    let clean = seen.values().all(|figures| {
        figures
            .statuses
            .keys()
            .all(|status| status == "ResourceExhausted")
    });
    println!(
        "report: calls={} answered={} exhausted={} other_statuses={} critical_refused={:.4} sheddable_refused={:.4}",
        seen.values().map(|figures| figures.calls).sum::<u64>(),
        seen.values().map(|figures| figures.answered).sum::<u64>(),
        seen.values().map(Seen::refused).sum::<u64>(),
        if clean { 0 } else { 1 },
        critical,
        sheddable,
    );
    if !clean {
        println!("FAILED: a client saw a status the layer does not send");
    }
}
