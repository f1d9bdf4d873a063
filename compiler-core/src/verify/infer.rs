//! Shape and type inference for every op.
