//! Keeping the panics a test provokes out of its output, while a failed
//! assertion is still printed.

use std::any::Any;
use std::sync::Once;

/// The text of a panic payload, if it is a string.
pub fn panic_text(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Silences the panics `provoked` recognises by their payload and leaves
/// every other panic, a failed assertion above all, to the default hook.
/// Installed once per test binary: later calls change nothing.
pub fn quiet_panics_where(provoked: fn(&(dyn Any + Send)) -> bool) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !provoked(info.payload()) {
                default(info);
            }
        }));
    });
}

/// Silences the panics whose message says they are deliberate.
pub fn quiet_deliberate_panics() {
    quiet_panics_where(|payload| panic_text(payload).is_some_and(|m| m.contains("deliberate")));
}

/// Silences every panic message, for tests that provoke panics of many
/// kinds and check each by its outcome.
pub fn quiet_all_panics() {
    std::panic::set_hook(Box::new(|_| {}));
}
