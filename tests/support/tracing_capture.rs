//! A `tracing` subscriber that keeps every event, installed once as the
//! process's global default, so that events from any thread (a worker, the
//! pool's maintainer, a tokio task) are seen. Tests find theirs by the
//! face's name in the fields.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event as seen: its level, target, message and the other fields.
#[derive(Debug, Clone)]
pub struct Captured {
    pub level: Level,
    pub target: String,
    pub message: String,
    pub fields: Vec<(String, String)>,
}

impl Captured {
    /// The value of field `name`, as `Debug` or `Display` wrote it.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
    }
}

struct Capture {
    events: Mutex<Vec<Captured>>,
    next_span: AtomicU64,
}

struct Fields<'a>(&'a mut Captured);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.0.message = text;
        } else {
            self.0.fields.push((field.name().to_owned(), text));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.message = value.to_owned();
        } else {
            self.0
                .fields
                .push((field.name().to_owned(), value.to_owned()));
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut captured = Captured {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            message: String::new(),
            fields: Vec::new(),
        };
        event.record(&mut Fields(&mut captured));
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(captured);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();

fn capture() -> &'static Capture {
    CAPTURE.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::new(Capture {
            events: Mutex::new(Vec::new()),
            next_span: AtomicU64::new(0),
        }));
        tracing::subscriber::set_global_default(CaptureRef(capture))
            .expect("no other global subscriber in this test binary");
        capture
    })
}

/// The global default is a `'static` reference to the one capture.
struct CaptureRef(&'static Capture);

impl Subscriber for CaptureRef {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.0.enabled(metadata)
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.0.new_span(span)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        self.0.record(span, values)
    }
    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.0.record_follows_from(span, follows)
    }
    fn event(&self, event: &Event<'_>) {
        self.0.event(event)
    }
    fn enter(&self, span: &Id) {
        self.0.enter(span)
    }
    fn exit(&self, span: &Id) {
        self.0.exit(span)
    }
}

/// Installs the capture (once per process); call before the events.
pub fn install() {
    capture();
}

/// The events so far whose field `field` is `value` (a face's name).
pub fn events_where(field: &str, value: &str) -> Vec<Captured> {
    capture()
        .events
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .filter(|event| event.field(field) == Some(value))
        .cloned()
        .collect()
}
