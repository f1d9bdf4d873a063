//! Sibling dot merging (XLA's `DotMerger`): dots that read one operand on the same side,
//! with the same dimension numbers, become one dot over the other operands concatenated
//! along a free dimension, and each original dot a slice of its result. Q, K and V of an
//! attention layer are the classic case: `x·Wq`, `x·Wk`, `x·Wv` read `x` three times;
//! `x·[Wq Wk Wv]` reads it once.
//!
//! Merging is not free: the concatenation copies the other operands (unless they are all
//! constants small enough for constant folding to fold it away), and a slice whose user
//! cannot fuse it (a dot, a module output) becomes a copy of its own. So each group is a
//! decision, recorded like fusion's: taken when the bytes saved by reading the shared
//! operand once exceed the bytes the concatenation and those slices move, and the merged
//! result stays under `max_bytes`; refused with the numbers otherwise.
//!
//! Only dots that do not depend on each other merge (the merged dot must be computable
//! before every original dot's users), and the other operands must match in element type
//! and in every dimension but the first free one, along which they are concatenated.
//! Every result bit is kept: each slice holds exactly the products and sums its dot made.
//!
//! Provenance: the concatenation and the merged dot are `created_by` `dot-merger`; each
//! original dot is rewritten in place into its slice (its name, so its graph id, stays).

use crate::ir::{CompId, Computation, DotDims, ElementType, InstId, Instruction, Module, Op, Shape, Type};
use crate::passes::provenance::Scope;
use crate::passes::{Changed, Decision, Pass, PassLog, Rewrite};
use cranelift_entity::EntityRef;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The dot merger; see the module documentation.
pub struct DotMerger {
    /// The largest merged result, in bytes, the pass will make.
    pub max_bytes: usize,
    /// Constants up to this many elements count as folded by `constant-fold` (its own
    /// limit), so concatenating them moves nothing at run time.
    pub foldable_elements: usize,
}

impl Default for DotMerger {
    fn default() -> Self {
        DotMerger {
            max_bytes: 64 << 20,
            foldable_elements: crate::passes::constant_fold::ConstantFold::default().max_elements,
        }
    }
}

/// Dots that may merge: the shared operand, its side, the dims, and the shape of the
/// other operand with the concatenated dimension blanked out.
#[derive(Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    shared: InstId,
    shared_side: usize,
    dims: DotDims,
    other_shape: (ElementType, Vec<i64>),
    result_elem: ElementType,
}

/// How a group's merge would pay off, in bytes.
struct Estimate {
    saved: u64,
    concat: u64,
    slices: u64,
    kernels_saved: i64,
}

impl Pass for DotMerger {
    fn name(&self) -> &'static str {
        "dot-merger"
    }

    fn run(&self, module: &mut Module, log: &mut PassLog) -> Changed {
        let mut changed = false;
        let mut scope = Scope::new(module, log);
        for comp_id in module.post_order() {
            // Groups already decided against (each decision is logged once).
            let mut refused: HashSet<Vec<InstId>> = HashSet::default();
            // One scan finds the groups; each is decided on the graph as the merges
            // before it left it. A group whose dot an earlier merge made a slice needs
            // a new scan (a deep stack has a group per layer: a scan per merge was
            // quadratic in its depth).
            loop {
                let mut sliced: HashSet<InstId> = HashSet::default();
                let mut stale = false;
                for (key, members) in self.groups(module.comp(comp_id)) {
                    if members.iter().any(|m| sliced.contains(m)) {
                        stale = true;
                        break;
                    }
                    let Some(members) = self.decide(module.comp(comp_id), &key, members, &mut refused, log) else {
                        continue;
                    };
                    self.merge(module, comp_id, &key, &members, &mut scope, log);
                    sliced.extend(members);
                    changed = true;
                }
                if !stale {
                    break;
                }
            }
        }
        changed
    }
}

/// The first free dimension of operand `side` of a dot: the one concatenated along.
fn first_free(dims: &DotDims, side: usize, rank: usize) -> Option<usize> {
    let (batch, contracting) =
        if side == 0 { (&dims.lhs_batch, &dims.lhs_contracting) } else { (&dims.rhs_batch, &dims.rhs_contracting) };
    (0..rank).find(|&d| !batch.contains(&(d as i64)) && !contracting.contains(&(d as i64)))
}

/// The position of operand `side`'s free dim `d` in the dot's result.
fn result_position(dims: &DotDims, side: usize, d: usize, lhs_free: usize) -> usize {
    let (batch, contracting) =
        if side == 0 { (&dims.lhs_batch, &dims.lhs_contracting) } else { (&dims.rhs_batch, &dims.rhs_contracting) };
    let before = (0..d).filter(|&e| !batch.contains(&(e as i64)) && !contracting.contains(&(e as i64))).count();
    dims.lhs_batch.len() + if side == 0 { before } else { lhs_free + before }
}

fn array(comp: &Computation, id: InstId) -> Option<&Shape> {
    comp.inst(id).ty.as_array()
}

impl DotMerger {
    /// The dots of `comp` that may merge, grouped by key, in program order (groups of
    /// two or more).
    fn groups(&self, comp: &Computation) -> Vec<(GroupKey, Vec<InstId>)> {
        let mut groups: Vec<(GroupKey, Vec<InstId>)> = Vec::new();
        let mut index: HashMap<GroupKey, usize> = HashMap::default();
        for &id in &comp.order {
            let inst = comp.inst(id);
            let Op::Dot(dims) = &inst.op else { continue };
            if inst.operands.len() != 2 {
                continue;
            }
            let Some(out) = inst.ty.as_array() else { continue };
            for side in 0..2 {
                let other = inst.operands[1 - side];
                let Some(shape) = array(comp, other) else { continue };
                let Some(cat) = first_free(dims, 1 - side, shape.rank()) else { continue };
                let mut blanked = shape.dims.to_vec();
                blanked[cat] = -1;
                let key = GroupKey {
                    shared: inst.operands[side],
                    shared_side: side,
                    dims: dims.clone(),
                    other_shape: (shape.elem, blanked),
                    result_elem: out.elem,
                };
                match index.get(&key) {
                    Some(&g) => groups[g].1.push(id),
                    None => {
                        index.insert(key.clone(), groups.len());
                        groups.push((key, vec![id]));
                    }
                }
            }
        }
        groups.retain(|(_, members)| members.len() >= 2);
        groups
    }

    /// Whether group `key` of `comp` merges: the members that may (independent of each
    /// other) when the merge pays off. Logs the decision; a refused group goes into
    /// `refused` and is not decided again.
    fn decide(
        &self,
        comp: &Computation,
        key: &GroupKey,
        members: Vec<InstId>,
        refused: &mut HashSet<Vec<InstId>>,
        log: &mut PassLog,
    ) -> Option<Vec<InstId>> {
        let members = independent(comp, &members);
        if members.len() < 2 || refused.contains(&members) {
            return None;
        }
        let estimate = self.estimate(comp, key, &members, &comp.users());
        let merged_bytes: u64 = members.iter().map(|&d| bytes(comp, d)).sum();
        let first = comp.inst(members[0]).name.clone();
        let shared = &comp.inst(key.shared).name;
        let net = estimate.saved as i64 - (estimate.concat + estimate.slices) as i64;
        let (taken, rule, reason) = if merged_bytes > self.max_bytes as u64 {
            (
                false,
                "refuse-dot-merger-size",
                format!(
                    "the merged result would be {}, over the limit of {}",
                    human(merged_bytes),
                    human(self.max_bytes as u64)
                ),
            )
        } else if net <= 0 {
            (false, "refuse-dot-merger-bytes", format!(
                "one dot would read %{shared} once instead of {} times (saving {}), but concatenating the other operands moves {} and slicing the result for users that cannot fuse a slice {}",
                members.len(), human(estimate.saved), human(estimate.concat), human(estimate.slices)
            ))
        } else {
            (true, "dot-merger", format!(
                "{} dots read %{shared}: one dot over the other operands concatenated reads it once, saving {} against {} of concatenation and {} of slices",
                members.len(), human(estimate.saved), human(estimate.concat), human(estimate.slices)
            ))
        };
        for &d in &members[1..] {
            log.decisions.push(Decision {
                producer: comp.inst(d).name.clone(),
                consumer: first.clone(),
                taken,
                rule,
                reason: reason.clone(),
                bytes_saved: net / (members.len() as i64 - 1),
                kernels_saved: estimate.kernels_saved / (members.len() as i64 - 1),
            });
        }
        if !taken {
            refused.insert(members);
            return None;
        }
        Some(members)
    }

    fn estimate(
        &self,
        comp: &Computation,
        key: &GroupKey,
        members: &[InstId],
        users: &crate::ir::UserLists,
    ) -> Estimate {
        let others: Vec<InstId> = members.iter().map(|&d| comp.inst(d).operands[1 - key.shared_side]).collect();
        let folded = others.iter().all(|&o| matches!(comp.inst(o).op, Op::Constant(_)))
            && others.iter().map(|&o| array(comp, o).map_or(0, Shape::num_elements)).sum::<usize>()
                <= self.foldable_elements;
        let concat = if folded { 0 } else { 2 * others.iter().map(|&o| bytes(comp, o)).sum::<u64>() };
        let mut slices = 0;
        let mut copies = 0;
        for &d in members {
            let unfusable = comp.root == d
                || users.get(d).iter().any(|&u| {
                    let op = &comp.inst(u).op;
                    !(op.is_elementwise() || op.is_data_movement() || matches!(op, Op::Reduce { .. }))
                });
            if unfusable {
                slices += 2 * bytes(comp, d);
                copies += 1;
            }
        }
        Estimate {
            saved: (members.len() as u64 - 1) * bytes(comp, key.shared),
            concat,
            slices,
            kernels_saved: members.len() as i64 - 1 - i64::from(!folded) - copies,
        }
    }

    /// Replaces the group's dots by one dot over the concatenated other operands, each
    /// original dot becoming a slice of it.
    fn merge(
        &self,
        module: &mut Module,
        comp_id: CompId,
        key: &GroupKey,
        members: &[InstId],
        scope: &mut Scope,
        log: &mut PassLog,
    ) {
        let comp = module.comp(comp_id);
        let first = comp.inst(members[0]);
        let dims = key.dims.clone();
        let a = first.operands[0];
        let (shared, shared_side) = (key.shared, key.shared_side);
        let other_side = 1 - shared_side;
        let others: Vec<InstId> = members.iter().map(|&d| comp.inst(d).operands[other_side]).collect();
        let other_shape = array(comp, others[0]).expect("dot operands are arrays").clone();
        let cat = first_free(&dims, other_side, other_shape.rank()).expect("grouped on a free dim");
        let lhs_rank = array(comp, a).expect("an array").rank();
        let lhs_free = lhs_rank - dims.lhs_batch.len() - dims.lhs_contracting.len();
        let at = result_position(&dims, other_side, cat, lhs_free);
        let sizes: Vec<i64> = others.iter().map(|&o| array(comp, o).expect("an array").dims[cat]).collect();
        let mut cat_dims = other_shape.dims.clone();
        cat_dims[cat] = sizes.iter().sum();
        let out = first.ty.as_array().expect("a dot is an array").clone();
        let mut merged_dims = out.dims.to_vec();
        merged_dims[at] = cat_dims[cat];
        let loc = first.loc.clone();
        let (cat_name, dot_name) = (module.fresh_name("concatenate"), module.fresh_name("dot"));
        let comp = module.comp_mut(comp_id);
        let concat = comp.insts.push(Instruction {
            name: cat_name,
            op: Op::Concatenate { dim: cat as i64 },
            operands: others.clone(),
            ty: Type::Array(Shape::new(other_shape.elem, cat_dims)),
            loc: loc.clone(),
        });
        let operands = if shared_side == 0 { vec![shared, concat] } else { vec![concat, shared] };
        let merged = comp.insts.push(Instruction {
            name: dot_name,
            op: Op::Dot(dims),
            operands,
            ty: Type::Array(Shape::new(out.elem, merged_dims.clone())),
            loc,
        });
        let mut start = 0;
        for (&d, &size) in members.iter().zip(&sizes) {
            let mut lo = vec![0; merged_dims.len()];
            let mut hi = merged_dims.clone();
            lo[at] = start;
            hi[at] = start + size;
            start += size;
            let inst = comp.inst_mut(d);
            inst.op = Op::Slice { start: lo, limit: hi, stride: vec![1; merged_dims.len()] };
            inst.operands = vec![merged];
            log.rewrites.push(Rewrite { rule: "dot-merger", inst: inst.name.clone() });
        }
        comp.order.push(concat);
        comp.order.push(merged);
        restore_topological_order(comp);
        if scope.in_graph(module, comp_id) {
            scope.created(module, comp_id, concat, "dot-merger", log);
            scope.created(module, comp_id, merged, "dot-merger", log);
        }
    }
}

/// The members that depend on no other member, in order: no two of them depend on each
/// other, so they can be one dot. One walk, remembering only whether each instruction
/// depends on some member (linear, however many members share the operand).
fn independent(comp: &Computation, members: &[InstId]) -> Vec<InstId> {
    // Flags per arena slot: a stack's layers share their weights, so a group of dots on
    // one weight spans the whole program, and this walk visits most of it.
    let slots = comp.insts.len();
    let mut member = vec![false; slots];
    for m in members {
        if let Some(f) = member.get_mut(m.index()) {
            *f = true;
        }
    }
    let is = |flags: &[bool], id: &InstId| flags.get(id.index()).copied().unwrap_or(false);
    let mut after_member = vec![false; slots];
    let mut out = Vec::new();
    // Only what lies between the first and the last member can depend on a member.
    let first = comp.order.iter().position(|id| is(&member, id)).unwrap_or(comp.order.len());
    let mut left = member.iter().filter(|&&m| m).count();
    for &id in &comp.order[first..] {
        if left == 0 {
            break;
        }
        left -= usize::from(is(&member, &id));
        let depends = comp.inst(id).operands.iter().any(|o| is(&member, o) || is(&after_member, o));
        if depends {
            after_member[id.index()] = true;
        } else if is(&member, &id) {
            out.push(id);
        }
    }
    out
}

/// Reorders `comp.order` so that operands come before users again, keeping the old
/// order wherever it was already valid (each instruction goes as early as its operands
/// allow, after everything that came before it).
fn restore_topological_order(comp: &mut Computation) {
    let mut placed: HashSet<InstId> = HashSet::default();
    let mut order = Vec::with_capacity(comp.order.len());
    // Depth-first, operands first, with an explicit stack (chains can be long).
    let mut stack: Vec<(InstId, bool)> = Vec::new();
    for &id in &comp.order {
        stack.push((id, false));
        while let Some((id, operands_done)) = stack.pop() {
            if placed.contains(&id) {
                continue;
            }
            if operands_done {
                placed.insert(id);
                order.push(id);
                continue;
            }
            stack.push((id, true));
            for &o in comp.inst(id).operands.iter().rev() {
                if !placed.contains(&o) {
                    stack.push((o, false));
                }
            }
        }
    }
    comp.order = order;
}

fn bytes(comp: &Computation, id: InstId) -> u64 {
    array(comp, id).map_or(0, |s| s.byte_size() as u64)
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
