//! `cargo xtask`: project chores (tests, benchmarks, set-up).
fn main() {}
