//! `GrpcShedLayer` in front of a real tonic server on 127.0.0.1, called by
//! a real tonic client (#43): a refused call gets the chosen status and the
//! pushback in a trailers-only response; a stream holds its permit until its
//! last message and its trailers; a cancelled call frees its permit; a
//! critical method gets through while the bulk one is shed; an adaptive
//! limit falls on `UNAVAILABLE`, from the head or from the trailers, and
//! recovers. The handlers wait on the backend's gate, so each test knows
//! what is in flight without sleeping.
#![cfg(feature = "grpc")]

use std::sync::Arc;
use std::time::Duration;

use crate::support;
use support::adaptive_window::{aimd_for_calls as adaptive, close_call_window as close};
use support::grpc::{
    ask, call, gated, gated_stream, open_stream, serve, until, Ask, BULK, CHECK, STREAM, UNARY,
};

use sidejob::tower::{GrpcRefusal, GrpcShedLayer};
use sidejob::{Priority, Resource};
use tonic::Code;

#[tokio::test]
async fn a_refused_call_gets_resource_exhausted_and_the_pushback() {
    let layer = GrpcShedLayer::with_capacity(1)
        .unwrap()
        .retry_after(Duration::from_millis(250));
    let resource = Arc::clone(layer.resource());
    let served = serve(layer).await;
    let channel = served.channel().await;
    let held = tokio::spawn(call(channel.clone(), UNARY, gated()));
    assert_eq!(served.entered().await, UNARY);

    let refused = call(channel.clone(), UNARY, ask(Code::Ok))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(refused.message(), "overload: every shard is at its limit");
    assert_eq!(
        refused.metadata().get("grpc-retry-pushback-ms").unwrap(),
        "250"
    );
    assert_eq!(resource.stats().rejected, 1);

    served.open(1);
    held.await.unwrap().unwrap();
    assert_eq!(resource.usage(), 0); // the answer's trailers ended the call
    call(channel, UNARY, ask(Code::Ok)).await.unwrap();
    assert_eq!(served.entered().await, UNARY); // the refused call never entered
}

#[tokio::test]
async fn unavailable_when_the_layer_is_told_to() {
    let layer = GrpcShedLayer::with_capacity(1)
        .unwrap()
        .refuse_with(GrpcRefusal::Unavailable);
    let served = serve(layer).await;
    let channel = served.channel().await;
    let held = tokio::spawn(call(channel.clone(), UNARY, gated()));
    served.entered().await;
    let refused = call(channel.clone(), UNARY, ask(Code::Ok))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
    assert_eq!(
        refused.metadata().get("grpc-retry-pushback-ms").unwrap(),
        "1000"
    );
    served.open(1);
    held.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_stream_holds_its_permit_until_its_last_message_and_trailers() {
    let layer = GrpcShedLayer::with_capacity(1).unwrap();
    let resource = Arc::clone(layer.resource());
    let served = serve(layer).await;
    let channel = served.channel().await;
    let mut stream = open_stream(channel.clone(), gated_stream(3)).await.unwrap();
    served.entered().await;
    for index in 0..3 {
        // Streaming: the permit is held, and another call is refused.
        assert_eq!(resource.usage(), 1);
        let refused = call(channel.clone(), UNARY, ask(Code::Ok))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted);
        served.open(1);
        assert_eq!(stream.message().await.unwrap().unwrap().index, index);
    }
    // The last message is out; the trailers end the call.
    assert!(stream.message().await.unwrap().is_none());
    assert_eq!(resource.usage(), 0);
    assert_eq!(resource.stats().rejected, 3);
    call(channel, UNARY, ask(Code::Ok)).await.unwrap();
}

#[tokio::test]
async fn a_cancelled_call_frees_its_permit() {
    let layer = GrpcShedLayer::with_capacity(1).unwrap();
    let resource = Arc::clone(layer.resource());
    let served = serve(layer).await;
    let channel = served.channel().await;

    // A unary call the client gives up on while the handler works.
    let held = tokio::spawn(call(channel.clone(), UNARY, gated()));
    served.entered().await;
    assert_eq!(resource.usage(), 1);
    held.abort();
    until("the cancelled unary call's permit is back", || {
        resource.usage() == 0
    })
    .await;
    call(channel.clone(), UNARY, ask(Code::Ok)).await.unwrap();

    // A stream the client drops after its first message.
    assert_eq!(served.entered().await, UNARY);
    let mut stream = open_stream(channel.clone(), gated_stream(3)).await.unwrap();
    assert_eq!(served.entered().await, STREAM);
    served.open(1);
    assert_eq!(stream.message().await.unwrap().unwrap().index, 0);
    drop(stream);
    until("the dropped stream's permit is back", || {
        resource.usage() == 0
    })
    .await;
    call(channel, UNARY, ask(Code::Ok)).await.unwrap();
    assert_eq!(resource.stats().rejected, 0);
}

#[tokio::test]
async fn a_critical_method_gets_through_while_the_bulk_one_is_shed() {
    let resource = Arc::new(
        Resource::builder()
            .capacity(2)
            .share(Priority::Sheddable, 0.5)
            .build()
            .unwrap(),
    );
    let layer = GrpcShedLayer::new(Arc::clone(&resource)).priority(
        |request: &http::Request<tonic::body::Body>| match request.uri().path() {
            CHECK => Priority::Critical,
            BULK => Priority::Sheddable,
            _ => Priority::Normal,
        },
    );
    let served = serve(layer).await;
    let channel = served.channel().await;
    let bulk = tokio::spawn(call(channel.clone(), BULK, gated()));
    assert_eq!(served.entered().await, BULK);

    // Bulk's share (one slot) is in use: the next bulk call is shed.
    let shed = call(channel.clone(), BULK, ask(Code::Ok))
        .await
        .unwrap_err();
    assert_eq!(shed.code(), Code::ResourceExhausted);
    // The health check takes the slot bulk may not.
    let check = tokio::spawn(call(channel.clone(), CHECK, gated()));
    assert_eq!(served.entered().await, CHECK);
    assert_eq!(resource.usage(), 2);
    served.open(2);
    bulk.await.unwrap().unwrap();
    check.await.unwrap().unwrap();
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn the_adaptive_limit_falls_on_unavailable_and_recovers() {
    let resource = adaptive(4);
    let served = serve(GrpcShedLayer::new(Arc::clone(&resource))).await;
    let channel = served.channel().await;
    close(&resource).await; // a fresh window for the calls

    // The handler answers UNAVAILABLE: a trailers-only response, judged at
    // its head.
    for _ in 0..3 {
        let status = call(channel.clone(), UNARY, ask(Code::Unavailable))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
    }
    // A NOT_FOUND is an answer, not overload: no drop.
    call(channel.clone(), UNARY, ask(Code::NotFound))
        .await
        .unwrap_err();
    close(&resource).await;
    let stats = resource.adaptive_stats().unwrap();
    // Counted since the start: the first window's one sample, then the
    // NOT_FOUND and the closing release.
    assert_eq!((stats.drops, stats.samples), (3, 3), "{stats:?}");
    assert_eq!(resource.capacity(), 3); // 4 × 0.9, backed off

    // A stream whose status comes in its trailers, after its messages.
    served.open(2);
    let failing = Ask {
        code: Code::Unavailable as i32,
        ..gated_stream(2)
    };
    let mut stream = open_stream(channel.clone(), failing).await.unwrap();
    assert_eq!(stream.message().await.unwrap().unwrap().index, 0);
    assert_eq!(stream.message().await.unwrap().unwrap().index, 1);
    assert_eq!(
        stream.message().await.unwrap_err().code(),
        Code::Unavailable
    );
    close(&resource).await;
    assert_eq!(resource.adaptive_stats().unwrap().drops, 4);
    assert_eq!(resource.capacity(), 2);

    // The downstream recovers: two calls at a time, served, window after
    // window, and the limit climbs back.
    served.forget_entered();
    for _ in 0..10 {
        if resource.capacity() >= 4 {
            break;
        }
        let first = tokio::spawn(call(channel.clone(), UNARY, gated()));
        let second = tokio::spawn(call(channel.clone(), UNARY, gated()));
        served.entered().await;
        served.entered().await;
        served.open(2);
        first.await.unwrap().unwrap();
        second.await.unwrap().unwrap();
        close(&resource).await;
    }
    assert!(resource.capacity() >= 4, "{:?}", resource.adaptive_stats());
}

#[test]
fn the_example_serves_tonic_clients_and_sheds_bulk_calls_first() {
    support::examples::run_example(
        "grpc_server",
        &["--duration", "1", "--clients", "16"],
        &[
            "sheddable calls went first",
            "other_statuses=0",
            "in flight now 0",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_callers_than_capacity_never_push_usage_past_it_and_every_permit_comes_back() {
    let layer = GrpcShedLayer::with_capacity(4).unwrap();
    let resource = Arc::clone(layer.resource());
    let served = serve(layer).await;
    let channel = served.channel().await;
    let busy = Ask {
        work_ms: 2,
        ..ask(Code::Ok)
    };
    // 32 callers, 20 calls each: unary calls, streams read to their end or
    // dropped after a message, and every fourth caller aborted on the way.
    let callers: Vec<_> = (0..32)
        .map(|caller| {
            let (channel, busy) = (channel.clone(), busy.clone());
            tokio::spawn(async move {
                for call_number in 0..20 {
                    if (caller + call_number) % 3 == 0 {
                        let stream = Ask {
                            count: 3,
                            ..busy.clone()
                        };
                        if let Ok(mut stream) = open_stream(channel.clone(), stream).await {
                            let _ = stream.message().await;
                            if call_number % 2 == 0 {
                                while let Ok(Some(_)) = stream.message().await {}
                            }
                        }
                    } else {
                        let _ = call(channel.clone(), UNARY, busy.clone()).await;
                    }
                }
            })
        })
        .collect();
    let mut peak = 0;
    for (index, caller) in callers.iter().enumerate() {
        if index % 4 == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            caller.abort();
        }
    }
    while callers.iter().any(|caller| !caller.is_finished()) {
        peak = peak.max(resource.usage());
        tokio::task::yield_now().await;
    }
    assert!(peak <= 4, "usage reached {peak} of 4");
    until("every permit is back", || resource.usage() == 0).await;
    assert!(
        resource.stats().rejected > 0,
        "the callers never overloaded it"
    );
}
