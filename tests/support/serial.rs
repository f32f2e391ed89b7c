//! Running the heavy tests of one binary one at a time.

use std::sync::{Mutex, MutexGuard};

/// Held for the whole of a test that wants the machine to itself.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
