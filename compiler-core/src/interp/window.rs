//! Interpreter: window.
