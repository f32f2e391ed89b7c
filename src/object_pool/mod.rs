//! [`ObjectPool`]: reusable objects (connections, external processes) under
//! a strict size limit, with FIFO waiters, after Erlang's pidq/pooler and
//! CouchDB's process manager.
//!
//! # Protocol
//!
//! *Size* counts every object that exists or is being made: idle, in use or
//! in creation. Each is counted by one slot of the admission core's sharded
//! counter, whose capacity is `max_size`. A slot is taken before `create` starts and freed
//! exactly once: when creation fails, or when the object is destroyed or
//! detached. So size never exceeds `max_size`, not even for an instant, and
//! no failure path can leak the limit (CouchDB once did).
//!
//! Idle objects wait on per-shard LIFO stacks (see `engine/idle_stacks.rs`). A take
//! pops its home shard's stack: one uncontended spin lock, no shared line. A
//! return pushes the object onto the home stack of the thread that took it
//! (the take writes it in the object's box), unless takers are waiting, so the object a thread
//! returned last is the one its next take gets, whichever shard's slot
//! counts it.
//!
//! Takers that find nothing idle and no free slot may wait, FIFO, in the
//! queue of `engine/wait_queue.rs`. Two hand-offs serve them:
//!
//! * **Objects.** A returner reads `waiting` under its stack's lock before it
//!   pushes. A waiter registers (raising `waiting`) under the queue lock and
//!   then scans every stack under that stack's lock. For any one stack, either
//!   the waiter's scan comes after the push, and finds the object, or the
//!   returner's read comes after the registration, and sees the waiter, which
//!   it then serves under the queue lock. No object idles while a taker waits.
//! * **Slots.** Freeing a slot happens under the queue lock: the slot goes to
//!   the oldest waiter, which creates its own object, or back to the counter.
//!   A waiter tries to take a slot under the same lock before it sleeps, so a
//!   slot freed by a failed creation or a destroyed object wakes the next
//!   waiter.
//!
//! `close` sets `closed`, answers every waiter, then empties each stack
//! under its lock. Returners read `closed` under their stack's lock, so an
//! object pushed after the sweep is impossible: it is destroyed instead.
//!
//! # Where each part lives
//!
//! Here, the pool's vocabulary, which both faces share: `config.rs`,
//! `error.rs` ([`TakeError`]), `manager.rs`, `status.rs`, `tags/` (what a tag
//! is) and the builder's settings (`builder.rs`). The work is done by the
//! engine in `engine/`, `PoolShared`, generic over the hooks a manager
//! offers (`engine/hooks.rs`) and split by concern there (see its module
//! docs). Two sibling faces drive it: `blocking/` ([`ObjectPool`], its
//! lifecycle, guards, groups with [`DuplicatePool`], the tagged take, and the
//! steps that call a `Manager` or wait on a thread: creations and checks
//! bounded on helper threads) and `async_pool/` ([`AsyncObjectPool`]: the same
//! with futures). The faces depend on the engine; the engine depends only on
//! the vocabulary.
//!
//! # Orderings
//!
//! `closed` and `waiting` are read on the fast path under an idle stack's
//! lock, and written before (registration, close) or under (serving) the
//! queue lock, which the reader's side then takes. The locks order every
//! access that matters, so the atomics themselves are `Relaxed`. A take
//! reads `closed` only on its cold path (a closed pool has empty stacks),
//! as an early exit. The counters are `Relaxed` figures.
//!
//! # Design
//!
//! An `ObjectPool` is the core's `ShardedCounter` of capacity `max_size`,
//! whose slots count objects, plus one LIFO stack of idle objects per shard, a FIFO wait queue, and
//! an optional maintainer thread.
//!
//! * **Size.** Every object that exists or is being made holds one slot: taken
//!   before `Manager::create` runs, freed exactly once, when creation fails (or
//!   panics), or the object is destroyed or detached. Idle and in-use objects
//!   keep their slot, so taking and returning never touch the counter. Size
//!   never exceeds `max_size`, and no failure path can leak it; CouchDB's
//!   process manager once leaked its whole limit through lost decrements.
//! * **Fast path.** A take pops its home shard's stack, and a return pushes the
//!   object onto that same stack, the taker's home (the take writes its index into
//!   the object's box, so the return looks nothing up), after reading `waiting` and `closed`
//!   under that stack's lock. Each is one uncontended lock on the
//!   shard's own cache line. Fast-path takes are counted under the lock the pop
//!   already holds, so counting is free.
//! * **Reuse order.** LIFO as a thread sees it, as pooler's free list: the
//!   object a thread returned last is the one its next take gets, whichever
//!   shard's slot counts it. Exactly what holds across threads: each
//!   stack is LIFO over the returns of all the threads whose home is its shard
//!   (threads draw homes round robin, so with no more threads than shards each
//!   thread has a stack of its own); a take whose home stack is empty takes the
//!   top of the next non-empty stack in probe order before it makes a new
//!   object; a return handed straight to a waiter skips the stacks (FIFO among
//!   waiters); objects the maintainer makes go onto their slot's shard's
//!   stack. So the per-thread order is exact while a thread's home shard is its
//!   own; threads that share a home shard (more threads than shards) share its
//!   stack, and a take gets the last object any of them returned there. There
//!   is no order across stacks.
//! * **The stack lock** is a spin lock (the `spin` crate's, yielding between
//!   tries): its critical sections are a few instructions and run no user code,
//!   and unlocking is a plain release store where a futex mutex needs a second
//!   read-modify-write. A take plus a return thus costs two atomic operations
//!   where a `Mutex<Vec>` costs four. The first try is inline and the waiting
//!   loop out of line, which kept `Pooled`'s drop small enough to inline. Both
//!   choices showed in the benchmark: 12.6 ns with std's mutex and the
//!   returner's home stack, 8.6 ns after (`benches/object_pool.rs`, one
//!   thread), 9.1 ns with the lifecycle below.
//! * **Miss.** Nothing idle at home: steal from the other stacks in probe order,
//!   else take a slot and create, else `Overload`. The look is made twice, so an
//!   object returned or a slot freed while the first look went by is found.
//! * **Waiters.** `take(timeout)` queues the taker under a unique increasing key,
//!   each with its own hand-off cell and condition variable. A waiter registers
//!   (raising `waiting`) under the queue lock and then scans every stack and the
//!   slots. A returner reads `waiting` under its stack lock before it pushes.
//!   For each stack one of the two comes second and sees the other, so no object
//!   idles while a taker waits. A slot is freed under the queue lock, straight to
//!   the oldest waiter, which then makes its own object (a failed creation
//!   hands the slot on to the next). Expired waiters are told so and skipped,
//!   never served late. A waiter that times out removes itself by key; if it is
//!   gone, whoever removed it has already filled its cell.
//! * **Check, fail, panic.** A return runs `Manager::check` and destroys the
//!   object if it fails. `Pooled::fail` destroys it, `Pooled::detach` frees its
//!   slot and hands it over. A holder that panics has its object destroyed, since
//!   its state is unknown. A panicking `create`, `check` or `destroy` frees the
//!   slot first and then goes on to the caller.
//! * **Check on take** (`check_on_take`, off by default; r2d2's
//!   `test_on_check_out`). An object found idle is checked before it is handed
//!   out; one that fails is destroyed and the take goes on with the next idle
//!   object or a new one. The check is user code, so it never runs under
//!   the queue lock: a pop from the fast path checks at once, and what a
//!   search under the lock found is checked by `accept_found` once the lock is
//!   let go. New objects and objects handed from a return straight to a waiter
//!   (checked on return) are not checked again. A take with a deadline
//!   returns by it even when `check` hangs: the blocking face runs that
//!   take's check on a helper thread (`blocking/bounded_check.rs`), handing the
//!   object and the core over through the same `PendingCreate` cell a bounded
//!   creation uses; if the deadline comes first the take answers `Timeout`
//!   and the helper destroys the object once the check returns (its state is
//!   unknown; its slot stays counted until then, since the object still
//!   exists). The fast pop is skipped for such a take, so the check always
//!   runs where the deadline is known. The async face drops the check's
//!   future at the deadline and destroys the object at once. `try_take` has
//!   no deadline and checks inline.
//! * **No false overload from expired objects.** A take that finds only
//!   expired idle objects destroys them, which frees their slots, and looks
//!   again before it answers `Overload`: a take is refused only when
//!   every slot holds a live object, in use, idle or being made.
//! * **Create timeouts** (`create_timeout`, pooler's `member_start_timeout`).
//!   A thread stuck in `Manager::create` cannot be interrupted, so a
//!   creation with a deadline runs on a helper thread started for it, and the
//!   caller waits on a `PendingCreate` cell until the deadline: the pool's
//!   `create_timeout` or, for `take(timeout)`, the take's own deadline,
//!   whichever comes first (`CreateTimeout` or `Timeout`). The cell moves once
//!   under its mutex, to *done* (the caller takes the object) or *abandoned*
//!   (the helper gets the late result back and destroys the object, or frees
//!   the slot of a failed call), so a late object is never both handed out and
//!   destroyed, nor lost; loom model (n) checks it. The helper hands its
//!   reference to the pool's core over with the result (and gets it back only
//!   when abandoned), so no helper outlives a take holding the core: a pool
//!   dropped with its objects drops its manager on the dropping thread. The hung call keeps its
//!   slot, so the bound still counts it; a refill does not count on an
//!   abandoned creation. `init_size` objects are then made at once on helper
//!   threads and waited for together, so `build` waits at most
//!   `create_timeout` however many calls hang. A helper costs a thread start
//!   (tens of microseconds) per creation; with no deadline (`try_take` and the
//!   maintainer without `create_timeout`) the call runs on the caller's thread
//!   as before. We chose a thread per bounded creation over a standing helper
//!   pool: creations are rare next to takes, and a pool of helpers would have
//!   to grow anyway while calls hang.
//! * **Maintainer.** With `init_size` or `min_idle`, `build` starts a thread,
//!   waits for it to make the `init_size` objects (failures are counted, not
//!   fatal), and the thread then keeps `min_idle` objects idle. A take that pops
//!   an idle object nudges it through a flag read under the stack lock, so the
//!   fast path writes nothing shared while a round is pending. Takers never wait
//!   for it.
//! * **Close.** Set `closed`, answer every waiter `Closed`, then empty each
//!   stack under its lock. Returns read `closed` under the same lock, so an
//!   object returned later is destroyed, never stranded. Dropping the pool
//!   stops the maintainer and closes.
//!
//! ## Lifecycle: reaping, lifetimes, reload, reconfiguration
//!
//! * **Members.** Each object lives, from creation to destruction, in a boxed
//!   `Member` with what the pool knows about it: its slot, its generation (see
//!   reload), its expiry, when it was last returned, and its tag. A take and a
//!   return move only the box's pointer. Keeping these fields beside the object
//!   in `Pooled` instead made a take plus return 20 to 30 ns, because the
//!   bigger `Result<Pooled, _>` was moved piecewise through the stack and
//!   reloaded across store-forwarding stalls; with the box it is 9.1 ns (8.5
//!   before the lifecycle; `docs/benchmarks/history.md`). The box is cache-padded,
//!   since a return writes it and two threads' boxes would otherwise share a
//!   line, and one `special` flag (a lifetime or a tag) sends the few objects
//!   that need more checks to the cold path.
//! * **Configuration** is an arc-swap snapshot (`PoolConfig`), read without a
//!   lock by the slow paths and the maintainer. `reconfigure(|config| ...)`
//!   validates the new one (a `BuildError` names the setting), swaps it in,
//!   and acts on the difference: a higher `max_size` grows the slot resource
//!   and serves waiters with the new slots at once; a lower one shrinks it
//!   (held slots are never revoked), destroys idle objects down to it and sets
//!   an `oversized` flag, so each return destroys its object until the pool
//!   fits; a lower `queue_max` answers the waiters beyond it `QueueFull`.
//!   The fast path reads none of this: only flags on the gate line that the
//!   return already reads.
//! * **Reaping.** The maintainer runs every `maintenance_interval` (a quarter
//!   of the shortest timer, between 5 ms and 1 s). It destroys idle objects
//!   whose lifetime ran out, and, while size is above `soft_limit` and the
//!   untagged idle objects above `min_idle`, those idle longer than
//!   `idle_timeout`, longest idle first (the bottom of each stack). A return
//!   stamps its object with a coarse clock, one relaxed load of a value the
//!   maintainer ticks; the reaper allows one interval of slack for it, so it
//!   never reaps too soon. Objects in use are out of its reach by
//!   construction: it only sees the stacks and the shelf.
//! * **Refills back off**. A round's refill (to
//!   `min_idle`, then replacing what tagged takes took) stops at its first
//!   failed, panicking or timed-out creation, and the next refill waits 10 ms,
//!   then 20, 40..., each with up to half again of jitter, to the larger of
//!   the maintenance interval and 1 s; the first success resets it. The
//!   failure freed a slot, and a freed slot nudges the maintainer while
//!   `min_idle > 0`: honouring that nudge is what made both pools retry
//!   millions of times a second against a backend that was down (the async
//!   task never yielded, and hung a current-thread runtime). So while a refill
//!   is held back the maintenance sleeps its fixed length, waking only to
//!   stop (`Maintenance::wait(Pause::Fixed)`, `poll_stop`); reaping keeps its
//!   interval meanwhile, and every async round yields to the runtime. Takes
//!   are not held back: a take that needs an object calls `create` itself.
//!   `failed_refills` counts the failures.
//! * **Lifetimes.** `max_lifetime` less a random share of `lifetime_jitter`
//!   (which must be smaller, or `BuildError`) fixes each object's expiry at
//!   creation, read against the precise clock. An expired object is never
//!   handed out: a pop that finds one destroys it and pops again, a return
//!   destroys it, and the reaper destroys idle ones. `min_idle` replaces them.
//! * **Reload.** `retire_all` bumps the pool's generation and destroys every
//!   idle object. An object whose generation is older is destroyed when it
//!   comes back (the return compares generations under the stack's lock, after
//!   `retire_all` bumped it and before it swept that stack, so none is
//!   stranded). `stale_count` is the number of objects alive per older
//!   generation, kept in a small map updated at creation and destruction.
//!
//! ## Tags
//!
//! * **Shelf.** Untagged idle objects stay on the per-shard stacks. A tagged
//!   one idles on a single shelf (`src/object_pool/engine/tag_shelf.rs`): three maps that share a
//!   sequence number given at each return, objects by number (so the first
//!   is the least recently used), numbers by tag and numbers by group. Exact
//!   lookup, group lookup and the least recently used are each a few
//!   `O(log n)` operations, never a scan. Tagged takes go through one mutex,
//!   as they go through one process in CouchDB; the untagged fast path never
//!   touches it.
//! * **Type.** The pool's type names only its manager. A manager that can tag
//!   implements `TaggedManager` with `type Tag: PoolTag` (a `(group, key)`
//!   pair or any type with a group accessor); the shelf is a trait object and
//!   each object's tag a `dyn Any`, downcast by `take_tagged`, which knows the
//!   type.
//! * **Lookup** (`take_tagged`): exact tag; same group; an untagged object
//!   from the stacks (and the maintainer then makes an untagged replacement,
//!   room permitting); a new object; at `max_size`, destroy the least recently
//!   used tagged idle objects (CouchDB's `round(0.1 × max_size + 1)`: two of ten, three of fifteen) and make
//!   one; else wait in the common queue, for any object. An object without the
//!   tag is taught it with `TaggedManager::tag`; if that fails, the object is
//!   destroyed and the take answers `TakeError::Tag`. Untagged takes prefer
//!   untagged objects and a new one, and use a tagged one only when nothing
//!   else is left, rather than refuse while objects idle.
//! * **Hand-off.** The shelf's lock plays the stack lock's part: a tagged
//!   return reads `waiting`, `closed`, `oversized` and the generation under
//!   it, and a waiter's scan takes the least recently used tagged object under
//!   it. Loom model (j) checks that this race reaches the waiter.
//! * **Reaping.** Tagged idle objects are reaped after `idle_timeout` whatever
//!   the soft limit, as in CouchDB; reload and close sweep the shelf too.
//!
//! ## Groups
//!
//! `PoolGroup<K, M>` holds member pools as `Arc<ObjectPool<M>>` in an
//! arc-swap snapshot: takes load it without a lock or a shared counter,
//! `add_pool` (a duplicate key hands the pool back in `DuplicatePool`) and
//! `remove_pool` publish a new one under a mutex. A take starts at a random
//! member (a per-thread xorshift generator) and tries the others in order with
//! `try_take`; `take(timeout)` then waits at every open member at once and
//! is served by whichever frees an object or a slot first. One
//! `WaitCell` is queued at each member's wait queue (FIFO with that member's
//! own waiters); the cell moves once, under its mutex, from waiting to filled
//! or gone, so a member whose fill fails (another member served the take
//! first, or it left) gets its object or slot back and serves its next
//! waiter: nothing is handed twice or lost. After queueing everywhere the take
//! looks at each member once more, which catches what a member freed before
//! the take was queued there; if that finds an object while a member had
//! already filled the cell, the handed object goes back as a return would. A
//! member that closes (or drops the take from its queue) only counts itself
//! out; the last one's refusal answers the take. Loom model (o) checks the
//! hand-off. A group wait is counted (waits, timeouts, wait time) at the
//! first member it queued at. Its
//! objects are `OwnedPooled`, which hold their pool by `Arc`, so removing a
//! pool never leaves one dangling. `Removal::Graceful` takes the pool out and
//! retires it (idle objects now, objects in use on return); those who hold it
//! can go on using it. `Removal::Immediate` closes it as well, so its waiters
//! are answered `Closed` and new takes are refused.
//!
//! ## AsyncObjectPool: the second face over the same engine (feature `tokio`)
//!
//! `AsyncObjectPool<M: AsyncManager>` lives in `object_pool/async_pool/`, a
//! child of the engine's folder, because it is a second face over the same
//! `PoolShared`: the idle stacks, slots, wait queue, sweeps, reconfiguration,
//! tag shelf and counts are written once. The engine is generic over `Hooks`
//! (`hooks.rs`): the two calls it makes on a manager wherever it runs, `check_now`
//! (on a return, and on an idle object taken with `check_on_take`) and
//! `destroy_object`. Every `Manager` is `Hooks` by a blanket impl; an
//! `AsyncManager` is seen through the `AsyncManaged` adapter, whose `check_now`
//! answers `true` (an async check cannot run on a return path), so the async
//! face runs `check` itself on what a take found idle. Creation is each face's
//! own: `create.rs` calls `Manager::create` (on a helper thread under a
//! deadline), `async_pool/create.rs` awaits `AsyncManager::create` under
//! `tokio::time::timeout_at`. So are the waits: `WaitCell` holds the waiter's
//! waker beside its condition variable, and `fill` wakes both; the async taker
//! polls `poll_filled`, which stores its waker on every poll. The maintainer is
//! a task on the runtime that built the pool, woken through the same
//! `Maintenance` signal (which now also holds a waker); the blocking face
//! keeps its thread. The task holds the core weakly and upgrades it for a
//! round and for each poll of its sleep, so a pool dropped with its objects
//! drops its manager on the dropping thread, even if the runtime is never
//! driven again (the blocking face joins its thread instead). The builder is shared too: `AsyncObjectPoolBuilder<M>` is
//! `ObjectPoolBuilder<AsyncManaged<M>>`, whose async `build` is an inherent
//! method of that type.
//!
//! **Cancel safety.** A take future dropped at an `.await` runs the guard of
//! what it holds there, each handing it on exactly once:
//!
//! | dropped while | guard | what happens |
//! |---|---|---|
//! | queued (maybe already handed something) | `Queued` | `stop_waiting` takes what the cell holds and leaves the queue; `hand_on` gives an object to the next waiter or back idle (unchecked: never used), a slot to the next waiter or back to the counter |
//! | `check` runs on an idle object | `FoundIdle` | the object goes back idle |
//! | `create` runs | `CreatingSlot` | the creation's future is dropped first (it is declared inside the slot guard's scope), then the slot is freed to the next waiter; so objects alive plus creations in flight never exceed `max_size` |
//! | `tag` runs | `Teaching` | the half-taught object is destroyed and its slot freed: what it knows is unknown |
//!
//! A take that was polled and dropped before it answered counts in
//! `cancelled` (`TakeWatch`). A take's fast path, a plain pop with no check,
//! answers in its first poll and holds no guard; the rest of the take is one
//! boxed future, so the future the caller awaits stays a few words whatever the
//! manager's futures weigh. Returns are synchronous (`give_back`, as the
//! blocking face's), so no task is spawned on the return path, and an object
//! handed straight from a returner to a waiter is not checked. Loom models (s)
//! and (t) race a return and a slot hand-off against a take polled once and
//! dropped; the model test runs the async pool against the object-pool model.

#[cfg(feature = "tokio")]
mod async_pool;
mod blocking;
mod builder;
mod config;
mod engine;
mod error;
mod manager;
mod status;
mod tags;

#[cfg(feature = "tokio")]
pub use async_pool::{
    AsyncManaged, AsyncManager, AsyncObjectPool, AsyncObjectPoolBuilder, AsyncOwnedPooled,
    AsyncPooled, AsyncTaggedManager,
};
pub use blocking::{DuplicatePool, ObjectPool, OwnedPooled, PoolGroup, Pooled, Removal};
pub use builder::ObjectPoolBuilder;
pub use config::{PoolConfig, DEFAULT_QUEUE_MAX};
pub use error::TakeError;
pub use manager::{Manager, TaggedManager};
pub use status::{ObjectPoolStats, PoolStatus};
pub use tags::PoolTag;
