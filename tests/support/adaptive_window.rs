//! An adaptive resource whose windows the tower tests close by hand: AIMD
//! over a window that closes with one sample, short for calls made in
//! process, longer for calls over a real connection.

use std::sync::Arc;
use std::time::Duration;

use sidejob::adaptive::Adaptive;
use sidejob::Resource;

/// The window: short, so a test closes it in a few tens of milliseconds.
pub const WINDOW: Duration = Duration::from_millis(20);

/// A resource of `capacity` under AIMD over [`WINDOW`], one sample enough
/// to close a window.
pub fn aimd(capacity: usize) -> Arc<Resource> {
    Arc::new(
        Resource::builder()
            .capacity(capacity)
            .adaptive(Adaptive::aimd().window(WINDOW).min_samples(1))
            .build()
            .unwrap(),
    )
}

/// Lets the window's time pass and closes it with one sampled release.
pub async fn close_window(resource: &Resource) {
    tokio::time::sleep(WINDOW * 2).await;
    drop(resource.try_acquire().unwrap());
}

/// The window for calls over a real connection (a gRPC channel, an HTTP
/// client): long enough that a few of them fit in one even on a loaded
/// machine.
pub const CALL_WINDOW: Duration = Duration::from_millis(300);

/// A resource of `capacity` under AIMD over [`CALL_WINDOW`], one sample
/// enough to close a window.
pub fn aimd_for_calls(capacity: usize) -> Arc<Resource> {
    Arc::new(
        Resource::builder()
            .capacity(capacity)
            .adaptive(Adaptive::aimd().window(CALL_WINDOW).min_samples(1))
            .build()
            .unwrap(),
    )
}

/// Lets a [`CALL_WINDOW`]'s time pass and closes it with one sampled
/// release.
pub async fn close_call_window(resource: &Resource) {
    tokio::time::sleep(CALL_WINDOW * 2).await;
    drop(resource.try_acquire().unwrap());
}
