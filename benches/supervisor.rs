//! Placeholder: replaced by the supervisor benchmark.
fn main() {}
