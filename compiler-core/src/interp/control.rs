//! Interpreter: control.
