//! Interpreter: elementwise.
