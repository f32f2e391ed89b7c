//! The cost of a shedding layer per request: `poll_ready` + `call` + the
//! response future polled to completion, on a trivial always-ready service,
//! for sidejob's layers and tower's own limits, on 1 and N threads.
//!
//! # Contenders
//!
//! | name                  | the service |
//! |-----------------------|-------------|
//! | `bare`                | the trivial service itself (`u64` in, `u64` out) |
//! | `shed`                | `sidejob::tower::Shed` over it (feature `tower`) |
//! | `bare-http`           | a trivial `http::Request<()>` → `http::Response<()>` service |
//! | `http-shed`           | `sidejob::tower::HttpShed` over `bare-http` (feature `http`) |
//! | `grpc-shed`           | `sidejob::tower::GrpcShed` over `bare-http` (feature `grpc`) |
//! | `tower-loadshed-global` | tower's `LoadShed<GlobalConcurrencyLimit>` over `bare` |
//! | `tower-concurrency`   | tower's `ConcurrencyLimit` over `bare` (clones share its semaphore) |
//! | `resource-try-acquire` | not a service: `Resource::try_acquire` + drop, the yardstick of the targets |
//!
//! Each limit admits 1024 requests in flight, more than the threads ever
//! hold, so nothing is refused: the figures are the price of admission.
//! Every thread owns a clone of one prototype service (clones share the
//! bound, as the layers' services do) and drives it with a no-op waker;
//! every future is ready at its first poll.
//!
//! Time is **nanoseconds per request per thread**, as in
//! `benches/admission.rs`.
//!
//! ```text
//! cargo bench --bench tower --features grpc
//! cargo bench --bench tower --features grpc -- 'tower/2-threads'
//! ```

mod common;

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use common::{run_threads, thread_counts};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use tower::limit::{ConcurrencyLimit, GlobalConcurrencyLimitLayer};
use tower::load_shed::LoadShed;
use tower::{Layer, Service};

/// Requests in flight every limit admits.
const LIMIT: usize = 1024;

/// Always ready; answers its request at once.
#[derive(Clone, Copy)]
struct Echo;

impl Service<u64> for Echo {
    type Response = u64;
    type Error = Infallible;
    type Future = std::future::Ready<Result<u64, Infallible>>;

    #[inline]
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(&mut self, request: u64) -> Self::Future {
        std::future::ready(Ok(request))
    }
}

/// `Echo` for HTTP.
#[derive(Clone, Copy)]
struct HttpEcho;

impl Service<http::Request<()>> for HttpEcho {
    type Response = http::Response<()>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<http::Response<()>, Infallible>>;

    #[inline]
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(&mut self, _request: http::Request<()>) -> Self::Future {
        std::future::ready(Ok(http::Response::new(())))
    }
}

/// One request through `service`: ready, call, the future polled once.
/// Returns whether it was answered.
#[inline]
fn one_request<S: Service<R>, R>(service: &mut S, request: R) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    if !matches!(service.poll_ready(&mut cx), Poll::Ready(Ok(()))) {
        return false;
    }
    let future = pin!(service.call(request));
    let answered = matches!(future.poll(&mut cx), Poll::Ready(Ok(_)));
    black_box(answered)
}

/// `iters` requests on a clone of `prototype`, made by `request`.
#[inline(never)]
fn run_loop<S, R>(prototype: &S, request: impl Fn(u64) -> R, iters: u64) -> u64
where
    S: Service<R> + Clone,
{
    let mut service = prototype.clone();
    (0..iters)
        .map(|i| u64::from(one_request(&mut service, request(black_box(i)))))
        .sum()
}

fn contender<S, R>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    threads: usize,
    prototype: &S,
    request: impl Fn(u64) -> R + Sync,
) where
    S: Service<R> + Clone + Sync,
{
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let (elapsed, answered) =
                run_threads(threads, |_| run_loop(prototype, &request, iters));
            assert_eq!(
                answered,
                iters * threads as u64,
                "{name}: a request was refused"
            );
            elapsed
        });
    });
}

fn tower_group(c: &mut Criterion) {
    for threads in thread_counts() {
        let unit = if threads == 1 { "thread" } else { "threads" };
        let mut group = c.benchmark_group(format!("tower/{threads}-{unit}"));
        group.throughput(Throughput::Elements(threads as u64));
        let number = |i: u64| i;
        let http_request = |_: u64| http::Request::new(());

        contender(&mut group, "bare", threads, &Echo, number);
        let shed = sidejob::tower::ShedLayer::with_capacity(LIMIT).unwrap();
        contender(&mut group, "shed", threads, &shed.layer(Echo), number);
        contender(&mut group, "bare-http", threads, &HttpEcho, http_request);
        let http_shed = sidejob::tower::HttpShedLayer::with_capacity(LIMIT).unwrap();
        contender(
            &mut group,
            "http-shed",
            threads,
            &http_shed.layer(HttpEcho),
            http_request,
        );
        let grpc_shed = sidejob::tower::GrpcShedLayer::with_capacity(LIMIT).unwrap();
        contender(
            &mut group,
            "grpc-shed",
            threads,
            &grpc_shed.layer(HttpEcho),
            http_request,
        );
        let global = LoadShed::new(GlobalConcurrencyLimitLayer::new(LIMIT).layer(Echo));
        contender(
            &mut group,
            "tower-loadshed-global",
            threads,
            &global,
            number,
        );
        let concurrency = ConcurrencyLimit::new(Echo, LIMIT);
        contender(
            &mut group,
            "tower-concurrency",
            threads,
            &concurrency,
            number,
        );

        let resource = Arc::new(sidejob::Resource::new(LIMIT));
        group.bench_function("resource-try-acquire", |b| {
            b.iter_custom(|iters| {
                run_threads(threads, |_| {
                    (0..iters)
                        .map(|_| u64::from(black_box(resource.try_acquire()).is_ok()))
                        .sum()
                })
                .0
            });
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = tower_group
}
criterion_main!(benches);
