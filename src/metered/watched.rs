//! [`Watched`]: the faces an exporter reads, held weakly: an exporter
//! reports a face while someone else keeps it, and forgets it once dropped.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::{Metered, Snapshot};

/// Reads one face's snapshot while it lives.
type Watch = Box<dyn Fn() -> Option<Snapshot> + Send + Sync>;

/// The faces registered with an exporter.
#[derive(Default)]
pub(crate) struct Watched {
    faces: Mutex<Vec<Watch>>,
}

impl Watched {
    /// Watches `face` for as long as it lives.
    pub(crate) fn add<T: Metered>(&self, face: &Arc<T>) {
        let face: Weak<T> = Arc::downgrade(face);
        let watch: Watch = Box::new(move || face.upgrade().map(|face| face.snapshot()));
        self.lock().push(watch);
    }

    /// Every live face's snapshot, in registration order; faces dropped
    /// since are forgotten.
    pub(crate) fn snapshots(&self) -> Vec<Snapshot> {
        let mut snapshots = Vec::new();
        self.lock().retain(|watch| match watch() {
            Some(snapshot) => {
                snapshots.push(snapshot);
                true
            }
            None => false,
        });
        snapshots
    }

    /// How many faces are watched (some may have been dropped since).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Watch>> {
        self.faces.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("faces", &self.len())
            .finish()
    }
}
