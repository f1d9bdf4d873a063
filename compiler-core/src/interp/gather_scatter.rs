//! Interpreter: gather_scatter.
