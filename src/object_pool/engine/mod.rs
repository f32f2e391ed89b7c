//! The engine both pool faces share: [`PoolShared`] (`shared.rs`), whose
//! methods are split by concern over this folder's files.
//!
//! * `shared.rs`: the core itself; `gate.rs`, the line every return reads
//!   (clock, closed, waiting, generation, settings), and `counters.rs`, the
//!   slow-path figures: each a component whose fields are its own;
//! * `member.rs`, `held.rs`: an object's box from creation to destruction,
//!   and the cell a guard holds it in;
//! * `idle_stacks.rs`, `tag_shelf.rs`: where idle objects wait, untagged
//!   and tagged;
//! * `take.rs` (the fast pop, stealing, the cold take), `give_back.rs`
//!   (returns), `waiters.rs` and `wait_queue.rs` (waiting and the slot
//!   hand-off), `create.rs` (creations), `destroy.rs`, `sweep.rs` (close, retire, shrink),
//!   `reconfigure.rs`, `report.rs` (status, stats, the rates sample);
//! * `maintainer.rs` (refill, reaping, replenishment), its wake signal
//!   `maintainer_wake.rs`, and `backoff.rs`, how long it waits after a
//!   failed refill;
//! * `hooks.rs`, `clock.rs`: what the engine asks of a manager, and the
//!   pool's clock.
//!
//! The engine depends on the pool's vocabulary one level up (`config.rs`,
//! `error.rs`, `manager.rs`, `tags/tag.rs`), never on a face; the blocking
//! faces, `blocking/` and `async_pool/`, drive it; it is generic over the
//! hooks alone (`Hooks`, `TagHooks`): what calls a `Manager` directly or
//! waits on a thread is the blocking face's.

mod backoff;
mod clock;
mod counters;
mod create;
mod destroy;
mod gate;
mod give_back;
mod held;
mod hooks;
mod idle_stacks;
mod maintainer;
mod maintainer_wake;
mod member;
mod reconfigure;
mod report;
mod shared;
mod sweep;
mod tag_shelf;
mod tagged;
mod take;
mod wait_queue;
mod waiters;

// What the faces drive the engine with.
pub(super) use backoff::RefillBackoff;
pub(super) use counters::Counted;
pub(super) use create::Made;
pub(super) use held::Held;
pub(super) use hooks::Hooks;
#[cfg(feature = "tokio")]
pub(super) use hooks::TagHooks;
pub(super) use maintainer::{Background, Refill, RefillFailed};
pub(super) use maintainer_wake::Wake;
pub(super) use member::MemberBox;
pub(super) use shared::PoolShared;
pub(super) use tag_shelf::tag_of;
pub(super) use wait_queue::{Handoff, WaitCell};
pub(super) use waiters::{Joined, Served};
