//! The IR: XLA-style modules of computations of instructions (see `docs/ARCHITECTURE.md`).

pub mod literal;
pub mod module;
pub mod op;
pub mod types;
pub mod user_lists;
pub mod value;

pub use literal::{Data, Literal, Scalar};
pub use module::{CompId, Computation, InstId, Instruction, Loc, Module};
pub use op::*;
pub use types::{is_permutation, ElementType, Shape, Type};
pub use user_lists::UserLists;
pub use value::Value;
