//! Interpreter: reduce.
