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

use cranelift_entity::{EntityRef, SecondaryMap};

/// A secondary map already holding `default` for each of the first `len` keys, for
/// filling by index: one not sized first grows one index at a time, which cost more than
/// the work done with it (`compact`'s renumbering, fusion's materialize).
pub fn sized_map<K: EntityRef, V: Clone>(len: usize, default: V) -> SecondaryMap<K, V> {
    let mut map = SecondaryMap::with_default(default);
    map.resize(len);
    map
}
