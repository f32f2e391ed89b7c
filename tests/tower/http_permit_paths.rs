//! Every path an HTTP request's permit can take releases it exactly once:
//! declared lengths up to `u64::MAX` never end a body early, and exact ones
//! end it at the right frame; an overload answer that ends at its head is
//! still a drop; panics in the inner call, its future or the body; every
//! way an upgrade's permit is taken or not, and a take racing the
//! response's reclaim.
#![cfg(feature = "http")]

use crate::support;
use support::adaptive_window::{aimd, close_window};

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use sidejob::tower::{HttpShedLayer, UpgradePermit};
use sidejob::{OwnedPermit, Resource};
use tower::{service_fn, Layer, Service, ServiceExt};

/// Chunks, with an optional exact size hint (possibly a lie).
#[derive(Debug, Default)]
struct Chunks {
    chunks: VecDeque<Bytes>,
    exact: Option<u64>,
}

impl Chunks {
    fn of(n: usize, exact: Option<u64>) -> Self {
        Chunks {
            chunks: (0..n).map(|_| Bytes::from_static(b"abcd")).collect(),
            exact,
        }
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.chunks.pop_front().map(|c| Ok(Frame::data(c))))
    }
    fn size_hint(&self) -> SizeHint {
        match self.exact {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A body that declares a huge length (header or exact hint) holds its
/// permit until the very end, never earlier, and releases exactly once.
#[test]
fn huge_declared_lengths_never_end_early() {
    let rt = rt();
    rt.block_on(async {
        let headers: &[Option<&str>] = &[
            Some("18446744073709551615"),
            Some("18446744073709551614"),
            Some("18446744073709551613"),
            Some("18446744073709551616"),
            Some("9999999999999999999"),
            Some("99999999999999999999"),
            Some("1000000000000000000"),
            None,
        ];
        let hints: &[Option<u64>] = &[
            None,
            Some(u64::MAX),
            Some(u64::MAX - 1),
            Some(u64::MAX - 2),
            Some(u64::MAX / 2),
        ];
        for &cl in headers {
            for &hint in hints {
                for adaptive_resource in [false, true] {
                    let resource = if adaptive_resource {
                        aimd(4)
                    } else {
                        Arc::new(Resource::new(4))
                    };
                    let layer = HttpShedLayer::new(Arc::clone(&resource));
                    let service = layer.layer(service_fn(move |_: Request<()>| async move {
                        let mut b = Response::builder();
                        if let Some(cl) = cl {
                            b = b.header(header::CONTENT_LENGTH, cl);
                        }
                        Ok::<_, Infallible>(b.body(Chunks::of(5, hint)).unwrap())
                    }));
                    let mut body = service.oneshot(Request::new(())).await.unwrap().into_body();
                    for i in 0..5 {
                        assert!(
                            body.holds_permit(),
                            "cl {cl:?} hint {hint:?} adaptive {adaptive_resource}: ended early before frame {i}"
                        );
                        assert_eq!(resource.usage(), 1);
                        let frame = body.frame().await.unwrap().unwrap();
                        assert_eq!(frame.into_data().unwrap().len(), 4);
                    }
                    assert!(body.holds_permit(), "cl {cl:?} hint {hint:?}: ended at 20 bytes");
                    assert!(body.frame().await.is_none());
                    assert!(!body.holds_permit());
                    assert_eq!(resource.usage(), 0);
                    drop(body);
                    assert_eq!(resource.usage(), 0, "double release?");
                    let stats = resource.stats();
                    let leased: i64 = stats.shards.iter().map(|s| s.limit as i64).sum();
                    assert_eq!(leased + stats.reserve, 4, "{stats:?}");
                }
            }
        }
    });
}

/// Exact lengths at 20 bytes end at the 20th byte; at 19 (a lie, body longer)
/// end after it; the sentinels' neighbours behave as lengths.
#[test]
fn declared_lengths_end_exactly() {
    let rt = rt();
    rt.block_on(async {
        for (cl, hint, ends_after) in [
            (Some("20"), None, 5usize),
            (Some("19"), None, 5),
            (Some("4"), None, 1),
            (Some("00000000000000000004"), None, 6), // 20 chars: not read; no hint
            (None, Some(20u64), 5),
            (None, Some(8u64), 2),
        ] {
            let resource = Arc::new(Resource::new(2));
            let layer = HttpShedLayer::new(Arc::clone(&resource));
            let service = layer.layer(service_fn(move |_: Request<()>| async move {
                let mut b = Response::builder();
                if let Some(cl) = cl {
                    b = b.header(header::CONTENT_LENGTH, cl);
                }
                Ok::<_, Infallible>(b.body(Chunks::of(5, hint)).unwrap())
            }));
            let mut body = service.oneshot(Request::new(())).await.unwrap().into_body();
            let mut frames = 0;
            while body.holds_permit() {
                match body.frame().await {
                    Some(_) => frames += 1,
                    None => {
                        frames += 1;
                        break;
                    }
                }
            }
            assert_eq!(frames, ends_after, "cl {cl:?} hint {hint:?}");
            assert_eq!(resource.usage(), 0);
            while body.frame().await.is_some() {}
            drop(body);
            assert_eq!(resource.usage(), 0);
        }
    });
}

/// Over an adaptive resource, a 503/429/504 with Content-Length: 0 (or at
/// its head for other reasons) still counts as a drop, not a sample.
#[test]
fn overload_answers_ending_at_their_head_are_drops() {
    let rt = rt();
    rt.block_on(async {
        for (method, status, cl, upgrade) in [
            (
                Method::GET,
                StatusCode::SERVICE_UNAVAILABLE,
                Some("0"),
                false,
            ),
            (Method::GET, StatusCode::TOO_MANY_REQUESTS, Some("0"), false),
            (Method::GET, StatusCode::GATEWAY_TIMEOUT, Some("0"), false),
            (Method::HEAD, StatusCode::SERVICE_UNAVAILABLE, None, false),
            (
                Method::GET,
                StatusCode::SERVICE_UNAVAILABLE,
                Some("0"),
                true,
            ),
            (
                Method::CONNECT,
                StatusCode::SERVICE_UNAVAILABLE,
                Some("0"),
                false,
            ),
            (
                Method::GET,
                StatusCode::SERVICE_UNAVAILABLE,
                Some("000"),
                false,
            ),
        ] {
            let resource = aimd(20);
            let layer = HttpShedLayer::new(Arc::clone(&resource));
            let service = layer.layer(service_fn(move |_: Request<()>| async move {
                let mut b = Response::builder().status(status);
                if let Some(cl) = cl {
                    b = b.header(header::CONTENT_LENGTH, cl);
                }
                Ok::<_, Infallible>(b.body(Chunks::of(0, None)).unwrap())
            }));
            let mut rb = Request::builder().method(method.clone()).uri("/");
            if upgrade {
                rb = rb.header(header::UPGRADE, "websocket");
            }
            let response = service.oneshot(rb.body(()).unwrap()).await.unwrap();
            assert_eq!(response.status(), status);
            assert!(!response.body().holds_permit(), "{method} {status} {cl:?}");
            assert_eq!(resource.usage(), 0);
            drop(response);
            close_window(&resource).await;
            let stats = resource.adaptive_stats().unwrap();
            assert_eq!(
                (stats.drops, stats.samples),
                (1, 1),
                "{method} {status} cl {cl:?} upgrade {upgrade}: {stats:?}"
            );
            assert_eq!(resource.usage(), 0);
        }
    });
}

#[derive(Default)]
struct Boom;
impl Body for Boom {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        panic!("in body")
    }
}

/// Panics in the inner service's `call`: before or after taking the
/// upgrade permit, for ordinary and upgrade requests. Panics in the inner
/// future's poll, and in the body's poll_frame.
#[test]
fn panics_everywhere_release_exactly_once() {
    let rt = rt();
    for adaptive_resource in [false, true] {
        for upgrade in [false, true] {
            for take_first in [false, true] {
                for where_ in 0..3 {
                    let resource = if adaptive_resource {
                        aimd(3)
                    } else {
                        Arc::new(Resource::new(3))
                    };
                    let layer = HttpShedLayer::new(Arc::clone(&resource));
                    let stash: Arc<Mutex<Vec<OwnedPermit>>> = Arc::default();
                    let stash2 = Arc::clone(&stash);
                    let mut service = layer.layer(tower::service_fn(move |req: Request<()>| {
                        let taken = req
                            .extensions()
                            .get::<UpgradePermit>()
                            .filter(|_| take_first)
                            .and_then(UpgradePermit::take);
                        if where_ == 0 {
                            drop(taken);
                            panic!("in call");
                        }
                        if let Some(t) = taken {
                            stash2.lock().unwrap().push(t);
                        }
                        async move {
                            if where_ == 1 {
                                panic!("in future");
                            }
                            Ok::<_, Infallible>(Response::new(Boom))
                        }
                    }));
                    let mut rb = Request::builder().uri("/");
                    if upgrade {
                        rb = rb.header(header::UPGRADE, "x");
                    }
                    let req = rb.body(()).unwrap();
                    let res = catch_unwind(AssertUnwindSafe(|| {
                        rt.block_on(async {
                            let fut = service.ready().await.unwrap().call(req);
                            let resp = fut.await.unwrap();
                            let mut body = resp.into_body();
                            let _ = body.frame().await;
                        })
                    }));
                    assert!(res.is_err());
                    let held = stash.lock().unwrap().len();
                    assert_eq!(
                        resource.usage(),
                        held,
                        "adaptive {adaptive_resource} upgrade {upgrade} take {take_first} where {where_}"
                    );
                    stash.lock().unwrap().clear();
                    assert_eq!(resource.usage(), 0);
                    // Whole again: three permits, then a refusal.
                    let all: Vec<_> = (0..3).map(|_| resource.try_acquire().unwrap()).collect();
                    assert!(resource.try_acquire().is_err());
                    drop(all);
                    // Service still usable after a panic in call? (readiness)
                    let _ = &mut service;
                }
            }
        }
    }
}

/// Upgrade requests: handler takes or not, keeps the handle and takes
/// later, future dropped before/after the handler, inner errors. Usage
/// returns to 0 and take after the response is None.
#[test]
fn upgrade_permit_every_path() {
    let rt = rt();
    rt.block_on(async {
        for adaptive_resource in [false, true] {
            for mode in 0..6 {
                let resource = if adaptive_resource {
                    aimd(2)
                } else {
                    Arc::new(Resource::new(2))
                };
                let layer = HttpShedLayer::new(Arc::clone(&resource));
                let handles: Arc<Mutex<Vec<UpgradePermit>>> = Arc::default();
                let h2 = Arc::clone(&handles);
                let kept: Arc<Mutex<Vec<OwnedPermit>>> = Arc::default();
                let kept_outer = Arc::clone(&kept);
                let service = layer.layer(service_fn(move |req: Request<()>| {
                    let handle = req.extensions().get::<UpgradePermit>().cloned().unwrap();
                    h2.lock().unwrap().push(handle.clone());
                    let kept2 = Arc::clone(&kept);
                    async move {
                        match mode {
                            0 => Ok(Response::builder()
                                .status(101)
                                .body(Chunks::of(0, None))
                                .unwrap()),
                            1 => {
                                let p = handle.take();
                                assert!(p.is_some());
                                drop(p);
                                Ok(Response::new(Chunks::of(2, None)))
                            }
                            2 => Err("boom"),
                            3 => {
                                tokio::time::sleep(Duration::from_secs(10)).await;
                                unreachable!()
                            }
                            4 => Ok(Response::builder()
                                .status(200)
                                .body(Chunks::of(2, Some(8)))
                                .unwrap()),
                            _ => {
                                let p = handle.take().unwrap();
                                kept2.lock().unwrap().push(p);
                                Err("taken-and-kept")
                            }
                        }
                    }
                }));
                let req = Request::builder()
                    .uri("/")
                    .header(header::UPGRADE, "ws")
                    .body(())
                    .unwrap();
                let fut = service.oneshot(req);
                let out = tokio::time::timeout(Duration::from_millis(30), fut).await;
                let what = format!("adaptive {adaptive_resource} mode {mode}");
                match mode {
                    0 => {
                        let r = out.unwrap().unwrap();
                        assert!(!r.body().holds_permit(), "{what}");
                    }
                    1 => {
                        let r = out.unwrap().unwrap();
                        assert!(!r.body().holds_permit(), "{what}");
                    }
                    2 => assert!(out.unwrap().is_err()),
                    3 => assert!(out.is_err()),
                    4 => {
                        let mut b = out.unwrap().unwrap().into_body();
                        assert!(b.holds_permit());
                        assert_eq!(resource.usage(), 1);
                        let _ = b.frame().await;
                        assert!(b.holds_permit());
                        let _ = b.frame().await;
                        assert!(!b.holds_permit(), "{what}");
                    }
                    _ => {
                        assert!(out.unwrap().is_err());
                        assert_eq!(resource.usage(), 1, "{what}");
                        kept_outer.lock().unwrap().clear();
                    }
                }
                for h in handles.lock().unwrap().iter() {
                    assert!(!h.holds(), "{what}");
                    assert!(h.take().is_none(), "{what}");
                }
                assert_eq!(resource.usage(), 0, "{what}");
                let stats = resource.stats();
                let leased: i64 = stats.shards.iter().map(|s| s.limit as i64).sum();
                assert_eq!(leased + stats.reserve, 2, "{what} {stats:?}");
            }
        }
    });
}

/// Races between the handler's `take` on another thread and the response
/// future's reclaim, over a multi-thread runtime: exactly one of them gets
/// the permit, usage returns to 0, never above capacity.
#[test]
fn take_races_reclaim() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let resource = Arc::new(Resource::builder().capacity(8).shards(64).build().unwrap());
        let layer = HttpShedLayer::new(Arc::clone(&resource));
        let taken = Arc::new(AtomicUsize::new(0));
        let none = Arc::new(AtomicUsize::new(0));
        let over = Arc::new(AtomicU64::new(0));
        let (t2, n2, r2) = (Arc::clone(&taken), Arc::clone(&none), Arc::clone(&resource));
        let service = layer.layer(service_fn(move |req: Request<()>| {
            let handle = req.extensions().get::<UpgradePermit>().cloned();
            let (t2, n2, r2) = (Arc::clone(&t2), Arc::clone(&n2), Arc::clone(&r2));
            if let Some(handle) = handle {
                std::thread::spawn(move || {
                    std::thread::yield_now();
                    match handle.take() {
                        Some(p) => {
                            t2.fetch_add(1, SeqCst);
                            assert!(r2.usage() <= 8);
                            drop(p);
                        }
                        None => {
                            n2.fetch_add(1, SeqCst);
                        }
                    }
                });
            }
            async move {
                tokio::task::yield_now().await;
                Ok::<_, Infallible>(
                    Response::builder()
                        .status(101)
                        .body(Chunks::of(0, None))
                        .unwrap(),
                )
            }
        }));
        let mut tasks = Vec::new();
        let ok = Arc::new(AtomicUsize::new(0));
        for i in 0..4000usize {
            let service = service.clone();
            let ok = Arc::clone(&ok);
            let over = Arc::clone(&over);
            let resource = Arc::clone(&resource);
            tasks.push(tokio::spawn(async move {
                let mut rb = Request::builder().uri("/");
                rb = if i % 3 == 0 {
                    rb.method(Method::CONNECT).uri("example.com:443")
                } else {
                    rb.header(header::UPGRADE, "x")
                };
                let fut = service.oneshot(rb.body(()).unwrap());
                if i % 5 == 0 {
                    // cancel sometimes
                    let _ = tokio::time::timeout(Duration::from_micros(1), fut).await;
                } else {
                    let Ok(r) = fut.await;
                    if r.status() == 101 {
                        ok.fetch_add(1, SeqCst);
                    }
                }
                if resource.usage() > 8 {
                    over.fetch_add(1, SeqCst);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        // Let the spawned threads finish.
        for _ in 0..200 {
            if resource.usage() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        eprintln!(
            "ok {} taken {} none {}",
            ok.load(SeqCst),
            taken.load(SeqCst),
            none.load(SeqCst)
        );
        assert_eq!(over.load(SeqCst), 0);
        assert_eq!(resource.usage(), 0, "{:?}", resource.stats());
        let stats = resource.stats();
        let leased: i64 = stats.shards.iter().map(|s| s.limit as i64).sum();
        assert_eq!(leased + stats.reserve, 8, "{stats:?}");
    });
}

/// A hyper server with huge Content-Length bodies: the response streams
/// fully and the permit is held until the end.
#[test]
fn hyper_served_body_with_exact_hint_near_sentinels() {
    // Sanity: Remaining sentinel neighbours through a real body type.
    let rt = rt();
    rt.block_on(async {
        let resource = Arc::new(Resource::new(1));
        let layer = HttpShedLayer::new(Arc::clone(&resource));
        let service = layer.layer(service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(http_body_util::Full::new(
                Bytes::from_static(b"hello"),
            )))
        }));
        let body = service.oneshot(Request::new(())).await.unwrap().into_body();
        assert!(body.holds_permit());
        let b = body.collect().await.unwrap().to_bytes();
        assert_eq!(&b[..], b"hello");
        assert_eq!(resource.usage(), 0);
        let _: &dyn Future<Output = ()> = &async {};
    });
}
