//! XLA HLO-like text printer.
