//! [`CallFuture`]: a call's reply, awaited.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::envelope::{CallReply, Failure};
use super::error::CallError;
use super::reply::ReplyFuture;
use super::Worker;

/// The future of a reply, from [`WorkerPool::call_async`](crate::WorkerPool::call_async).
///
/// Resolves to the same `Result` as [`WorkerPool::call`](crate::WorkerPool::call), except that it has
/// no timeout of its own. Dropping it gives up on the reply.
///
/// # Examples
///
/// ```
/// # struct Noop;
/// # impl sidejob::Worker for Noop { type Request = (); type Reply = (); fn handle_call(&mut self, _: ()) {} }
/// let pool = sidejob::WorkerPool::builder().capacity(1).build(|_| Noop)?;
/// let future: sidejob::CallFuture<Noop> = pool.call_async(());
/// fn assert_send<T: Send>(_: &T) {}
/// assert_send(&future);
/// drop(future); // gives up; the slot is still released exactly once
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[must_use = "a call's future does nothing with the reply unless awaited"]
pub struct CallFuture<W: Worker> {
    state: CallState<W>,
}

enum CallState<W: Worker> {
    Waiting(ReplyFuture<Result<W::Reply, Failure<W::Request>>>),
    Refused(Option<CallError<W::Request>>),
}

impl<W: Worker> CallFuture<W> {
    /// The future of a call that was posted (the receiver of its reply) or
    /// refused (the error, with the request).
    pub(super) fn new(posted: Result<CallReply<W>, CallError<W::Request>>) -> Self {
        CallFuture {
            state: match posted {
                Ok(receiver) => CallState::Waiting(receiver.into_future()),
                Err(err) => CallState::Refused(Some(err)),
            },
        }
    }
}

// The future never pins what it holds: the request and reply are moved, never
// polled, and the reply future is `Unpin`.
impl<W: Worker> Unpin for CallFuture<W> {}

impl<W: Worker> Future for CallFuture<W> {
    type Output = Result<W::Reply, CallError<W::Request>>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            CallState::Waiting(reply) => {
                Pin::new(reply).poll(context).map(|outcome| match outcome {
                    Ok(Ok(reply)) => Ok(reply),
                    Ok(Err(Failure::Closed(request))) => Err(CallError::Closed(request)),
                    Ok(Err(Failure::Down(request))) => Err(CallError::ShardDown(request)),
                    Ok(Err(Failure::Panicked)) | Err(_) => Err(CallError::WorkerPanicked),
                })
            }
            CallState::Refused(err) => Poll::Ready(Err(err
                .take()
                .expect("a CallFuture polled after it completed"))),
        }
    }
}

impl<W: Worker> fmt::Debug for CallFuture<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            CallState::Waiting(_) => "waiting",
            CallState::Refused(_) => "refused",
        };
        f.debug_struct("CallFuture").field("state", &state).finish()
    }
}
