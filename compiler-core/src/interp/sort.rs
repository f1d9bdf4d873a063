//! Interpreter: sort.
