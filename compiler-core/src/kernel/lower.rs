//! The lowering driver: how one loop or reduction kernel's elemental description becomes
//! code, shared by every target.
//!
//! A target implements [`Lower`]'s instructions (index arithmetic, one method per kind
//! of value node, loops, accumulators and stores) and nothing more; the driver walks
//! the description and owns what every target must agree on:
//! - which node a value or index comes from, evaluated once per region and operands
//!   first, in a fixed order ([`Lower::value`], [`Lower::index`]);
//! - a reduction's `Arg` is the reduced value itself, `Acc` and `Reduced` its
//!   accumulator;
//! - the kernel protocol ([`Lower::element`]): a loop kernel evaluates every output
//!   before it stores any (an output may take over an input's bytes in place, read at
//!   this position only); a reduction sets its accumulators from the inits, loops over
//!   the reduced variables applying every combiner from the old accumulators before any
//!   is replaced and storing the input-shaped outputs, then stores the reduce-shaped
//!   ones;
//! - where an output is stored ([`Lower::store_index`], from the plan's store strides);
//! - what a reduced loop reads without changing it ([`loop_invariants`]), for targets
//!   that evaluate it once before the loop.
//!
//! How the kept variables are walked (a loop nest split across threads on the CPU, one
//! invocation per element on a GPU), vectors, and strip-mining stay with the target: they
//! call back into the driver for the values.

use super::elemental::{Elemental, ExprId, Idx, IdxId, Node};
use super::index::store_strides;
use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};
use std::collections::HashMap;

/// The values and indices lowered in the current region, so a node shared by several
/// uses is lowered once.
pub struct Memo<V, I> {
    pub values: HashMap<ExprId, V>,
    pub indices: HashMap<IdxId, I>,
}

impl<V, I> Default for Memo<V, I> {
    fn default() -> Self {
        Memo { values: HashMap::new(), indices: HashMap::new() }
    }
}

impl<V, I> Memo<V, I> {
    pub fn clear(&mut self) {
        self.values.clear();
        self.indices.clear();
    }
}

/// A float max/min of a node and a constant that is not NaN (ReLU's `max(x, 0)`, clamps),
/// for targets with a one-instruction compare-and-select ([`max_min_by_constant`]).
#[derive(Clone, Copy, Debug)]
pub struct ConstantMaxMin {
    /// The operand that is not the constant.
    pub x: ExprId,
    /// The constant.
    pub k: f64,
    /// Max (`x < k ? k : x`), else min (`k < x ? k : x`).
    pub max: bool,
    /// Add `+0` to the selected value: mends `max(-0, +0)` (`x + 0 = x` for every other
    /// `x`).
    pub add_zero: bool,
}

/// [`ConstantMaxMin`] where the node is one: the compare-and-select gives the
/// interpreter's results (a NaN `x` fails the compare and is returned; equal operands
/// return `x`, right for zeros but `max(-0, +0)`, mended by `add_zero`). `min(x, -0)`
/// would need the mirror image: `None`, as for any other node.
pub fn max_min_by_constant(
    e: &Elemental,
    op: BinaryOp,
    elem: ElementType,
    a: ExprId,
    b: ExprId,
) -> Option<ConstantMaxMin> {
    if !elem.is_float() || !matches!(op, BinaryOp::Max | BinaryOp::Min) {
        return None;
    }
    let konst = |x: ExprId| match e.expr(x).node {
        Node::Const(s) if !s.as_f64().is_nan() => Some(s.as_f64()),
        _ => None,
    };
    let (x, k) = match (konst(a), konst(b)) {
        (_, Some(k)) => (a, k),
        (Some(k), _) => (b, k),
        _ => return None,
    };
    let max = op == BinaryOp::Max;
    let negative_zero = k == 0.0 && k.is_sign_negative();
    (max || !negative_zero).then_some(ConstantMaxMin { x, k, max, add_zero: max && k.to_bits() == 0 })
}

/// A target's instructions for the elemental description `'e`. Methods that can fail
/// (an op or type the target does not emit) report through [`Lower::fail`] and return
/// any value of the right kind; the caller discards the kernel.
pub trait Lower<'e>: Sized {
    /// A lowered value (a register, a vector of lanes, an expression's text).
    type Value: Clone;
    /// A lowered index: an integer of the plan's index semantics (`i64`; a target may
    /// use fewer bits where the plan's index ranges allow).
    type Index: Clone;

    fn elemental(&self) -> &'e Elemental;
    fn memo(&mut self) -> &mut Memo<Self::Value, Self::Index>;
    /// Records why the kernel cannot be emitted (the first reason wins).
    fn fail(&mut self, why: String);

    // Index arithmetic ([`Idx`]).
    fn var(&mut self, v: u32) -> Self::Index;
    fn index_const(&mut self, c: i64) -> Self::Index;
    fn index_add(&mut self, a: Self::Index, b: Self::Index) -> Self::Index;
    fn index_mul(&mut self, a: Self::Index, k: i64) -> Self::Index;
    /// Floor division by a positive constant (of a non-negative index).
    fn index_div(&mut self, a: Self::Index, k: i64) -> Self::Index;
    fn index_rem(&mut self, a: Self::Index, k: i64) -> Self::Index;
    fn index_clamp(&mut self, a: Self::Index, lo: i64, hi: i64) -> Self::Index;
    /// An integer or pred value as an index: signed types sign-extend, unsigned ones
    /// zero-extend, saturating at `i64::MAX` (as the interpreter reads start indices).
    fn data_index(&mut self, elem: ElementType, v: Self::Value) -> Self::Index;

    // Value nodes ([`Node`]). Loads and index values get the index node, not its value:
    // a vector target looks at how it depends on the vector variable first.
    /// Node `x`, element `linear` of input `input`.
    fn load(&mut self, x: ExprId, input: u32, linear: IdxId) -> Self::Value;
    fn constant(&mut self, elem: ElementType, s: Scalar) -> Self::Value;
    /// An index as a number of type `elem` (iota).
    fn iota(&mut self, i: IdxId, elem: ElementType) -> Self::Value;
    /// pred: `lo <= i < hi`.
    fn in_range(&mut self, i: IdxId, lo: i64, hi: i64) -> Self::Value;
    /// `from` is the operand's element type, `elem` the result's (they differ for the
    /// predicates, `is-finite`).
    fn unary(&mut self, op: UnaryOp, from: ElementType, elem: ElementType, a: Self::Value) -> Self::Value;
    fn binary(&mut self, op: BinaryOp, elem: ElementType, a: Self::Value, b: Self::Value) -> Self::Value;
    /// `elem` is the operands' element type; the result is pred.
    fn compare(&mut self, dir: CmpDir, total: bool, elem: ElementType, a: Self::Value, b: Self::Value) -> Self::Value;
    fn select(&mut self, pred: Self::Value, on_true: Self::Value, on_false: Self::Value) -> Self::Value;
    /// `min(max(x, lo), hi)`.
    fn clamp(&mut self, elem: ElementType, lo: Self::Value, x: Self::Value, hi: Self::Value) -> Self::Value;
    fn convert(&mut self, from: ElementType, to: ElementType, v: Self::Value) -> Self::Value;
    fn bitcast(&mut self, from: ElementType, to: ElementType, v: Self::Value) -> Self::Value;
    /// The current value of reduction `red`'s accumulator `i` (`Acc`, `Reduced`).
    fn accumulator(&mut self, red: u32, i: u32) -> Self::Value;

    // Kernel structure.
    /// Loops over `vars` (outermost first) around `body`.
    fn nest(&mut self, vars: &[u32], body: &mut dyn FnMut(&mut Self));
    /// Declares the accumulators, per reduction and value, set to `inits`.
    fn begin_accumulators(&mut self, inits: Vec<Vec<Self::Value>>);
    /// Replaces accumulators `(red, i)` by the values, all computed from the old ones.
    fn update_accumulators(&mut self, updates: Vec<(u32, u32, Self::Value)>);
    /// Stores `v` as output `o`'s element at the current variables.
    fn store(&mut self, o: usize, v: Self::Value);

    // Hooks, with the plain behaviour by default.
    /// Starts a region: values lowered before are not reused after (the default). A
    /// target with lexical scopes keeps them where they stay visible.
    fn new_region(&mut self) {
        self.memo().clear();
    }
    /// Called around lowering node `x` (listings: the HLO instruction it implements).
    fn enter_node(&mut self, _x: ExprId) {}
    fn leave_node(&mut self, _x: ExprId) {}
    /// A value the target has at hand for `x` already (strip-mined block results).
    fn precomputed(&mut self, _x: ExprId) -> Option<Self::Value> {
        None
    }
    /// A binary node lowered from its operand nodes rather than their values (a target's
    /// peephole, e.g. max with a constant); `None`: the plain [`Lower::binary`].
    fn binary_of_nodes(&mut self, _op: BinaryOp, _elem: ElementType, _a: ExprId, _b: ExprId) -> Option<Self::Value> {
        None
    }
    /// What node `x`'s value is known as from now on (a text target binds it to a name).
    fn bind(&mut self, _x: ExprId, v: Self::Value) -> Self::Value {
        v
    }

    // The driver.
    /// Node `x`'s value in the current region.
    fn value(&mut self, x: ExprId) -> Self::Value {
        if let Some(v) = self.memo().values.get(&x) {
            return v.clone();
        }
        self.enter_node(x);
        let v = match self.precomputed(x) {
            Some(v) => v,
            None => self.lower_node(x),
        };
        self.leave_node(x);
        let v = self.bind(x, v);
        self.memo().values.insert(x, v.clone());
        v
    }

    /// Node `x` lowered, operands first (in operand order).
    fn lower_node(&mut self, x: ExprId) -> Self::Value {
        let e = self.elemental();
        let expr = e.expr(x);
        let elem = expr.elem;
        match expr.node {
            Node::Load { input, linear } => self.load(x, input, linear),
            Node::Const(s) => self.constant(elem, s),
            Node::Index(i) => self.iota(i, elem),
            Node::InRange { idx, lo, hi } => self.in_range(idx, lo, hi),
            Node::Unary(op, a) => {
                let av = self.value(a);
                self.unary(op, e.expr(a).elem, elem, av)
            }
            Node::Binary(op, a, b) => {
                if let Some(v) = self.binary_of_nodes(op, elem, a, b) {
                    return v;
                }
                let (av, bv) = (self.value(a), self.value(b));
                self.binary(op, elem, av, bv)
            }
            Node::Compare { dir, total, a, b } => {
                let (av, bv) = (self.value(a), self.value(b));
                self.compare(dir, total, e.expr(a).elem, av, bv)
            }
            Node::Select { pred, on_true, on_false } => {
                let p = self.value(pred);
                let (t, f) = (self.value(on_true), self.value(on_false));
                self.select(p, t, f)
            }
            Node::Clamp { lo, x: v, hi } => {
                let (l, v, h) = (self.value(lo), self.value(v), self.value(hi));
                self.clamp(elem, l, v, h)
            }
            Node::Convert(a) => {
                let av = self.value(a);
                self.convert(e.expr(a).elem, elem, av)
            }
            Node::BitcastConvert(a) => {
                let av = self.value(a);
                self.bitcast(e.expr(a).elem, elem, av)
            }
            Node::Acc { red, i } | Node::Reduced { red, i } => self.accumulator(red, i),
            Node::Arg { red, i } => self.value(e.reductions[red as usize].values[i as usize]),
        }
    }

    /// Index `i` in the current region.
    fn index(&mut self, i: IdxId) -> Self::Index {
        if let Some(v) = self.memo().indices.get(&i) {
            return v.clone();
        }
        let e = self.elemental();
        let v = match *e.idx_node(i) {
            Idx::Var(k) => self.var(k),
            Idx::Const(c) => self.index_const(c),
            Idx::Add(a, b) => {
                let (a, b) = (self.index(a), self.index(b));
                self.index_add(a, b)
            }
            Idx::Mul(a, k) => {
                let a = self.index(a);
                self.index_mul(a, k)
            }
            Idx::Div(a, k) => {
                let a = self.index(a);
                self.index_div(a, k)
            }
            Idx::Rem(a, k) => {
                let a = self.index(a);
                self.index_rem(a, k)
            }
            Idx::Clamp(a, lo, hi) => {
                let a = self.index(a);
                self.index_clamp(a, lo, hi)
            }
            Idx::Data(x) => {
                let v = self.value(x);
                self.data_index(e.expr(x).elem, v)
            }
        };
        self.memo().indices.insert(i, v.clone());
        v
    }

    /// Where output `o` stores the element of the current variables: the plan's
    /// [`store_strides`] applied to them.
    fn store_index(&mut self, o: usize) -> Self::Index {
        let e = self.elemental();
        let mut linear = self.index_const(0);
        for (v, stride) in store_strides(e, &e.outputs[o]) {
            let i = self.var(v);
            let t = self.index_mul(i, stride);
            linear = self.index_add(linear, t);
        }
        linear
    }

    /// One element of the outer space, with the kept variables in scope: a loop kernel's
    /// outputs, or a reduction with its reduced loops inside, then its results.
    fn element(&mut self) {
        let e = self.elemental();
        self.new_region();
        if !e.is_reduction() {
            // Every output evaluated (every load done) before any store.
            let vals: Vec<Self::Value> = e.outputs.iter().map(|out| self.value(out.expr)).collect();
            for (o, v) in vals.into_iter().enumerate() {
                self.store(o, v);
            }
            return;
        }
        let inits = self.inits();
        self.begin_accumulators(inits);
        let reduced: Vec<u32> = (0..e.space.len() as u32).filter(|&v| e.reduced[v as usize]).collect();
        self.nest(&reduced, &mut |s| {
            s.new_region();
            s.combine();
            s.store_outputs(true);
        });
        self.new_region();
        self.store_outputs(false);
    }

    /// Every reduction's init values, per reduction.
    fn inits(&mut self) -> Vec<Vec<Self::Value>> {
        let e = self.elemental();
        e.reductions.iter().map(|r| r.inits.iter().map(|&x| self.value(x)).collect()).collect()
    }

    /// Applies every reduction's combiner at the current index.
    fn combine(&mut self) {
        let e = self.elemental();
        let mut updates = Vec::new();
        for (k, r) in e.reductions.iter().enumerate() {
            for (i, &c) in r.combiner.iter().enumerate() {
                updates.push((k as u32, i as u32, self.value(c)));
            }
        }
        self.update_accumulators(updates);
    }

    /// Stores the outputs stored inside the reduced loop (`inner`), or the others.
    fn store_outputs(&mut self, inner: bool) {
        let e = self.elemental();
        for (o, out) in e.outputs.iter().enumerate() {
            if out.inner == inner {
                let v = self.value(out.expr);
                self.store(o, v);
            }
        }
    }
}

/// Where a node is evaluated in a reduction kernel.
#[derive(Copy, Clone, PartialEq, Eq, Debug, PartialOrd, Ord)]
enum Place {
    /// Before the reduced loop.
    Before,
    /// Inside it: reads a reduced variable.
    Inside,
    /// After it: reads a reduction's result.
    After,
    /// In a combiner: reads an accumulator or a reduction input.
    Combiner,
}

/// The nodes a reduction's loop reads that do not change in it (read only the kept
/// variables), in node order: a target may evaluate them once before the loop.
pub fn loop_invariants(e: &Elemental) -> Vec<ExprId> {
    let mut place = vec![Place::Before; e.nodes.len()];
    for x in 0..e.nodes.len() {
        let node = &e.nodes[x].node;
        let mut p = match node {
            Node::Acc { .. } | Node::Arg { .. } => Place::Combiner,
            Node::Reduced { .. } => Place::After,
            Node::Load { linear: i, .. } | Node::Index(i) | Node::InRange { idx: i, .. } => index_place(e, &place, *i),
            _ => Place::Before,
        };
        for o in node.operands() {
            p = p.max(place[o.0 as usize]);
        }
        place[x] = p;
    }
    let read_in_loop = |x: usize| {
        e.nodes.iter().enumerate().any(|(y, n)| {
            matches!(place[y], Place::Inside | Place::Combiner) && n.node.operands().iter().any(|o| o.0 as usize == x)
        })
    };
    (0..e.nodes.len()).filter(|&x| place[x] == Place::Before && read_in_loop(x)).map(|x| ExprId(x as u32)).collect()
}

/// `Inside` when index `i` reads a reduced variable, else the latest place of the data
/// it reads.
fn index_place(e: &Elemental, place: &[Place], i: IdxId) -> Place {
    let mut stack = vec![i];
    let mut p = Place::Before;
    while let Some(i) = stack.pop() {
        match *e.idx_node(i) {
            Idx::Var(v) if e.reduced[v as usize] => p = p.max(Place::Inside),
            Idx::Var(_) | Idx::Const(_) => {}
            Idx::Add(a, b) => stack.extend([a, b]),
            Idx::Mul(a, _) | Idx::Div(a, _) | Idx::Rem(a, _) | Idx::Clamp(a, _, _) => stack.push(a),
            Idx::Data(x) => p = p.max(place[x.0 as usize]),
        }
    }
    p
}

#[cfg(test)]
mod tests {
    //! The driver's protocol, seen through an emitter that writes what it is asked.

    use super::*;
    use crate::kernel::{plan, KernelBody};
    use crate::passes::{fusion::FusionPass, Pass, PassLog};

    /// Values are names (`e3`, `acc0_0`), each call a line of the trace.
    struct Trace<'e> {
        e: &'e Elemental,
        memo: Memo<String, String>,
        lines: Vec<String>,
    }

    impl<'e> Lower<'e> for Trace<'e> {
        type Value = String;
        type Index = String;
        fn elemental(&self) -> &'e Elemental {
            self.e
        }
        fn memo(&mut self) -> &mut Memo<String, String> {
            &mut self.memo
        }
        fn fail(&mut self, why: String) {
            panic!("{why}")
        }
        fn var(&mut self, v: u32) -> String {
            format!("v{v}")
        }
        fn index_const(&mut self, c: i64) -> String {
            c.to_string()
        }
        fn index_add(&mut self, a: String, b: String) -> String {
            format!("({a}+{b})")
        }
        fn index_mul(&mut self, a: String, k: i64) -> String {
            format!("{a}*{k}")
        }
        fn index_div(&mut self, a: String, k: i64) -> String {
            format!("{a}/{k}")
        }
        fn index_rem(&mut self, a: String, k: i64) -> String {
            format!("{a}%{k}")
        }
        fn index_clamp(&mut self, a: String, lo: i64, hi: i64) -> String {
            format!("clamp({a},{lo},{hi})")
        }
        fn data_index(&mut self, _: ElementType, v: String) -> String {
            v
        }
        fn load(&mut self, x: ExprId, input: u32, linear: IdxId) -> String {
            let at = self.index(linear);
            self.lines.push(format!("e{} = load in{input}[{at}]", x.0));
            format!("e{}", x.0)
        }
        fn constant(&mut self, _: ElementType, s: Scalar) -> String {
            format!("{}", s.as_f64())
        }
        fn iota(&mut self, i: IdxId, _: ElementType) -> String {
            self.index(i)
        }
        fn in_range(&mut self, i: IdxId, lo: i64, hi: i64) -> String {
            format!("{lo}<={}<{hi}", self.index(i))
        }
        fn unary(&mut self, op: UnaryOp, _: ElementType, _: ElementType, a: String) -> String {
            format!("{}({a})", op.hlo_name())
        }
        fn binary(&mut self, op: BinaryOp, _: ElementType, a: String, b: String) -> String {
            format!("{}({a},{b})", op.hlo_name())
        }
        fn compare(&mut self, dir: CmpDir, _: bool, _: ElementType, a: String, b: String) -> String {
            format!("{dir:?}({a},{b})")
        }
        fn select(&mut self, p: String, t: String, f: String) -> String {
            format!("select({p},{t},{f})")
        }
        fn clamp(&mut self, _: ElementType, lo: String, x: String, hi: String) -> String {
            format!("clamp({lo},{x},{hi})")
        }
        fn convert(&mut self, _: ElementType, to: ElementType, v: String) -> String {
            format!("{to}({v})")
        }
        fn bitcast(&mut self, _: ElementType, to: ElementType, v: String) -> String {
            format!("bitcast<{to}>({v})")
        }
        fn accumulator(&mut self, red: u32, i: u32) -> String {
            format!("acc{red}_{i}")
        }
        fn nest(&mut self, vars: &[u32], body: &mut dyn FnMut(&mut Self)) {
            self.lines.push(format!("loop {vars:?} {{"));
            body(self);
            self.lines.push("}".into());
        }
        fn begin_accumulators(&mut self, inits: Vec<Vec<String>>) {
            self.lines.push(format!("accumulators {inits:?}"));
        }
        fn update_accumulators(&mut self, updates: Vec<(u32, u32, String)>) {
            let u: Vec<String> = updates.iter().map(|(k, i, v)| format!("acc{k}_{i} := {v}")).collect();
            self.lines.push(u.join("; "));
        }
        fn store(&mut self, o: usize, v: String) {
            let at = self.store_index(o);
            self.lines.push(format!("out{o}[{at}] = {v}"));
        }
    }

    fn trace(hlo: &str) -> Vec<String> {
        let mut m = crate::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"));
        FusionPass::default().run(&mut m, &mut PassLog::default());
        let p = plan(&m).unwrap();
        let k = p.kernels.iter().find(|k| matches!(k.body, KernelBody::Elemental(_))).expect("an elemental kernel");
        let KernelBody::Elemental(e) = &k.body else { unreachable!() };
        let mut t = Trace { e, memo: Memo::default(), lines: Vec::new() };
        t.element();
        t.lines
    }

    #[test]
    fn a_loop_kernel_loads_everything_before_it_stores() {
        // Two outputs of one fusion reading the same element: both loads come before
        // either store (an output may overwrite its input in place), and the shared
        // load is lowered once.
        let lines = trace(
            "HloModule m
ENTRY %main (x: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8] parameter(0)
  %n = f32[8] negate(%x)
  %e = f32[8] exponential(%x)
  ROOT %t = (f32[8], f32[8]) tuple(%n, %e)
}",
        );
        assert_eq!(lines, ["e0 = load in0[v0]", "out0[(0+v0*1)] = negate(e0)", "out1[(0+v0*1)] = exponential(e0)"]);
    }

    #[test]
    fn a_reduction_combines_from_the_old_accumulators_then_stores_its_results() {
        // A row sum and a row max of one input in a variadic reduce: one loop, one load
        // for both (`Arg` is the reduced value), both combiners computed before either
        // accumulator changes, the results stored after the loop.
        let lines = trace(
            "HloModule m
%sum_max (a: f32[], b: f32[], c: f32[], d: f32[]) -> (f32[], f32[]) {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  %s = f32[] add(%a, %c)
  %m = f32[] maximum(%b, %d)
  ROOT %t = (f32[], f32[]) tuple(%s, %m)
}
ENTRY %main (x: f32[2,4]) -> (f32[2], f32[2]) {
  %x = f32[2,4] parameter(0)
  %z = f32[] constant(0)
  %l = f32[] constant(-inf)
  ROOT %r = (f32[2], f32[2]) reduce(%x, %x, %z, %l), dimensions={1}, to_apply=%sum_max
}",
        );
        assert_eq!(
            lines,
            [
                "accumulators [[\"0\", \"-inf\"]]",
                "loop [1] {",
                "e0 = load in0[(v1+v0*4)]",
                "acc0_0 := add(acc0_0,e0); acc0_1 := maximum(acc0_1,e0)",
                "}",
                "out0[(0+v0*1)] = acc0_0",
                "out1[(0+v0*1)] = acc0_1",
            ]
        );
    }
}
