//! StableHLO (MLIR text) printer.
