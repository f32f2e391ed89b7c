//! Priorities: which requests may fill how much of a capacity.
//!
//! A request of priority `p` is admitted only if the usage after it stays at
//! most ⌊share(p) × capacity⌋, so the slots above a lower priority's share
//! are left for the higher ones. A priority whose share is 1 admits on the
//! fast path like any request; one whose share is below 1 admits through the
//! reserve, whose single word can check a total atomically (see the
//! [counter](super::counter)).

use crate::error::BuildError;

/// How much a request matters when capacity runs short.
///
/// Each priority may fill its share of the capacity (see
/// [`ResourceBuilder::share`](crate::ResourceBuilder::share)): `Critical`
/// all of it, the others what their share allows, so that under overload
/// `Sheddable` requests are refused first and `Critical` ones find the slots
/// the others must leave.
///
/// # Examples
///
/// ```
/// use sidejob::{Priority, Resource};
///
/// let resource = Resource::builder()
///     .capacity(10)
///     .share(Priority::Sheddable, 0.5)
///     .build()?;
/// let batch: Vec<_> = std::iter::from_fn(|| resource.try_acquire_with(Priority::Sheddable).ok())
///     .collect();
/// assert_eq!(batch.len(), 5); // sheddable work fills half the capacity
/// assert!(resource.try_acquire_with(Priority::Critical).is_ok());
/// assert_eq!(Priority::default(), Priority::Normal);
/// # Ok::<(), sidejob::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Priority {
    /// Must get through: may fill the whole capacity (health checks,
    /// control traffic).
    Critical,
    /// Ordinary requests; what [`try_acquire`](crate::Resource::try_acquire)
    /// uses.
    #[default]
    Normal,
    /// Work that can wait or be dropped first (batch jobs, prefetches).
    Sheddable,
}

impl Priority {
    /// Every priority, highest first.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::Priority::ALL[0], sidejob::Priority::Critical);
    /// ```
    pub const ALL: [Priority; 3] = [Priority::Critical, Priority::Normal, Priority::Sheddable];

    /// The priority's name as metrics label it: `critical`, `normal` or
    /// `sheddable`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(sidejob::Priority::Sheddable.as_str(), "sheddable");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::Normal => "normal",
            Priority::Sheddable => "sheddable",
        }
    }

    /// The priority's place in [`ALL`](Self::ALL).
    #[inline]
    pub(crate) fn index(self) -> usize {
        match self {
            Priority::Critical => 0,
            Priority::Normal => 1,
            Priority::Sheddable => 2,
        }
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many priorities there are: the length of the arrays kept per
/// priority.
pub(crate) const PRIORITIES: usize = Priority::ALL.len();

/// Each priority's share of the capacity, checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shares {
    shares: [f64; PRIORITIES],
    /// Whether the priority may fill the whole capacity (share 1): then it
    /// admits on the fast path.
    whole: [bool; PRIORITIES],
}

impl Default for Shares {
    fn default() -> Self {
        Shares {
            shares: [1.0; PRIORITIES],
            whole: [true; PRIORITIES],
        }
    }
}

impl Shares {
    /// The shares a builder collected; the errors name the setting
    /// `share`. An unset share is the share of the priority above it (1
    /// when none is set), so that lowering `Normal` alone lowers
    /// `Sheddable` with it.
    pub(crate) fn checked(set: [Option<f64>; PRIORITIES]) -> Result<Shares, BuildError> {
        let mut shares = [1.0; PRIORITIES];
        for (index, share) in set.iter().enumerate() {
            let Some(share) = *share else {
                if index > 0 {
                    shares[index] = shares[index - 1];
                }
                continue;
            };
            let name = Priority::ALL[index];
            if !(share > 0.0 && share <= 1.0) {
                return Err(BuildError::new(
                    "share",
                    format!("the {name} share must be in (0, 1], not {share}"),
                ));
            }
            if name == Priority::Critical && share != 1.0 {
                return Err(BuildError::new(
                    "share",
                    format!("the critical share is always 1, not {share}"),
                ));
            }
            shares[index] = share;
        }
        for pair in Priority::ALL.windows(2) {
            let (higher, lower) = (pair[0], pair[1]);
            if shares[lower.index()] > shares[higher.index()] {
                return Err(BuildError::new(
                    "share",
                    format!(
                        "the {lower} share ({}) exceeds the {higher} share ({})",
                        shares[lower.index()],
                        shares[higher.index()]
                    ),
                ));
            }
        }
        Ok(Shares {
            shares,
            whole: shares.map(|share| share == 1.0),
        })
    }

    /// Whether `priority` may fill the whole capacity.
    #[inline]
    pub(crate) fn whole(&self, priority: Priority) -> bool {
        self.whole[priority.index()]
    }

    /// The slots `priority` must leave free at `capacity`: capacity minus
    /// ⌊share × capacity⌋.
    pub(crate) fn keep(&self, priority: Priority, capacity: usize) -> usize {
        let share = self.shares[priority.index()];
        capacity - ((share * capacity as f64).floor() as usize).min(capacity)
    }

    /// A priority, with its share, that would get no slot at all at
    /// `capacity`: ⌊share × capacity⌋ = 0; the highest such (the ones
    /// below it get no more).
    pub(crate) fn starved_at(&self, capacity: usize) -> Option<(Priority, f64)> {
        Priority::ALL
            .into_iter()
            .find(|&priority| self.keep(priority, capacity) >= capacity)
            .map(|priority| (priority, self.shares[priority.index()]))
    }

    /// The most any priority must leave free at `capacity`.
    pub(crate) fn most_kept(&self, capacity: usize) -> usize {
        self.keep(Priority::Sheddable, capacity)
    }
}

#[cfg(all(test, not(sidejob_loom)))]
mod tests {
    use super::*;

    #[test]
    fn shares_are_checked_and_keep_floors() {
        let shares = Shares::checked([None, Some(0.9), Some(0.5)]).unwrap();
        assert_eq!(shares.keep(Priority::Critical, 10), 0);
        assert_eq!(shares.keep(Priority::Normal, 10), 1);
        assert_eq!(shares.keep(Priority::Sheddable, 7), 4); // ⌊3.5⌋ = 3 may be used
        assert!(!shares.whole(Priority::Normal) && shares.whole(Priority::Critical));
        for bad in [
            [Some(0.5), None, None],
            [None, Some(0.0), None],
            [None, Some(1.5), None],
            [None, None, Some(f64::NAN)],
            [None, Some(0.4), Some(0.6)],
        ] {
            assert_eq!(Shares::checked(bad).unwrap_err().setting(), "share");
        }
        // An unset share follows the one above it.
        let normal_only = Shares::checked([None, Some(0.5), None]).unwrap();
        assert_eq!(normal_only.keep(Priority::Sheddable, 10), 5);
    }
}
