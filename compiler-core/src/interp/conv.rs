//! Interpreter: conv.
