//! What travels through a mailbox: the [`Envelope`] of a call or cast, the
//! raw clock reading of a timed message, and why a call got no reply value.

use std::num::NonZeroU64;

use super::reply::{ReplyReceiver, ReplySender};
use super::Worker;

/// A message in a shard's mailbox.
///
/// Kept small, since the mailbox copies it in and out: the request plus two
/// words. A cast is a message without a reply sender (a null pointer), so
/// it needs no tag of its own. (Stopping is the mailbox's own flag, not a
/// message.)
pub(super) struct Envelope<W: Worker> {
    pub(super) request: W::Request,
    /// Where a call's reply goes; `None` for a cast.
    pub(super) reply: Option<CallAnswer<W>>,
    /// When it was posted, if it is one of the timed messages.
    pub(super) posted: Ticks,
}

/// Where the worker sends a call's reply.
pub(super) type CallAnswer<W> =
    ReplySender<Result<<W as Worker>::Reply, Failure<<W as Worker>::Request>>>;

/// A raw reading of the pool's clock (plus one), or [`UNTIMED`]. Raw
/// readings go in the envelopes and are turned into durations only when a
/// batch of samples is recorded.
pub(super) type Ticks = NonZeroU64;

/// The reading of a message that is not timed; no real reading is one.
pub(super) const UNTIMED: Ticks = NonZeroU64::MIN;

/// Where a call's reply arrives.
pub(super) type CallReply<W> =
    ReplyReceiver<Result<<W as Worker>::Reply, Failure<<W as Worker>::Request>>>;

/// Why a call got no reply value.
#[derive(Debug)]
pub(super) enum Failure<R> {
    /// The shard went down for good (its worker panicked past the restart
    /// limit) before the request ran: it comes back.
    Down(R),
    /// The handler panicked.
    Panicked,
    /// The pool shut down while no worker could be built to run it (its
    /// factory kept panicking): the request comes back unhandled.
    Closed(R),
}
