//! Where capacity is scarce (a genuine refusal swept every free slot into
//! the reserve), an admission leases one slot from the reserve, and its
//! release hands it straight back, even if capacity has turned plentiful
//! meanwhile; a reserve that holds half the capacity or more turns it
//! plentiful, and slots stay on the shards that use them again. One thread
//! throughout, so every step is determined; `stats().reserve` shows where
//! the slots are.

use sidejob::{Overload, Resource};

/// Holds every slot of a fresh resource, then is refused once: capacity
/// is scarce from there, with nothing in the reserve.
fn all_held(resource: &Resource) -> Vec<sidejob::Permit<'_>> {
    let held: Vec<_> = (0..resource.capacity())
        .map(|_| resource.try_acquire().unwrap())
        .collect();
    assert_eq!(resource.try_acquire().unwrap_err(), Overload);
    assert_eq!(resource.stats().reserve, 0);
    held
}

#[test]
fn a_slot_leased_under_scarcity_goes_back_to_the_reserve_even_once_plentiful() {
    let resource = Resource::builder().capacity(8).shards(2).build().unwrap();
    let mut held = all_held(&resource);
    held.truncate(7);
    assert_eq!(resource.stats().reserve, 1, "a release under scarcity");
    // One slot free of 8: still scarce, leased from the reserve.
    let leased = resource.try_acquire().unwrap();
    assert_eq!(resource.stats().reserve, 0);
    held.truncate(3);
    assert_eq!(resource.stats().reserve, 4);
    // Half the capacity free: this lease turns capacity plentiful.
    let plentiful = resource.try_acquire().unwrap();
    assert_eq!(resource.stats().reserve, 3);
    drop(leased);
    assert_eq!(
        resource.stats().reserve,
        4,
        "the scarce lease's slot went back to the reserve"
    );
    drop(plentiful);
    assert_eq!(
        resource.stats().reserve,
        4,
        "a plentiful slot stays on its shard"
    );
    drop(held);
    assert_eq!(resource.usage(), 0);
    assert_eq!(resource.capacity(), 8);
}

#[test]
fn a_reserve_holding_half_the_capacity_turns_it_plentiful() {
    let resource = Resource::builder().capacity(8).shards(2).build().unwrap();
    let held = all_held(&resource);
    drop(held);
    assert_eq!(resource.stats().reserve, 8, "every release under scarcity");
    let permit = resource.try_acquire().unwrap();
    drop(permit);
    // Plentiful again: the slot stayed on this thread's shard.
    assert_eq!(resource.stats().reserve, 7);
    let again = resource.try_acquire().unwrap();
    assert_eq!(resource.stats().reserve, 7, "a fast admission on the shard");
    drop(again);
}
