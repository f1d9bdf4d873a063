//! Interpreter: rng.
