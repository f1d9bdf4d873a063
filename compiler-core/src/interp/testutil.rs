//! Test helpers for the interpreter: build small modules directly in Rust and run them.
//!
//! Interpreter tests must not depend on the parsers (written in parallel), so each test
//! builds its module here: `run_op` for a single instruction over parameters, and
//! `TestModule` when the op calls sub-computations (reduce bodies, comparators, loops).
//!
//! ```ignore
//! let out = run_op(Op::Binary(BinaryOp::Add), f32s(&[2], &[..]).ty(), &[a.into(), b.into()]);
//! let mut m = TestModule::new();
//! let body = m.binary_body(BinaryOp::Add, ElementType::F32);
//! let out = m.run_op(Op::Reduce { dims: vec![0], body }, ty, &args);
//! ```

use super::InterpError;
use crate::ir::{
    BinaryOp, CompId, Computation, ElementType, InstId, Instruction, Literal, Loc, Module, Op, Shape, Type, Value,
};

/// Builds one computation: parameters, then instructions, then `finish(root)`.
pub(crate) struct CompBuilder {
    comp: Computation,
    next: usize,
}

impl CompBuilder {
    pub fn new(name: &str) -> CompBuilder {
        CompBuilder { comp: Computation::new(name), next: 0 }
    }

    fn fresh(&mut self, base: &str) -> String {
        self.next += 1;
        format!("{}.{base}.{}", self.comp.name, self.next)
    }

    /// Adds the next parameter.
    pub fn param(&mut self, ty: Type) -> InstId {
        let name = self.fresh("p");
        self.comp.push_param(name, ty, Loc::default())
    }

    /// Adds an instruction.
    pub fn op(&mut self, op: Op, operands: &[InstId], ty: Type) -> InstId {
        let name = self.fresh(op.hlo_name());
        self.comp.push(Instruction { name, op, operands: operands.to_vec(), ty, loc: Loc::default() })
    }

    pub fn constant(&mut self, lit: Literal) -> InstId {
        let ty = Type::Array(lit.shape.clone());
        self.op(Op::Constant(lit), &[], ty)
    }

    /// The type of an instruction already added.
    pub fn ty(&self, id: InstId) -> Type {
        self.comp.inst(id).ty.clone()
    }

    /// A tuple of `items` (for roots with several results).
    pub fn tuple(&mut self, items: &[InstId]) -> InstId {
        let ty = Type::Tuple(items.iter().map(|&i| self.ty(i)).collect());
        self.op(Op::Tuple, items, ty)
    }

    pub fn finish(mut self, root: InstId) -> Computation {
        self.comp.root = root;
        self.comp
    }
}

/// A module under construction: sub-computations first, then the entry.
pub(crate) struct TestModule {
    pub module: Module,
}

impl Default for TestModule {
    fn default() -> Self {
        TestModule::new()
    }
}

impl TestModule {
    pub fn new() -> TestModule {
        TestModule { module: Module::new("test") }
    }

    /// Adds a computation with parameters of `params`; `f` gets the builder and the
    /// parameter ids and returns the root.
    pub fn comp(
        &mut self,
        name: &str,
        params: &[Type],
        f: impl FnOnce(&mut CompBuilder, &[InstId]) -> InstId,
    ) -> CompId {
        let mut b = CompBuilder::new(name);
        let ps: Vec<InstId> = params.iter().map(|t| b.param(t.clone())).collect();
        let root = f(&mut b, &ps);
        self.module.add_computation(b.finish(root))
    }

    /// A scalar computation `(a, b) -> a op b`: the usual reduction body.
    pub fn binary_body(&mut self, op: BinaryOp, elem: ElementType) -> CompId {
        let t = Type::Array(Shape::scalar(elem));
        self.comp(op.hlo_name(), &[t.clone(), t.clone()], |b, p| b.op(Op::Binary(op), &[p[0], p[1]], t))
    }

    /// Sets the entry computation (built like `comp`) and returns the finished module.
    pub fn finish_with_entry(
        mut self,
        params: &[Type],
        f: impl FnOnce(&mut CompBuilder, &[InstId]) -> InstId,
    ) -> Module {
        let entry = self.comp("main", params, f);
        self.module.entry = entry;
        self.module
    }

    /// Runs one instruction `op` (result type `ty`) over parameters bound to `args`.
    pub fn run_op(self, op: Op, ty: Type, args: &[Value]) -> Result<Value, InterpError> {
        let params: Vec<Type> = args.iter().map(Value::ty).collect();
        let module = self.finish_with_entry(&params, |b, p| b.op(op, p, ty));
        super::run(&module, args)
    }

    /// [`TestModule::run_op`] with the resource limits lifted ([`crate::limits`]), to
    /// reach the interpreter's own range checks: the defence behind the limits.
    pub fn run_op_unlimited(self, op: Op, ty: Type, args: &[Value]) -> Result<Value, InterpError> {
        let params: Vec<Type> = args.iter().map(Value::ty).collect();
        let module = self.finish_with_entry(&params, |b, p| b.op(op, p, ty));
        let mut interp = super::Interpreter::new(&module);
        interp.limits = crate::limits::Limits {
            max_elements: u64::MAX,
            max_total_bytes: u64::MAX,
            max_instructions: u64::MAX,
            max_rank: usize::MAX,
        };
        interp.run(args)
    }
}

/// Runs one instruction `op` (result type `ty`) over parameters bound to `args`.
pub(crate) fn run_op(op: Op, ty: Type, args: &[Value]) -> Result<Value, InterpError> {
    TestModule::new().run_op(op, ty, args)
}

/// [`run_op`] with the resource limits lifted ([`TestModule::run_op_unlimited`]).
pub(crate) fn run_op_unlimited(op: Op, ty: Type, args: &[Value]) -> Result<Value, InterpError> {
    TestModule::new().run_op_unlimited(op, ty, args)
}

/// Like `run_op`, but unwraps a single array result (panics with the error otherwise:
/// tests only).
pub(crate) fn run_op_array(op: Op, ty: Type, args: &[Value]) -> Literal {
    match run_op(op, ty, args) {
        Ok(Value::Array(l)) => l,
        other => panic!("expected an array result, got {other:?}"),
    }
}

/// An array type.
pub(crate) fn arr(elem: ElementType, dims: &[i64]) -> Type {
    Type::array(elem, dims)
}

/// A literal of `elem` from f64 values (converted as `convert` would).
pub(crate) fn lit(elem: ElementType, dims: &[i64], values: &[f64]) -> Literal {
    Literal::from_f64s(Shape::new(elem, dims), values)
}

/// A literal of `elem` from i64 values (wrapped to the width).
pub(crate) fn ints(elem: ElementType, dims: &[i64], values: &[i64]) -> Literal {
    Literal::from_i64s(Shape::new(elem, dims), values)
}

/// A literal of unsigned values (any u64, unlike `ints`).
pub(crate) fn uints(elem: ElementType, dims: &[i64], values: &[u64]) -> Literal {
    let values: Vec<u64> = values.iter().map(|&v| crate::ir::literal::wrap_unsigned(elem, v)).collect();
    Literal::new(Shape::new(elem, dims), crate::ir::Data::U(values))
}

/// A pred literal.
pub(crate) fn preds(dims: &[i64], values: &[bool]) -> Literal {
    Literal::new(Shape::new(ElementType::Pred, dims), crate::ir::Data::Pred(values.to_vec()))
}

/// An f32 literal.
pub(crate) fn f32s(dims: &[i64], values: &[f64]) -> Literal {
    lit(ElementType::F32, dims, values)
}

/// Asserts two float slices are equal bit for bit in f64 (NaN equals NaN, -0 != +0).
pub(crate) fn assert_bits_eq(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
        assert!(same, "element {i}: got {g:?}, want {w:?} (all: {got:?})");
    }
}
