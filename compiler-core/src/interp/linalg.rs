//! Interpreter: linalg.
