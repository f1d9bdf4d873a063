//! Interpreter: shape_ops.
