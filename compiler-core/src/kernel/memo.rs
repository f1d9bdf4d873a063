//! Elemental descriptions reused between fusions whose bodies are the same code.
//!
//! The layers of a stack fuse into the same kernels, each fusion with a body computation
//! of its own: the same instructions in the same order, under other names. Building a
//! kernel's elemental description ([`elemental::build`]) is most of planning; a body
//! that matches one already built takes a copy of that description instead, with its
//! own instruction names as the nodes' origins.
//!
//! "The same code" is checked, not assumed from a hash: the same parameters, order and
//! root, and per instruction the same operands, type and op, comparing the computations
//! an op calls (a reduce's body) the same way. Names and locations are left out; nothing
//! in a description depends on them but its origins. Debug builds (and so the tests)
//! check every copy against a fresh build.

use super::elemental::{self, Elemental};
use crate::ir::{CompId, InstId, Literal, Module, Op};
use cranelift_entity::packed_option::ReservedValue;
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// How deep called computations are compared (a reduce's body inside a fusion body is
/// depth 2); deeper nesting is never reused.
const MAX_DEPTH: usize = 4;

/// A description built once, and what it was built from.
struct Built {
    body: CompId,
    roots: Vec<InstId>,
    /// The input slot of each body value read as an input, sorted.
    slots: Vec<(InstId, u32)>,
    /// The description, without its origin names (each copy takes its own body's).
    elemental: Elemental,
    extra: Vec<(InstId, Literal)>,
    /// The body instruction behind each of `elemental.origin_names`.
    origin_ids: Vec<InstId>,
}

/// The descriptions built so far in one plan, by a hash of their body's code.
#[derive(Default)]
pub(super) struct ElementalMemo {
    built: FxHashMap<u64, Vec<Built>>,
}

impl ElementalMemo {
    /// [`elemental::build`] of `roots` of computation `body`, read through `slots`: a
    /// copy when a body with the same code was built before.
    pub fn build(
        &mut self,
        module: &Module,
        body: CompId,
        roots: &[InstId],
        slots: &FxHashMap<InstId, u32>,
    ) -> Result<(Elemental, Vec<(InstId, Literal)>), String> {
        let comp = module.comp(body);
        let mut sorted_slots: Vec<(InstId, u32)> = slots.iter().map(|(&id, &s)| (id, s)).collect();
        sorted_slots.sort_unstable();
        let key = code_hash(module, body, roots, &sorted_slots);
        let same = |b: &&Built| b.roots == roots && b.slots == sorted_slots && same_code(module, b.body, body, 0);
        if let Some(hit) = self.built.get(&key).and_then(|list| list.iter().find(same)) {
            let mut e = hit.elemental.clone();
            e.origin_names = hit.origin_ids.iter().map(|&id| comp.inst(id).name.clone()).collect();
            let copy = (e, hit.extra.clone());
            // Compared as printed: float equality would take -0 for +0.
            debug_assert_eq!(
                format!("{:?}", Ok::<_, String>(&copy)),
                format!("{:?}", elemental::build(module, comp, roots, slots).as_ref()),
                "the description copied for {} differs from its own",
                comp.name
            );
            return Ok(copy);
        }
        let (e, extra) = elemental::build(module, comp, roots, slots)?;
        // Names are unique in a verified module; a body where one is not is not reused.
        let by_name: FxHashMap<&str, InstId> = comp.order.iter().map(|&id| (comp.inst(id).name.as_str(), id)).collect();
        let origin_ids: Option<Vec<InstId>> = e.origin_names.iter().map(|n| by_name.get(n.as_str()).copied()).collect();
        if let Some(origin_ids) = origin_ids.filter(|ids| ids.len() == e.origin_names.len()) {
            let built = Built {
                body,
                roots: roots.to_vec(),
                slots: sorted_slots,
                elemental: Elemental { origin_names: Vec::new(), ..e.clone() },
                extra: extra.clone(),
                origin_ids,
            };
            self.built.entry(key).or_default().push(built);
        }
        Ok((e, extra))
    }
}

/// A hash of what [`same_code`] compares (of the body itself; called computations are
/// compared, not hashed), with the roots and slots.
fn code_hash(module: &Module, body: CompId, roots: &[InstId], slots: &[(InstId, u32)]) -> u64 {
    let comp = module.comp(body);
    let mut h = FxHasher::default();
    (comp.params.len(), comp.order.len(), comp.root, roots, slots).hash(&mut h);
    for &id in &comp.order {
        let inst = comp.inst(id);
        (std::mem::discriminant(&inst.op), &inst.operands, &inst.ty).hash(&mut h);
    }
    h.finish()
}

/// Whether computations `a` and `b` are the same code up to names and locations.
fn same_code(module: &Module, a: CompId, b: CompId, depth: usize) -> bool {
    if a == b {
        return true;
    }
    if depth >= MAX_DEPTH {
        return false;
    }
    let (x, y) = (module.comp(a), module.comp(b));
    x.params == y.params
        && x.order == y.order
        && x.root == y.root
        && x.order.iter().all(|&id| match (x.insts.get(id), y.insts.get(id)) {
            (Some(i), Some(j)) => i.operands == j.operands && i.ty == j.ty && same_op(module, &i.op, &j.op, depth),
            _ => false,
        })
}

/// Whether two ops are the same, their called computations compared as code and their
/// constants bit for bit (as floats, -0 equals +0, and a NaN nothing).
fn same_op(module: &Module, a: &Op, b: &Op, depth: usize) -> bool {
    if let (Op::Constant(x), Op::Constant(y)) = (a, b) {
        return x.shape == y.shape && (0..x.num_elements()).all(|i| x.bits(i) == y.bits(i));
    }
    let (called_a, called_b) = (a.called_computations(), b.called_computations());
    if called_a.is_empty() && called_b.is_empty() {
        return a == b;
    }
    if called_a.len() != called_b.len() {
        return false;
    }
    let blank = |op: &Op| {
        let mut op = op.clone();
        op.map_called_computations(|_| CompId::reserved_value());
        op
    };
    blank(a) == blank(b) && called_a.iter().zip(&called_b).all(|(&p, &q)| same_code(module, p, q, depth + 1))
}
