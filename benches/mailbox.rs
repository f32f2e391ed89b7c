//! Placeholder: see the mailbox benchmark issue.
fn main() {}
