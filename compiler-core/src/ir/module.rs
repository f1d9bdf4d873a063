//! Modules, computations and instructions, held in arenas with typed ids.
//!
//! As in Cranelift, ids are `u32` newtypes and arenas never reuse an id: a pass that
//! removes an instruction drops it from `Computation::order`, and the arena slot stays
//! behind unreferenced. `order` is the computation's live instructions in an order where
//! every operand comes before its users (parameters included).

use super::op::Op;
use super::types::Type;
use cranelift_entity::{entity_impl, packed_option::ReservedValue, PrimaryMap, SecondaryMap};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// An instruction within its computation.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InstId(u32);
entity_impl!(InstId, "i");

/// A computation within its module.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CompId(u32);
entity_impl!(CompId, "comp");

/// Where an instruction came from: its line and column in the parsed text, and the
/// source location the text itself recorded (a JAX `loc("f.py":3:7)` or XLA metadata).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc {
    /// 1-based; 0 means "made by a pass, not parsed".
    pub line: u32,
    pub col: u32,
    pub source: Option<Arc<str>>,
}

impl Loc {
    pub fn at(line: u32, col: u32) -> Loc {
        Loc { line, col, source: None }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Instruction {
    /// Unique within the module; what the printers show (`add.3`).
    pub name: String,
    pub op: Op,
    pub operands: Vec<InstId>,
    pub ty: Type,
    pub loc: Loc,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Computation {
    pub name: String,
    #[serde(with = "serde_primary_map")]
    pub insts: PrimaryMap<InstId, Instruction>,
    /// Parameter instructions by parameter number.
    pub params: Vec<InstId>,
    /// Live instructions, operands before users.
    pub order: Vec<InstId>,
    /// The value the computation returns (a `Tuple` instruction for several results).
    pub root: InstId,
}

impl Computation {
    pub fn new(name: impl Into<String>) -> Computation {
        Computation::with_capacity(name, 0, 0)
    }

    /// An empty computation with room for `insts` instructions, `params` of them
    /// parameters.
    pub fn with_capacity(name: impl Into<String>, insts: usize, params: usize) -> Computation {
        Computation {
            name: name.into(),
            insts: PrimaryMap::with_capacity(insts),
            params: Vec::with_capacity(params),
            order: Vec::with_capacity(insts),
            root: InstId::reserved_value(),
        }
    }

    /// Appends an instruction at the end of `order`.
    pub fn push(&mut self, inst: Instruction) -> InstId {
        let id = self.insts.push(inst);
        self.order.push(id);
        id
    }

    /// Appends parameter number `params.len()`.
    pub fn push_param(&mut self, name: impl Into<String>, ty: Type, loc: Loc) -> InstId {
        let index = self.params.len() as u32;
        let id = self.push(Instruction { name: name.into(), op: Op::Parameter(index), operands: vec![], ty, loc });
        self.params.push(id);
        id
    }

    pub fn inst(&self, id: InstId) -> &Instruction {
        &self.insts[id]
    }
    pub fn inst_mut(&mut self, id: InstId) -> &mut Instruction {
        &mut self.insts[id]
    }
    pub fn root_inst(&self) -> &Instruction {
        &self.insts[self.root]
    }
    pub fn has_root(&self) -> bool {
        self.root != InstId::reserved_value()
    }
    pub fn param_types(&self) -> Vec<Type> {
        self.params.iter().map(|&p| self.insts[p].ty.clone()).collect()
    }

    /// Users of each live instruction, in `order` (an instruction using a value twice
    /// appears twice).
    pub fn users(&self) -> super::UserLists {
        super::UserLists::of(self)
    }

    /// Replaces every use of `old` by `new` among live instructions and the root.
    pub fn replace_all_uses(&mut self, old: InstId, new: InstId) {
        for &id in &self.order {
            for op in self.insts[id].operands.iter_mut() {
                if *op == old {
                    *op = new;
                }
            }
        }
        if self.root == old {
            self.root = new;
        }
    }

    /// Frees the arena slots of instructions no longer in `order` (dead, or replaced by a
    /// pass) and renumbers the rest in `order`, operands before users. For a module that
    /// is done changing, the one a target compiles: passes leave most slots dead, and
    /// every clone, plan and stored artifact would carry them.
    pub fn compact(&mut self) {
        // Parameters and the root are in `order` in a well-formed computation; never lose one.
        let mut live: SecondaryMap<InstId, bool> = super::sized_map(self.insts.len(), false);
        let roots = self.params.iter().chain(self.has_root().then_some(&self.root));
        for &id in self.order.iter().chain(roots) {
            live[id] = true;
        }
        // Live instructions read only live ones (the verifier checks it); should one not,
        // the computation stays as it is rather than lose a value.
        let reads_dead = |id: InstId| self.insts[id].operands.iter().any(|&op| !live[op]);
        if self.insts.keys().any(|id| live[id] && reads_dead(id)) {
            return;
        }
        // Kept instructions keep their relative order (`order` says which come first).
        let kept = self.insts.keys().filter(|&id| live[id]).count();
        // Nothing dead (a fusion body, built whole): every id stays what it is.
        if kept == self.insts.len() {
            return;
        }
        let mut new_id: SecondaryMap<InstId, InstId> = super::sized_map(self.insts.len(), InstId::reserved_value());
        for (id, inst) in std::mem::replace(&mut self.insts, PrimaryMap::with_capacity(kept)) {
            if live[id] {
                new_id[id] = self.insts.push(inst);
            }
        }
        for inst in self.insts.values_mut() {
            for op in inst.operands.iter_mut() {
                *op = new_id[*op];
            }
        }
        for id in self.order.iter_mut().chain(self.params.iter_mut()) {
            *id = new_id[*id];
        }
        if self.has_root() {
            self.root = new_id[self.root];
        }
    }

    /// Drops from `order` every instruction not reachable from the root, keeping
    /// parameters and side-effecting instructions. Returns how many were removed.
    pub fn remove_dead(&mut self) -> usize {
        self.remove_dead_ids().len()
    }

    /// [`Computation::remove_dead`], returning the instructions removed, in `order`
    /// (their arena slots stay, so a caller can still read their names).
    pub fn remove_dead_ids(&mut self) -> Vec<InstId> {
        // Dense (one flag per slot): this runs after every rewrite round.
        let mut live = vec![false; self.insts.len()];
        let mut stack: Vec<InstId> = vec![self.root];
        stack.extend(self.params.iter().copied());
        stack.extend(self.order.iter().copied().filter(|&i| self.insts[i].op.has_side_effect()));
        while let Some(id) = stack.pop() {
            if let Some(seen @ false) = live.get_mut(id.as_u32() as usize) {
                *seen = true;
                stack.extend(self.insts[id].operands.iter().copied());
            }
        }
        let mut removed = Vec::new();
        self.order.retain(|id| {
            let keep = live.get(id.as_u32() as usize).copied().unwrap_or(false);
            if !keep {
                removed.push(*id);
            }
            keep
        });
        removed
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Module {
    pub name: String,
    #[serde(with = "serde_primary_map")]
    pub comps: PrimaryMap<CompId, Computation>,
    pub entry: CompId,
    /// Counter behind `fresh_name`.
    next_name: u64,
}

impl Module {
    pub fn new(name: impl Into<String>) -> Module {
        Module { name: name.into(), comps: PrimaryMap::new(), entry: CompId::reserved_value(), next_name: 0 }
    }

    /// [`Computation::compact`] on every computation.
    pub fn compact(&mut self) {
        for comp in self.comps.values_mut() {
            comp.compact();
        }
    }

    pub fn add_computation(&mut self, comp: Computation) -> CompId {
        self.comps.push(comp)
    }

    pub fn comp(&self, id: CompId) -> &Computation {
        &self.comps[id]
    }
    pub fn comp_mut(&mut self, id: CompId) -> &mut Computation {
        &mut self.comps[id]
    }
    pub fn entry_comp(&self) -> &Computation {
        &self.comps[self.entry]
    }

    /// A name not yet handed out by this module: `base.N`.
    pub fn fresh_name(&mut self, base: &str) -> String {
        self.fresh_name_from(&[base])
    }

    /// [`Module::fresh_name`] for a base written in pieces (`["param_", "3"]`), without
    /// building the base first.
    ///
    /// Written out by hand: the parser and the passes name every instruction they make,
    /// and `format!` made each name cost about a thousand instructions.
    pub fn fresh_name_from(&mut self, base: &[&str]) -> String {
        let n = self.next_name;
        // Text may name an instruction `x.18446744073709551615` (see `reserve_names`).
        self.next_name = n.saturating_add(1);
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = n;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let len = base.iter().map(|p| p.len()).sum::<usize>() + 1 + digits.len() - at;
        let mut name = String::with_capacity(len);
        base.iter().for_each(|p| name.push_str(p));
        name.push('.');
        name.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
        name
    }

    /// Makes `fresh_name` skip past numeric suffixes already used (call after parsing
    /// names from text, so that passes never hand out a duplicate).
    pub fn reserve_names(&mut self) {
        let mut max = self.next_name;
        for comp in self.comps.values() {
            for inst in comp.insts.values() {
                if let Some((_, suffix)) = inst.name.rsplit_once('.') {
                    if let Ok(n) = suffix.parse::<u64>() {
                        max = max.max(n.saturating_add(1));
                    }
                }
            }
        }
        self.next_name = max;
    }

    /// How many fusion instructions of the live computations call each fusion body.
    pub fn fusion_callers(&self) -> rustc_hash::FxHashMap<CompId, usize> {
        let mut callers = rustc_hash::FxHashMap::default();
        for c in self.post_order() {
            let comp = self.comp(c);
            for &i in &comp.order {
                if let Op::Fusion { body, .. } = comp.inst(i).op {
                    *callers.entry(body).or_default() += 1;
                }
            }
        }
        callers
    }

    /// Computations reachable from the entry, callees before callers (the entry last).
    pub fn post_order(&self) -> Vec<CompId> {
        let mut seen = super::sized_map(self.comps.len(), false);
        let mut out = Vec::new();
        fn visit(m: &Module, c: CompId, seen: &mut SecondaryMap<CompId, bool>, out: &mut Vec<CompId>) {
            if std::mem::replace(&mut seen[c], true) {
                return;
            }
            for &i in &m.comps[c].order {
                for callee in m.comps[c].insts[i].op.called_computations() {
                    visit(m, callee, seen, out);
                }
            }
            out.push(c);
        }
        if self.entry != CompId::reserved_value() {
            visit(self, self.entry, &mut seen, &mut out);
        }
        out
    }

    /// Number of live instructions in all reachable computations.
    pub fn instruction_count(&self) -> usize {
        self.post_order().iter().map(|&c| self.comps[c].order.len()).sum()
    }
}

/// Serde for a `PrimaryMap` field (`#[serde(with = ...)]`): its values in id order, so
/// ids survive a round trip. (Cranelift's own serde support is a crate feature that
/// would rebuild the whole code generator; this needs nothing of it.)
pub mod serde_primary_map {
    use cranelift_entity::{EntityRef, PrimaryMap};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<K: EntityRef, V: Serialize, S: Serializer>(
        map: &PrimaryMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.values())
    }

    pub fn deserialize<'de, K: EntityRef, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<PrimaryMap<K, V>, D::Error> {
        Ok(PrimaryMap::from(Vec::<V>::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn compact_frees_dead_slots_and_keeps_the_meaning() {
        let text = "HloModule m\n\nENTRY main {\n  p = f32[4] parameter(0)\n  e = f32[4] exponential(p)\n  n = f32[4] negate(e)\n  ROOT a = f32[4] add(p, n)\n}\n";
        let mut m = crate::parse::parse_module(text).expect("parses");
        // A pass replaced `n` by `e`'s users reading `p`: `e` and `n` are now dead.
        let entry = m.entry;
        let c = &mut m.comps[entry];
        let (p, n) = (c.params[0], c.order[2]);
        c.replace_all_uses(n, p);
        assert_eq!(c.remove_dead(), 2);
        let before = crate::print::hlo::print_module(&m);
        let args = crate::interp::random_inputs(&m, 7);
        let want = crate::interp::run(&m, &args).expect("runs");
        m.compact();
        let c = m.comp(m.entry);
        assert_eq!((c.insts.len(), c.order.len()), (2, 2));
        assert_eq!(crate::print::hlo::print_module(&m), before);
        assert_eq!(crate::interp::run(&m, &args).expect("runs"), want);
        crate::verify::verify(&m).expect("still valid");
    }

    #[test]
    fn fresh_names_count_up_in_decimal_after_their_base() {
        let mut m = super::Module::new("m");
        assert_eq!(m.fresh_name("add"), "add.0");
        assert_eq!(m.fresh_name_from(&["x", ".clone"]), "x.clone.1");
        m.next_name = 9;
        assert_eq!(m.fresh_name("fusion"), "fusion.9");
        assert_eq!(m.fresh_name_from(&["param_", "3"]), "param_3.10");
        m.next_name = 1_234_567_890_123;
        assert_eq!(m.fresh_name(""), ".1234567890123");
        m.next_name = u64::MAX;
        assert_eq!(m.fresh_name_from(&[]), format!(".{}", u64::MAX));
        // A name from the text with the largest suffix: reserving past it must not overflow.
        let text = "HloModule m\n\nENTRY main {\n  ROOT p.18446744073709551615 = f32[4] parameter(0)\n}\n";
        let mut m = crate::parse::parse_module(text).expect("parses");
        m.reserve_names();
        assert_eq!(m.fresh_name("add"), format!("add.{}", u64::MAX));
    }
}
