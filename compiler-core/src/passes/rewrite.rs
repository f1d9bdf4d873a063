//! The driver of local rewrite rules, shared by the passes made of them (the algebraic
//! simplifier, transpose folding, dot strength reduction): each pass is a table of
//! [`Rule`]s and [`run_rules`] applies it.
//!
//! The driver visits every live instruction of every reachable computation in order
//! (operands before users) and applies the first rule that matches; rounds repeat until
//! nothing fires, at most `max_rounds` times. A round after the first visits only the
//! instructions whose view the previous round changed (see [`Touched`]): an
//! instruction no rule matched, whose view is the same, would match none again, so
//! the result is the one full rounds give, without revisiting a whole deep module for
//! a few rewrites. A rule returns an [`Action`]:
//! - `Use(y)`: every use of the instruction is replaced by the existing value `y`. The
//!   driver refuses it unless `y`'s type is *exactly* the instruction's type, layouts
//!   included (an unset layout stays unset), so no rule can silently change a type.
//! - `Rewrite { op, operands }`: the instruction keeps its name, type and `loc` and gets
//!   a new op and operands. Helper instructions a rule needs (a scalar constant, an inner
//!   slice) are inserted just before it, with `Module::fresh_name` names.
//!
//! After each round that changed a computation, its unused instructions are removed
//! (parameters and side effects stay), so computations the pass does not change are
//! left exactly as they were.
//!
//! Provenance (in the graph's computations: the entry and its fusion bodies), recorded
//! here in the driver, not in the rules: a helper a rule inserts is `created_by` the
//! rule, a `Use(y)` is `replaced_by` y under the rule's name, and what the clean-up
//! removes is `removed` by `dce`. A `Rewrite` keeps the instruction's name, so its id.

use super::provenance::Scope;
use super::{Changed, PassLog, Rewrite};
use crate::ir::{
    is_permutation, CompId, Computation, InstId, Instruction, Literal, Loc, Module, Op, Scalar, Shape, Type, UserLists,
};
use cranelift_entity::EntityRef;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use smallvec::SmallVec;

/// What a rule does to the instruction it matched. (Short-lived, one at a time: the size
/// difference between the variants does not matter.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Action {
    /// Replace every use by this existing value (its type must be exactly the same).
    Use(InstId),
    /// Give the instruction a new op and operands; its name, type and loc stay.
    Rewrite { op: Op, operands: Vec<InstId> },
}

/// One rewrite rule: a stable name, the ops it can match and the function that tries it.
#[derive(Clone, Copy)]
pub(crate) struct Rule {
    pub name: &'static str,
    /// The ops the rule can match, by [`op_key`]; empty: any op. The driver tries a rule
    /// only on those (a table of fifty rules, each tried on every instruction, was most of
    /// the simplifier's time). A rule still checks its op itself.
    pub ops: &'static [&'static str],
    pub apply: fn(&mut Ctx, InstId) -> Option<Action>,
}

/// A rule table: `rules!["name" on ["binary"] => path::to_fn, "other" => path::to_other, ...]`
/// (without `on`, the rule is tried on every op).
macro_rules! rules {
    ($($name:literal $(on [$($op:literal),* $(,)?])? => $f:path,)*) => {
        &[$(Rule { name: $name, ops: &[$($($op),*)?], apply: $f },)*]
    };
}

/// The key rules name their ops by: `binary` and `unary` for those variants (a rule checks
/// which operation), the HLO name for every other op.
pub(crate) fn op_key(op: &Op) -> &'static str {
    match op {
        Op::Binary(_) => "binary",
        Op::Unary(_) => "unary",
        op => op.hlo_name(),
    }
}

/// A rule table's rules per op key, each list in table order (the first rule that
/// matches applies, so the order is the table's).
struct RuleIndex {
    by_key: HashMap<&'static str, Vec<usize>>,
    /// The rules that may match any op: the list for a key no rule names.
    any: Vec<usize>,
}

impl RuleIndex {
    fn new(rules: &[Rule]) -> RuleIndex {
        let any: Vec<usize> = (0..rules.len()).filter(|&i| rules[i].ops.is_empty()).collect();
        let mut by_key: HashMap<&'static str, Vec<usize>> = HashMap::default();
        for key in rules.iter().flat_map(|r| r.ops.iter().copied()) {
            by_key.entry(key).or_insert_with(|| {
                (0..rules.len()).filter(|&i| rules[i].ops.is_empty() || rules[i].ops.contains(&key)).collect()
            });
        }
        RuleIndex { by_key, any }
    }

    fn for_op(&self, op: &Op) -> &[usize] {
        self.by_key.get(op_key(op)).unwrap_or(&self.any)
    }
}

pub(crate) use rules;

/// What a rule sees: the module and the computation being simplified.
pub(crate) struct Ctx<'m> {
    pub module: &'m mut Module,
    pub comp: CompId,
}

impl Ctx<'_> {
    pub fn inst(&self, id: InstId) -> &Instruction {
        self.module.comp(self.comp).inst(id)
    }
    pub fn op(&self, id: InstId) -> &Op {
        &self.inst(id).op
    }
    /// Operand `k` of `id`.
    pub fn arg(&self, id: InstId, k: usize) -> InstId {
        self.inst(id).operands[k]
    }
    pub fn args(&self, id: InstId) -> &[InstId] {
        &self.inst(id).operands
    }
    /// The array shape of `id` (`None` for tuples and tokens).
    pub fn shape(&self, id: InstId) -> Option<&Shape> {
        self.inst(id).ty.as_array()
    }
    /// The dimensions of `id` (empty for non-arrays, which no rule matches anyway).
    pub fn dims(&self, id: InstId) -> &[i64] {
        self.shape(id).map_or(&[], |s| s.dims.as_slice())
    }

    /// The single value every element of `id` holds, when `id` is a constant whose
    /// elements all have the same bits, or a broadcast of one. Empty arrays have none.
    pub fn splat(&self, id: InstId) -> Option<Scalar> {
        match self.op(id) {
            Op::Constant(l) => literal_splat(l),
            Op::BroadcastInDim { .. } => self.splat(self.arg(id, 0)),
            _ => None,
        }
    }

    /// Inserts a new instruction just before `before` (so it dominates it), named
    /// `fresh_name(base)`, carrying `before`'s loc.
    pub fn insert_before(&mut self, before: InstId, base: &str, op: Op, operands: Vec<InstId>, ty: Type) -> InstId {
        let name = self.module.fresh_name(base);
        let comp = self.module.comp_mut(self.comp);
        let loc: Loc = comp.inst(before).loc.clone();
        let id = comp.insts.push(Instruction { name, op, operands, ty, loc });
        let pos = comp.order.iter().position(|&i| i == before).unwrap_or(comp.order.len());
        comp.order.insert(pos, id);
        id
    }

    /// Rewrites `id` (an array of any shape) into a splat of `value`: a constant when it
    /// is a scalar, else a broadcast of a new scalar constant (never a big literal).
    pub fn splat_action(&mut self, id: InstId, value: Scalar) -> Option<Action> {
        let shape = self.shape(id)?.clone();
        let scalar = Literal::scalar_from(shape.elem, value);
        if shape.rank() == 0 {
            let lit = Literal { shape: Shape { layout: None, ..shape.clone() }, data: scalar.data };
            return Some(Action::Rewrite { op: Op::Constant(lit), operands: vec![] });
        }
        let ty = Type::Array(scalar.shape.clone());
        let c = self.insert_before(id, "constant", Op::Constant(scalar), vec![], ty);
        Some(Action::Rewrite { op: Op::BroadcastInDim { dims: vec![] }, operands: vec![c] })
    }
}

/// The common value of a literal whose elements all have the same bit pattern.
pub(crate) fn literal_splat(l: &Literal) -> Option<Scalar> {
    if l.num_elements() == 0 {
        return None;
    }
    let first = l.bits(0);
    (1..l.num_elements()).all(|i| l.bits(i) == first).then(|| l.get(0))
}

/// Whether `id` has the operands and attributes its op needs, so that rules may index
/// them freely. The verifier guarantees this for verified modules; the check keeps the
/// pass from panicking on one that was not verified (such instructions are skipped).
fn well_formed(comp: &Computation, id: InstId) -> bool {
    let inst = comp.inst(id);
    let rank = |i: usize| inst.operands.get(i).and_then(|&o| comp.inst(o).ty.as_array()).map(Shape::rank);
    let out_rank = inst.ty.as_array().map(Shape::rank);
    let n = inst.operands.len();
    match &inst.op {
        Op::Unary(_) | Op::Convert | Op::Reshape | Op::GetTupleElement { .. } => n == 1,
        Op::Binary(_) | Op::Compare { .. } | Op::Dot(_) | Op::Pad { .. } => n == 2,
        Op::Select | Op::Clamp => n == 3,
        Op::BroadcastInDim { dims } => {
            n == 1 && rank(0) == Some(dims.len()) && dims.iter().all(|&d| d >= 0 && Some(d as usize) < out_rank)
        }
        Op::Transpose { perm } => n == 1 && rank(0) == Some(perm.len()) && is_permutation(perm, perm.len()),
        Op::Slice { start, limit, stride } => {
            n == 1 && rank(0) == Some(start.len()) && limit.len() == start.len() && stride.len() == start.len()
        }
        Op::Reverse { dims } => n == 1 && dims.iter().all(|&d| d >= 0 && Some(d as usize) < rank(0)),
        Op::Concatenate { dim } => n >= 1 && *dim >= 0 && (0..n).all(|i| rank(i).is_some_and(|r| (*dim as usize) < r)),
        Op::DynamicSlice { .. } => n >= 1,
        Op::DynamicUpdateSlice => n >= 2,
        Op::Reduce { .. } => n >= 2,
        Op::Iota { dim } => *dim >= 0 && Some(*dim as usize) < out_rank,
        _ => true,
    }
}

/// What a rule's outcome may depend on, around an instruction `x`: `x`, its operands
/// and theirs, the users of its operands (a rule may ask for a single user), and the
/// splat behind a short broadcast chain. So `x` must be visited again when an
/// instruction up to [`VIEW_DEPTH`] operand steps below it changed its op, operands or
/// users. A round records the instructions it changed that way; the next visits those
/// and their users up to that depth.
#[derive(Default)]
struct Touched(HashSet<InstId>);

/// Operand steps a rule looks down (two, and one more for a broadcast of a splat).
const VIEW_DEPTH: usize = 3;

impl Touched {
    fn add(&mut self, ids: impl IntoIterator<Item = InstId>) {
        self.0.extend(ids);
    }

    /// The live instructions to visit next: the touched ones and their users, up to
    /// [`VIEW_DEPTH`] steps. A walk in program order sees operands before users, so one
    /// pass finds them all; passes repeat (up to the depth) in case `order` is not
    /// topological.
    fn into_visits(self, comp: &Computation) -> HashSet<InstId> {
        // Per slot: operand steps from the nearest touched instruction, if within reach.
        let mut dist: Vec<Option<u8>> = vec![None; comp.insts.len()];
        for id in &self.0 {
            if let Some(d) = dist.get_mut(id.index()) {
                *d = Some(0);
            }
        }
        for _ in 0..VIEW_DEPTH {
            let mut grew = false;
            for &id in &comp.order {
                let via = comp.inst(id).operands.iter().filter_map(|o| dist.get(o.index()).copied().flatten()).min();
                if let Some(d) = via.filter(|&d| (d as usize) < VIEW_DEPTH).map(|d| d + 1) {
                    let slot = &mut dist[id.index()];
                    if slot.is_none_or(|old| d < old) {
                        *slot = Some(d);
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        comp.order.iter().copied().filter(|id| dist[id.index()].is_some()).collect()
    }
}

/// Who uses each instruction of a computation, once per use, by arena slot: what a
/// round needs to point a replaced value's users at its replacement. Scanning the whole
/// computation for them at every replacement was quadratic in a deep stack's depth.
/// Built when a round first replaces a value (the computation's [`UserLists`]), then
/// kept up to date by its rewrites.
struct Uses(UserLists);

impl Uses {
    /// The uses among `comp`'s live instructions (those in its order).
    fn of(comp: &Computation) -> Uses {
        Uses(comp.users())
    }

    fn list(&mut self, id: InstId) -> &mut SmallVec<[InstId; 2]> {
        self.0.list_mut(id)
    }

    fn add(&mut self, user: InstId, operands: &[InstId]) {
        for &o in operands {
            self.list(o).push(user);
        }
    }

    fn remove(&mut self, user: InstId, operands: &[InstId]) {
        for &o in operands {
            let list = self.list(o);
            if let Some(at) = list.iter().position(|&u| u == user) {
                list.swap_remove(at);
            }
        }
    }

    /// Points every use of `old` at `new`, and the root (as
    /// `Computation::replace_all_uses` does, from the users it knows).
    fn replace(&mut self, comp: &mut Computation, old: InstId, new: InstId) {
        let users = std::mem::take(self.list(old));
        for &u in &users {
            for o in comp.inst_mut(u).operands.iter_mut() {
                if *o == old {
                    *o = new;
                }
            }
        }
        self.list(new).extend(users);
        if comp.root == old {
            comp.root = new;
        }
    }
}

/// One round over one computation: tries the rules on every live instruction (or only
/// on those in `only`). Records provenance when `scope` is given (the computation is
/// in the graph). Returns what the round changed (nothing: no rule fired).
fn round(
    rules: &[Rule],
    index: &RuleIndex,
    module: &mut Module,
    comp: CompId,
    log: &mut PassLog,
    mut scope: Option<&mut Scope>,
    only: Option<&HashSet<InstId>>,
) -> Option<Touched> {
    let order = module.comp(comp).order.clone();
    let mut touched: Option<Touched> = None;
    let mut replaced: HashSet<InstId> = HashSet::default();
    let mut uses: Option<Uses> = None;
    for id in order {
        if replaced.contains(&id) || only.is_some_and(|only| !only.contains(&id)) {
            continue;
        }
        let mut cx = Ctx { module, comp };
        let candidates = index.for_op(cx.op(id));
        if candidates.is_empty() || matches!(cx.op(id), Op::Parameter(_)) || cx.op(id).has_side_effect() {
            continue;
        }
        // Rules look at the instruction and its operands (and their operands).
        let c = cx.module.comp(comp);
        if !well_formed(c, id) || !c.inst(id).operands.iter().all(|&o| well_formed(c, o)) {
            continue;
        }
        for &r in candidates {
            let rule = &rules[r];
            let made_from = cx.module.comp(comp).insts.len();
            let action = (rule.apply)(&mut cx, id);
            // Helpers the rule inserted (whether or not its action is taken: one left
            // unused is removed with the round's dead code).
            if let Some(scope) = scope.as_deref_mut() {
                for k in made_from..cx.module.comp(comp).insts.len() {
                    scope.created(cx.module, comp, InstId::new(k), rule.name, log);
                }
            }
            if let Some(uses) = &mut uses {
                let c = cx.module.comp(comp);
                for k in made_from..c.insts.len() {
                    uses.add(InstId::new(k), &c.inst(InstId::new(k)).operands);
                }
            }
            let Some(action) = action else { continue };
            let c = cx.module.comp_mut(comp);
            let name = c.inst(id).name.clone();
            if let Action::Use(y) = action {
                if y == id || c.inst(y).ty != c.inst(id).ty {
                    continue;
                }
            }
            let t = touched.get_or_insert_with(Touched::default);
            // Helpers are new (the dead ones are dropped before the next round).
            t.add((made_from..c.insts.len()).map(InstId::new));
            match action {
                Action::Use(y) => {
                    // `y` takes over `id`'s users: its own users changed.
                    t.add([y]);
                    uses.get_or_insert_with(|| Uses::of(c)).replace(c, id, y);
                    replaced.insert(id);
                    if let Some(scope) = scope.as_deref_mut() {
                        scope.replaced(cx.module, comp, id, y, rule.name, log);
                    }
                }
                Action::Rewrite { op, operands } => {
                    // The old and new operands' users changed, and `id` itself.
                    t.add(c.inst(id).operands.iter().chain(&operands).copied().chain([id]));
                    if let Some(uses) = &mut uses {
                        uses.remove(id, &c.inst(id).operands);
                        uses.add(id, &operands);
                    }
                    let inst = c.inst_mut(id);
                    inst.op = op;
                    inst.operands = operands;
                }
            }
            log.rewrites.push(Rewrite { rule: rule.name, inst: name });
            break;
        }
    }
    touched
}

/// Applies `rules` to every reachable computation of `module` until none fires (at most
/// `max_rounds` rounds per computation); whether anything changed.
pub(crate) fn run_rules(rules: &[Rule], max_rounds: usize, module: &mut Module, log: &mut PassLog) -> Changed {
    let mut changed = false;
    let mut scope = Scope::new(module, log);
    let index = RuleIndex::new(rules);
    for comp in module.post_order() {
        let mut comp_changed = false;
        let in_graph = scope.in_graph(module, comp);
        let mut only: Option<HashSet<InstId>> = None;
        for _ in 0..max_rounds {
            let Some(mut touched) =
                round(rules, &index, module, comp, log, in_graph.then_some(&mut scope), only.as_ref())
            else {
                break;
            };
            // Drop what the round left unused, so that the next round neither
            // revisits it nor counts it as a user.
            let dead = module.comp_mut(comp).remove_dead_ids();
            let c = module.comp(comp);
            // What the dead read has fewer users now.
            touched.add(dead.iter().flat_map(|&d| c.inst(d).operands.iter().copied()));
            if in_graph {
                for id in dead {
                    scope.removed(module, comp, id, "dce", log);
                }
            }
            only = Some(touched.into_visits(module.comp(comp)));
            comp_changed = true;
        }
        changed |= comp_changed;
    }
    changed
}
