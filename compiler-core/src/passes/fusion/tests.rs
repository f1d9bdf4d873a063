//! Tests of the fusion pass on the classic programs.
