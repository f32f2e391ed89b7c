//! AsyncObjectPool's types (#19): the pool is `Send + Sync` and `Debug`,
//! its owned guard and every take future are `Send` (so a take can run in a
//! spawned task), and the guards show their object in `Debug`.
#![cfg(feature = "tokio")]

use crate::support;

use std::future::Future;
use std::time::Duration;

use sidejob::{AsyncObjectPool, AsyncOwnedPooled, AsyncPooled};
use support::async_objects::{runtime, Gauged};

fn send_sync<T: Send + Sync>(_: &T) {}
fn send<T: Send>(_: &T) {}

fn future_send<F: Future + Send>(future: F) -> F {
    future
}

#[test]
fn the_pool_its_guards_and_its_take_futures_cross_threads() {
    runtime().block_on(async {
        let pool = AsyncObjectPool::builder(Gauged::new(2))
            .max_size(2)
            .build()
            .await
            .unwrap();
        send_sync(&pool);
        let owned: AsyncOwnedPooled<Gauged> = future_send(pool.try_take_owned()).await.unwrap();
        send(&owned);
        let borrowed: AsyncPooled<'_, Gauged> = future_send(pool.take(Duration::from_secs(1)))
            .await
            .unwrap();
        send(&borrowed);
        assert!(
            format!("{borrowed:?}").starts_with("AsyncPooled(Conn"),
            "{borrowed:?}"
        );
        assert!(
            format!("{owned:?}").starts_with("AsyncOwnedPooled(Conn"),
            "{owned:?}"
        );
        assert!(format!("{pool:?}").contains("AsyncObjectPool"), "{pool:?}");
        drop(future_send(pool.take_owned(Duration::ZERO)));
        drop(future_send(pool.try_take()));
    });
}
