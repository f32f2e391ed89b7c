//! Sizing: how a capacity is spread over shards, and which capacities and
//! shard counts the shards can hold. Every face is built from a checked
//! [`Sizing`].

use crate::error::BuildError;

use super::shard::MAX_SHARD_LIMIT;

/// The most shards a resource may have.
///
/// # Examples
///
/// ```
/// let err = sidejob::Resource::builder()
///     .capacity(1)
///     .shards(sidejob::MAX_SHARDS + 1)
///     .build()
///     .unwrap_err();
/// assert_eq!(err.setting(), "shards");
/// ```
pub const MAX_SHARDS: usize = 1 << 16;

/// A capacity and a shard count as a builder collects them: the capacity
/// required, the shard count defaulting to the number of CPUs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sizing {
    pub(crate) capacity: Option<usize>,
    pub(crate) shards: Option<usize>,
}

impl Sizing {
    /// The capacity and the shard count, checked; the errors name the
    /// settings `capacity` and `shards`.
    pub(crate) fn checked(&self) -> Result<(usize, usize), BuildError> {
        let shards = self.shards.unwrap_or_else(num_cpus::get);
        if shards == 0 {
            return Err(BuildError::new("shards", "must be at least 1"));
        }
        if shards > MAX_SHARDS {
            return Err(BuildError::new(
                "shards",
                format!("{shards} is above the maximum of {MAX_SHARDS}"),
            ));
        }
        let capacity = self
            .capacity
            .ok_or_else(|| BuildError::new("capacity", "must be set"))?;
        check_capacity(capacity)?;
        Ok((capacity, shards))
    }
}

/// Whether a resource can hold `capacity` slots (one shard may come to
/// lease all of them); the error names the setting `capacity`.
pub(crate) fn check_capacity(capacity: usize) -> Result<(), BuildError> {
    if capacity as u64 > MAX_SHARD_LIMIT {
        return Err(BuildError::new(
            "capacity",
            format!("{capacity} is above the maximum of {MAX_SHARD_LIMIT} permits"),
        ));
    }
    Ok(())
}

/// The limit of shard `index` when `capacity` is spread over `shards` shards.
///
/// Limits sum to `capacity` exactly and differ by at most one: the remainder
/// goes to the lowest shards. Each limit only grows as `capacity` grows, so a
/// resize moves every shard in the same direction.
pub(crate) fn limit_for(capacity: usize, shards: usize, index: usize) -> u64 {
    let base = capacity / shards;
    let extra = usize::from(index < capacity % shards);
    (base + extra) as u64
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    #[test]
    fn limits_spread_the_remainder_and_grow_monotonically() {
        for shards in 1..=9 {
            let mut previous = vec![0; shards];
            for capacity in 0..=40 {
                let limits: Vec<u64> = (0..shards)
                    .map(|i| limit_for(capacity, shards, i))
                    .collect();
                assert_eq!(limits.iter().sum::<u64>(), capacity as u64);
                let (min, max) = (limits.iter().min(), limits.iter().max());
                assert!(max.unwrap() - min.unwrap() <= 1);
                assert!(limits.iter().zip(&previous).all(|(new, old)| new >= old));
                previous = limits;
            }
        }
    }
}
