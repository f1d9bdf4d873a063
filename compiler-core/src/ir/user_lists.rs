//! Each instruction's users within one computation, once per use, in program order
//! ([`super::Computation::users`]): the lists fusion keeps up to date as it copies
//! instructions and the cost model reads, and layout assignment's and the dot merger's.

use super::{Computation, InstId};
use cranelift_entity::SecondaryMap;
use smallvec::SmallVec;

/// Users of each instruction (most have one or two: those lists live inline, with no
/// allocation of their own; an instruction without users has an empty list).
#[derive(Clone, Debug, Default)]
pub struct UserLists {
    lists: SecondaryMap<InstId, SmallVec<[InstId; 2]>>,
}

impl UserLists {
    /// The user lists of `comp`'s live instructions (those in its order).
    pub fn of(comp: &Computation) -> UserLists {
        let mut lists: SecondaryMap<InstId, SmallVec<[InstId; 2]>> =
            super::sized_map(comp.insts.len(), SmallVec::new());
        for &id in &comp.order {
            for &o in &comp.inst(id).operands {
                lists[o].push(id);
            }
        }
        UserLists { lists }
    }

    /// The users of `id`, once per use.
    pub fn get(&self, id: InstId) -> &[InstId] {
        self.lists.get(id).map_or(&[], |l| l.as_slice())
    }

    /// The list of `id`, to change.
    pub fn list_mut(&mut self, id: InstId) -> &mut SmallVec<[InstId; 2]> {
        &mut self.lists[id]
    }
}
