//! A small instruction builder so that each CHLO decomposition reads like the math.
//!
//! Every method appends one instruction to the end of the computation (operands are
//! always earlier, so `order` stays valid), names it with `Module::fresh_name`, gives it
//! the CHLO op's location and computes its result type from the operands, the way the
//! StableHLO op it stands for would. Constants are scalars broadcast to the operand's
//! shape (as XLA prints them), never full-size literals.

use crate::ir::{
    BinaryOp, CmpDir, CmpKind, CompId, Computation, ElementType, InstId, Instruction, Literal, Loc, Module, Op, Scalar,
    Shape, Type, UnaryOp,
};

pub(crate) struct ChloBuilder<'m> {
    pub module: &'m mut Module,
    pub comp: CompId,
    pub loc: Loc,
}

impl<'m> ChloBuilder<'m> {
    pub fn new(module: &'m mut Module, comp: CompId, loc: Loc) -> ChloBuilder<'m> {
        ChloBuilder { module, comp, loc }
    }

    /// The array shape of a value, or an error naming what it is instead.
    pub fn shape(&self, x: InstId) -> Result<Shape, String> {
        let comp = self.module.comp(self.comp);
        if !comp.insts.is_valid(x) {
            return Err(format!("operand {x} does not exist"));
        }
        match &comp.inst(x).ty {
            Type::Array(s) => Ok(Shape::new(s.elem, s.dims.clone())),
            other => Err(format!("expected an array operand, got {other}")),
        }
    }

    /// Shape of a value known to be an array (built by this builder).
    fn sh(&self, x: InstId) -> Shape {
        match &self.module.comp(self.comp).inst(x).ty {
            Type::Array(s) => Shape::new(s.elem, s.dims.clone()),
            // Only arrays are ever passed here: the entry points check their operands.
            _ => Shape::scalar(ElementType::Pred),
        }
    }

    pub fn elem(&self, x: InstId) -> ElementType {
        self.sh(x).elem
    }

    /// Appends an instruction and returns its id.
    pub fn push(&mut self, base: &str, op: Op, operands: Vec<InstId>, ty: Type) -> InstId {
        let name = self.module.fresh_name(base);
        let inst = Instruction { name, op, operands, ty, loc: self.loc.clone() };
        self.module.comp_mut(self.comp).push(inst)
    }

    // ---- constants -------------------------------------------------------------

    /// A constant of `shape` with every element `value` (a scalar broadcast).
    pub fn splat(&mut self, shape: &Shape, value: Scalar) -> InstId {
        let lit = Literal::scalar_from(shape.elem, value);
        let c = self.push("constant", Op::Constant(lit), vec![], Type::Array(Shape::scalar(shape.elem)));
        if shape.rank() == 0 {
            c
        } else {
            self.push("broadcast", Op::BroadcastInDim { dims: vec![] }, vec![c], Type::Array(shape.clone()))
        }
    }

    /// `getConstantLike(value, x)`: `value` converted to `x`'s element type, in `x`'s shape.
    pub fn constant_like(&mut self, x: InstId, value: f64) -> InstId {
        let s = self.sh(x);
        self.splat(&s, Scalar::F(value))
    }

    /// An integer constant like `x` (wrapped to the width of `x`'s element type).
    pub fn int_like(&mut self, x: InstId, value: i64) -> InstId {
        let s = self.sh(x);
        self.splat(&s, Scalar::S(value))
    }

    /// The largest finite value of `x`'s float type, like `x`.
    pub fn max_finite_like(&mut self, x: InstId) -> InstId {
        let v = float_max(self.elem(x));
        self.constant_like(x, v)
    }

    /// The smallest positive (subnormal) value of `x`'s float type, like `x`.
    pub fn min_subnormal_like(&mut self, x: InstId) -> InstId {
        let v = float_min_subnormal(self.elem(x));
        self.constant_like(x, v)
    }

    // ---- elementwise -----------------------------------------------------------

    pub fn unary(&mut self, op: UnaryOp, x: InstId) -> InstId {
        let ty = Type::Array(self.sh(x));
        self.push(op.hlo_name(), Op::Unary(op), vec![x], ty)
    }

    pub fn binary(&mut self, op: BinaryOp, a: InstId, b: InstId) -> InstId {
        let ty = Type::Array(self.sh(a));
        self.push(op.hlo_name(), Op::Binary(op), vec![a, b], ty)
    }

    pub fn add(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::Add, a, b)
    }
    pub fn sub(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::Sub, a, b)
    }
    pub fn mul(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::Mul, a, b)
    }
    pub fn div(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::Div, a, b)
    }
    pub fn rem(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::Rem, a, b)
    }
    pub fn pow(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::Pow, a, b)
    }
    pub fn atan2(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::Atan2, a, b)
    }
    pub fn and(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::And, a, b)
    }
    pub fn or(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::Or, a, b)
    }
    pub fn shift_right_logical(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::ShiftRightLogical, a, b)
    }
    pub fn shift_right_arithmetic(&mut self, a: InstId, b: InstId) -> InstId {
        self.binary(BinaryOp::ShiftRightArithmetic, a, b)
    }

    pub fn neg(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Neg, x)
    }
    pub fn abs(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Abs, x)
    }
    pub fn exp(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Exp, x)
    }
    pub fn expm1(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Expm1, x)
    }
    pub fn log(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Log, x)
    }
    pub fn log1p(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Log1p, x)
    }
    pub fn sqrt(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Sqrt, x)
    }
    pub fn floor(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Floor, x)
    }
    pub fn sin(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Sin, x)
    }
    pub fn cos(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Cos, x)
    }
    pub fn sign(&mut self, x: InstId) -> InstId {
        self.unary(UnaryOp::Sign, x)
    }
    pub fn is_finite(&mut self, x: InstId) -> InstId {
        let s = self.sh(x).with_elem(ElementType::Pred);
        self.push("is-finite", Op::Unary(UnaryOp::IsFinite), vec![x], Type::Array(s))
    }

    /// `compare` with the default comparison type for the element type.
    pub fn compare(&mut self, dir: CmpDir, a: InstId, b: InstId) -> InstId {
        self.compare_kind(dir, None, a, b)
    }

    pub fn compare_kind(&mut self, dir: CmpDir, kind: Option<CmpKind>, a: InstId, b: InstId) -> InstId {
        let s = self.sh(a).with_elem(ElementType::Pred);
        self.push("compare", Op::Compare { dir, kind }, vec![a, b], Type::Array(s))
    }

    pub fn lt(&mut self, a: InstId, b: InstId) -> InstId {
        self.compare(CmpDir::Lt, a, b)
    }
    pub fn le(&mut self, a: InstId, b: InstId) -> InstId {
        self.compare(CmpDir::Le, a, b)
    }
    pub fn gt(&mut self, a: InstId, b: InstId) -> InstId {
        self.compare(CmpDir::Gt, a, b)
    }
    pub fn ge(&mut self, a: InstId, b: InstId) -> InstId {
        self.compare(CmpDir::Ge, a, b)
    }
    pub fn eq(&mut self, a: InstId, b: InstId) -> InstId {
        self.compare(CmpDir::Eq, a, b)
    }
    pub fn ne(&mut self, a: InstId, b: InstId) -> InstId {
        self.compare(CmpDir::Ne, a, b)
    }

    pub fn select(&mut self, pred: InstId, on_true: InstId, on_false: InstId) -> InstId {
        let ty = Type::Array(self.sh(on_true));
        self.push("select", Op::Select, vec![pred, on_true, on_false], ty)
    }

    pub fn convert(&mut self, x: InstId, elem: ElementType) -> InstId {
        let s = self.sh(x).with_elem(elem);
        self.push("convert", Op::Convert, vec![x], Type::Array(s))
    }

    pub fn bitcast_convert(&mut self, x: InstId, elem: ElementType) -> InstId {
        let s = self.sh(x).with_elem(elem);
        self.push("bitcast-convert", Op::BitcastConvert, vec![x], Type::Array(s))
    }

    /// Horner evaluation `((c0 * x + c1) * x + c2) ...`, the legalization's
    /// `materializePolynomialApproximation`.
    pub fn polynomial(&mut self, x: InstId, coeffs: &[f64]) -> InstId {
        let Some((&first, rest)) = coeffs.split_first() else {
            return self.constant_like(x, 0.0);
        };
        let mut poly = self.constant_like(x, first);
        for &c in rest {
            poly = self.mul(poly, x);
            let c = self.constant_like(x, c);
            poly = self.add(poly, c);
        }
        poly
    }

    /// Runs `f` in at least f32: f16/bf16 operands are converted to f32 first and the
    /// result converted back (the legalization's `materializeWithUpcast`).
    pub fn with_upcast(
        &mut self,
        args: &[InstId],
        f: impl FnOnce(&mut Self, &[InstId]) -> Result<InstId, String>,
    ) -> Result<InstId, String> {
        let elem = self.elem(args[0]);
        if matches!(elem, ElementType::F16 | ElementType::BF16) {
            let wide: Vec<InstId> = args.iter().map(|&a| self.convert(a, ElementType::F32)).collect();
            let r = f(self, &wide)?;
            Ok(self.convert(r, elem))
        } else {
            f(self, args)
        }
    }

    // ---- shapes ----------------------------------------------------------------

    pub fn broadcast_in_dim(&mut self, x: InstId, dims: Vec<i64>, shape: Shape) -> InstId {
        self.push("broadcast", Op::BroadcastInDim { dims }, vec![x], Type::Array(shape))
    }

    pub fn reshape(&mut self, x: InstId, dims: Vec<i64>) -> InstId {
        let s = Shape::new(self.elem(x), dims);
        self.push("reshape", Op::Reshape, vec![x], Type::Array(s))
    }

    pub fn iota(&mut self, shape: Shape, dim: i64) -> InstId {
        self.push("iota", Op::Iota { dim }, vec![], Type::Array(shape))
    }

    /// A unit-stride slice `[start, limit)`.
    pub fn slice(&mut self, x: InstId, start: Vec<i64>, limit: Vec<i64>) -> InstId {
        let dims: Vec<i64> = start.iter().zip(&limit).map(|(s, l)| l - s).collect();
        let s = Shape::new(self.elem(x), dims);
        let stride = vec![1; start.len()];
        self.push("slice", Op::Slice { start, limit, stride }, vec![x], Type::Array(s))
    }

    pub fn get_tuple_element(&mut self, x: InstId, index: u32, ty: Type) -> InstId {
        self.push("get-tuple-element", Op::GetTupleElement { index }, vec![x], ty)
    }

    /// A new scalar computation `(p0, q0, p1, q1, ...) -> pred` comparing `p0` with `q0`
    /// (the sort comparator that `createSortOp` builds).
    pub fn sort_comparator(&mut self, elems: &[ElementType], dir: CmpDir, kind: Option<CmpKind>) -> CompId {
        let name = self.module.fresh_name("comparator");
        let mut comp = Computation::new(name);
        for (i, &e) in elems.iter().enumerate() {
            for side in ["lhs", "rhs"] {
                let pname = self.module.fresh_name(&format!("{side}{i}"));
                comp.push_param(pname, Type::Array(Shape::scalar(e)), self.loc.clone());
            }
        }
        let (a, b) = (comp.params[0], comp.params[1]);
        let cname = self.module.fresh_name("compare");
        comp.root = comp.push(Instruction {
            name: cname,
            op: Op::Compare { dir, kind },
            operands: vec![a, b],
            ty: Type::Array(Shape::scalar(ElementType::Pred)),
            loc: self.loc.clone(),
        });
        self.module.add_computation(comp)
    }
}

/// Largest finite value of a float type (0 for others).
pub(crate) fn float_max(elem: ElementType) -> f64 {
    match elem {
        ElementType::F16 => 65504.0,
        ElementType::BF16 => (2.0 - 2f64.powi(-7)) * 2f64.powi(127),
        ElementType::F32 => f32::MAX as f64,
        ElementType::F64 => f64::MAX,
        _ => 0.0,
    }
}

/// Smallest positive subnormal value of a float type.
pub(crate) fn float_min_subnormal(elem: ElementType) -> f64 {
    match elem {
        ElementType::F16 => 2f64.powi(-24),
        ElementType::BF16 => 2f64.powi(-133),
        ElementType::F32 => 2f64.powi(-149),
        ElementType::F64 => f64::from_bits(1),
        _ => 0.0,
    }
}
