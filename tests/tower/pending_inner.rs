//! When a permit waits on a pending inner service, as the module docs say
//! (#38, 14; the docs said the layer "queues nothing"): unprioritized, a
//! caller whose inner service is `Pending` (here tower's `ConcurrencyLimit`,
//! full) waits holding its permit, so the waiters count as in flight and
//! the capacity bounds them with the requests served; prioritized, it waits
//! holding none. A request that finds the resource full never waits.
#![cfg(feature = "tower")]

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::sync::Arc;
use std::task::Poll;

use sidejob::tower::ShedLayer;
use sidejob::{Overload, Priority, Resource};
use tokio::sync::oneshot;
use tower::limit::ConcurrencyLimitLayer;
use tower::{service_fn, Layer, Service, ServiceExt};

/// A downstream that serves one request at a time (tower's
/// `ConcurrencyLimit`, which queues the rest) and answers a request when
/// its sender says.
fn one_at_a_time() -> impl Service<
    oneshot::Receiver<()>,
    Response = (),
    Error = Infallible,
    Future = impl Future<Output = Result<(), Infallible>> + Send + 'static,
> + Clone
       + Send {
    ConcurrencyLimitLayer::new(1).layer(service_fn(|answer: oneshot::Receiver<()>| async move {
        let _ = answer.await;
        Ok::<_, Infallible>(())
    }))
}

/// Polls `service`'s readiness once.
async fn poll_ready_once<S: Service<R>, R>(service: &mut S) -> Poll<Result<(), S::Error>> {
    poll_fn(|cx| Poll::Ready(service.poll_ready(cx))).await
}

#[tokio::test]
async fn unprioritized_a_caller_waits_on_a_pending_inner_service_holding_its_permit() {
    let resource = Arc::new(Resource::new(2));
    let mut first = ShedLayer::new(Arc::clone(&resource)).layer(one_at_a_time());
    let (answer, answered) = oneshot::channel();
    let served = tokio::spawn(first.ready().await.unwrap().call(answered));

    // The downstream is busy: a second caller waits in `poll_ready`...
    let mut second = first.clone();
    assert!(poll_ready_once(&mut second).await.is_pending());
    assert_eq!(resource.usage(), 2); // ...holding a permit
                                     // So a third is refused, though one request runs downstream.
    let mut third = first.clone();
    let error = third
        .ready()
        .await
        .unwrap()
        .call(oneshot::channel().1)
        .await;
    assert!(error.unwrap_err().is::<Overload>());

    drop(second); // gives up: its permit goes back
    assert_eq!(resource.usage(), 1);
    answer.send(()).unwrap();
    served.await.unwrap().unwrap();
    assert_eq!(resource.usage(), 0);
}

#[tokio::test]
async fn prioritized_a_caller_waits_on_a_pending_inner_service_holding_nothing() {
    let resource = Arc::new(Resource::new(2));
    let layer = ShedLayer::new(Arc::clone(&resource))
        .priority(|_: &oneshot::Receiver<()>| Priority::Normal);
    let mut first = layer.layer(one_at_a_time());
    let (answer, answered) = oneshot::channel();
    let served = tokio::spawn(first.ready().await.unwrap().call(answered));

    let mut second = first.clone();
    assert!(poll_ready_once(&mut second).await.is_pending());
    assert_eq!(resource.usage(), 1); // only the request served

    drop(second);
    answer.send(()).unwrap();
    served.await.unwrap().unwrap();
    assert_eq!(resource.usage(), 0);
}
