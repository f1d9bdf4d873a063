//! Interpreter: dot.
