//! Pinning worker threads to cores (`WorkerPoolBuilder::pin_workers`);
//! best effort, and nothing under loom.

#[cfg(not(sidejob_loom))]
pub(super) type CoreId = core_affinity::CoreId;
#[cfg(sidejob_loom)]
pub(super) type CoreId = ();

#[cfg(not(sidejob_loom))]
pub(super) fn core_ids() -> Vec<CoreId> {
    core_affinity::get_core_ids().unwrap_or_default()
}

#[cfg(sidejob_loom)]
pub(super) fn core_ids() -> Vec<CoreId> {
    Vec::new()
}

#[cfg(not(sidejob_loom))]
pub(super) fn pin_to(core: CoreId) {
    // Best effort: an unpinned worker is still a correct one.
    let _ = core_affinity::set_for_current(core);
}

#[cfg(sidejob_loom)]
pub(super) fn pin_to(_core: CoreId) {}
