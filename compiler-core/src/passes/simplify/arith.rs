//! Arithmetic and logical identities: neutral and absorbing constants, ops of a value
//! with itself, double negation, selects, and the canonical form (constants on the right).
//!
//! Each rule is exact for every input, NaN, infinities and signed zeros included; where a
//! textbook identity is not (`x * 0`, `x - x`, `x + 0.0` for floats) the rule is limited
//! to the types where it is, and a test checks that it does not fire on the others.

use super::{Action, Ctx};
use crate::ir::literal::width_mask;
use crate::ir::{BinaryOp, CmpDir, ElementType, InstId, Op, Scalar, Shape, Type, UnaryOp};

fn binary(cx: &Ctx, id: InstId) -> Option<BinaryOp> {
    match cx.op(id) {
        Op::Binary(b) if cx.args(id).len() == 2 => Some(*b),
        _ => None,
    }
}

fn unary(cx: &Ctx, id: InstId) -> Option<UnaryOp> {
    match cx.op(id) {
        Op::Unary(u) if cx.args(id).len() == 1 => Some(*u),
        _ => None,
    }
}

fn elem(cx: &Ctx, id: InstId) -> Option<ElementType> {
    cx.shape(id).map(|s| s.elem)
}

fn is_int_or_pred(e: ElementType) -> bool {
    e.is_int() || e.is_pred()
}

/// A constant, or a broadcast of one (what the canonical form moves to the right).
fn is_constant(cx: &Ctx, id: InstId) -> bool {
    match cx.op(id) {
        Op::Constant(_) => true,
        Op::BroadcastInDim { .. } => is_constant(cx, cx.arg(id, 0)),
        _ => false,
    }
}

/// For `x op c` (or `c op x` when `op` commutes) with `c` a splat: `(x, c, value)`.
fn const_operand(cx: &Ctx, id: InstId, op: BinaryOp) -> Option<(InstId, InstId, Scalar)> {
    let (a, b) = (cx.arg(id, 0), cx.arg(id, 1));
    if let Some(s) = cx.splat(b) {
        return Some((a, b, s));
    }
    if op.is_commutative() {
        if let Some(s) = cx.splat(a) {
            return Some((b, a, s));
        }
    }
    None
}

fn is_zero(s: Scalar) -> bool {
    match s {
        Scalar::Pred(b) => !b,
        Scalar::S(v) => v == 0,
        Scalar::U(v) => v == 0,
        Scalar::F(v) => v == 0.0,
    }
}

fn is_one(s: Scalar) -> bool {
    match s {
        Scalar::Pred(b) => b,
        Scalar::S(v) => v == 1,
        Scalar::U(v) => v == 1,
        Scalar::F(v) => v == 1.0,
    }
}

fn is_all_ones(s: Scalar, e: ElementType) -> bool {
    match s {
        Scalar::Pred(b) => b,
        Scalar::S(v) => v == -1,
        Scalar::U(v) => v == width_mask(e),
        Scalar::F(_) => false,
    }
}

/// The smallest value of the type (`-inf` for floats): the identity of `max`.
fn is_lowest(s: Scalar, e: ElementType) -> bool {
    match s {
        Scalar::Pred(b) => !b,
        Scalar::S(v) => v == if e.bit_width() >= 64 { i64::MIN } else { -(1i64 << (e.bit_width() - 1)) },
        Scalar::U(v) => v == 0,
        Scalar::F(v) => v == f64::NEG_INFINITY,
    }
}

/// The largest value of the type (`+inf` for floats): the identity of `min`.
fn is_highest(s: Scalar, e: ElementType) -> bool {
    match s {
        Scalar::Pred(b) => b,
        Scalar::S(v) => v as u64 == width_mask(e) >> 1,
        Scalar::U(v) => v == width_mask(e),
        Scalar::F(v) => v == f64::INFINITY,
    }
}

/// The identity of `add`: `-0.0` for floats (`-0.0 + -0.0` is `-0.0`, while
/// `-0.0 + 0.0` is `+0.0`), zero (false) otherwise.
pub(super) fn is_add_identity(s: Scalar) -> bool {
    match s {
        Scalar::F(v) => v == 0.0 && v.is_sign_negative(),
        s => is_zero(s),
    }
}

/// Identity values of reduction bodies, shared with `reduce.rs`.
pub(super) fn is_identity_of(op: BinaryOp, s: Scalar, e: ElementType) -> bool {
    match op {
        BinaryOp::Add | BinaryOp::Xor => is_add_identity(s),
        BinaryOp::Mul => is_one(s),
        BinaryOp::Max => is_lowest(s, e),
        BinaryOp::Min => is_highest(s, e),
        BinaryOp::And => is_all_ones(s, e),
        BinaryOp::Or => is_zero(s),
        _ => false,
    }
}

/// `x` if it has the type of `id`, else a splat of `value` in its place.
fn use_or_splat(cx: &mut Ctx, id: InstId, c: InstId, value: Scalar) -> Option<Action> {
    if cx.inst(c).ty == cx.inst(id).ty {
        Some(Action::Use(c))
    } else {
        cx.splat_action(id, value)
    }
}

/// `c op x -> x op c` for commutative `op` and a constant `c` (canonical form).
pub(super) fn constant_to_rhs(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let op = binary(cx, id)?;
    let (a, b) = (cx.arg(id, 0), cx.arg(id, 1));
    (op.is_commutative() && is_constant(cx, a) && !is_constant(cx, b))
        .then(|| Action::Rewrite { op: Op::Binary(op), operands: vec![b, a] })
}

/// `compare(c, x, LT) -> compare(x, c, GT)` (directions mirrored; exact for NaN too,
/// since both sides are false for it).
pub(super) fn compare_constant_to_rhs(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Compare { dir, kind } = cx.op(id) else { return None };
    let (dir, kind) = (*dir, *kind);
    let (a, b) = (cx.arg(id, 0), cx.arg(id, 1));
    if !is_constant(cx, a) || is_constant(cx, b) {
        return None;
    }
    let dir = match dir {
        CmpDir::Lt => CmpDir::Gt,
        CmpDir::Gt => CmpDir::Lt,
        CmpDir::Le => CmpDir::Ge,
        CmpDir::Ge => CmpDir::Le,
        d => d,
    };
    Some(Action::Rewrite { op: Op::Compare { dir, kind }, operands: vec![b, a] })
}

/// `x + 0 -> x` for integers and pred; `x + (-0.0) -> x` for floats (`x + 0.0` is not
/// `x` when `x` is `-0.0`).
pub(super) fn add_zero(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Add {
        return None;
    }
    let (x, _, s) = const_operand(cx, id, BinaryOp::Add)?;
    is_add_identity(s).then_some(Action::Use(x))
}

/// `x - 0 -> x` for integers; `x - (+0.0) -> x` for floats (`x - (-0.0)` is `x + 0.0`).
pub(super) fn sub_zero(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Sub {
        return None;
    }
    let s = cx.splat(cx.arg(id, 1))?;
    let ok = match s {
        Scalar::F(v) => v == 0.0 && v.is_sign_positive(),
        s => is_zero(s),
    };
    ok.then(|| Action::Use(cx.arg(id, 0)))
}

/// `x * 1 -> x` (exact for every type; for pred, `x and true`).
pub(super) fn mul_one(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Mul {
        return None;
    }
    let (x, _, s) = const_operand(cx, id, BinaryOp::Mul)?;
    is_one(s).then_some(Action::Use(x))
}

/// `x / 1 -> x` (integers and floats).
pub(super) fn div_one(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Div || elem(cx, id)?.is_pred() {
        return None;
    }
    let s = cx.splat(cx.arg(id, 1))?;
    is_one(s).then(|| Action::Use(cx.arg(id, 0)))
}

/// `x * 0 -> 0` for integers and pred only (for floats `NaN * 0`, `inf * 0` are NaN and
/// `-1 * 0` is `-0`).
pub(super) fn mul_zero_int(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Mul || !is_int_or_pred(elem(cx, id)?) {
        return None;
    }
    let (_, c, s) = const_operand(cx, id, BinaryOp::Mul)?;
    if !is_zero(s) {
        return None;
    }
    use_or_splat(cx, id, c, s)
}

/// `x - x -> 0` for integers only (for floats `inf - inf` and `NaN - NaN` are NaN).
pub(super) fn sub_self_int(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Sub || !elem(cx, id)?.is_int() || cx.arg(id, 0) != cx.arg(id, 1) {
        return None;
    }
    cx.splat_action(id, Scalar::S(0))
}

/// `x ^ x -> 0` (integers and pred).
pub(super) fn xor_self(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Xor || !is_int_or_pred(elem(cx, id)?) || cx.arg(id, 0) != cx.arg(id, 1) {
        return None;
    }
    cx.splat_action(id, Scalar::S(0))
}

/// `x & -1 -> x` (all bits set; `x and true` for pred).
pub(super) fn and_all_ones(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::And {
        return None;
    }
    let e = elem(cx, id)?;
    let (x, _, s) = const_operand(cx, id, BinaryOp::And)?;
    is_all_ones(s, e).then_some(Action::Use(x))
}

/// `x & 0 -> 0` (integers and pred).
pub(super) fn and_zero(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::And || !is_int_or_pred(elem(cx, id)?) {
        return None;
    }
    let (_, c, s) = const_operand(cx, id, BinaryOp::And)?;
    if !is_zero(s) {
        return None;
    }
    use_or_splat(cx, id, c, s)
}

/// `x | 0 -> x` (integers and pred).
pub(super) fn or_zero(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Or || !is_int_or_pred(elem(cx, id)?) {
        return None;
    }
    let (x, _, s) = const_operand(cx, id, BinaryOp::Or)?;
    is_zero(s).then_some(Action::Use(x))
}

/// `x | -1 -> -1` (all bits set; `x or true -> true` for pred).
pub(super) fn or_all_ones(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Or {
        return None;
    }
    let e = elem(cx, id)?;
    let (_, c, s) = const_operand(cx, id, BinaryOp::Or)?;
    if !is_all_ones(s, e) {
        return None;
    }
    use_or_splat(cx, id, c, s)
}

/// `x ^ 0 -> x` (integers and pred).
pub(super) fn xor_zero(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Xor || !is_int_or_pred(elem(cx, id)?) {
        return None;
    }
    let (x, _, s) = const_operand(cx, id, BinaryOp::Xor)?;
    is_zero(s).then_some(Action::Use(x))
}

/// `x << 0 -> x`, `x >> 0 -> x` (arithmetic and logical shifts).
pub(super) fn shift_by_zero(cx: &mut Ctx, id: InstId) -> Option<Action> {
    use BinaryOp::*;
    if !matches!(binary(cx, id)?, ShiftLeft | ShiftRightArithmetic | ShiftRightLogical) {
        return None;
    }
    let s = cx.splat(cx.arg(id, 1))?;
    is_zero(s).then(|| Action::Use(cx.arg(id, 0)))
}

/// `max(x, lowest) -> x` (`-inf` for floats: `max` propagates NaN, and `max(-0, -inf)`
/// is `-0`; the smallest integer for integers). `max(x, +inf) -> +inf` is NOT applied:
/// `max(NaN, +inf)` is NaN.
pub(super) fn max_identity(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Max {
        return None;
    }
    let e = elem(cx, id)?;
    let (x, _, s) = const_operand(cx, id, BinaryOp::Max)?;
    is_lowest(s, e).then_some(Action::Use(x))
}

/// `min(x, highest) -> x` (`+inf` for floats, the largest integer for integers).
pub(super) fn min_identity(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Min {
        return None;
    }
    let e = elem(cx, id)?;
    let (x, _, s) = const_operand(cx, id, BinaryOp::Min)?;
    is_highest(s, e).then_some(Action::Use(x))
}

/// `max(x, x) -> x`, `min(x, x) -> x`, `x & x -> x`, `x | x -> x` (exact for NaN and
/// signed zeros too: both operands are the same value).
pub(super) fn idempotent_self(cx: &mut Ctx, id: InstId) -> Option<Action> {
    use BinaryOp::*;
    if !matches!(binary(cx, id)?, Max | Min | And | Or) || cx.arg(id, 0) != cx.arg(id, 1) {
        return None;
    }
    Some(Action::Use(cx.arg(id, 0)))
}

/// `x + neg(y) -> x - y` (IEEE defines `x - y` as `x + (-y)`; integers wrap alike).
pub(super) fn add_negate(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Add || elem(cx, id)?.is_pred() {
        return None;
    }
    let (a, b) = (cx.arg(id, 0), cx.arg(id, 1));
    let (x, n) = if unary(cx, b) == Some(UnaryOp::Neg) {
        (a, b)
    } else if unary(cx, a) == Some(UnaryOp::Neg) {
        (b, a)
    } else {
        return None;
    };
    Some(Action::Rewrite { op: Op::Binary(BinaryOp::Sub), operands: vec![x, cx.arg(n, 0)] })
}

/// `x - neg(y) -> x + y`.
pub(super) fn sub_negate(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if binary(cx, id)? != BinaryOp::Sub || elem(cx, id)?.is_pred() {
        return None;
    }
    let n = cx.arg(id, 1);
    (unary(cx, n) == Some(UnaryOp::Neg))
        .then(|| Action::Rewrite { op: Op::Binary(BinaryOp::Add), operands: vec![cx.arg(id, 0), cx.arg(n, 0)] })
}

/// `select(true, a, b) -> a`, `select(false, a, b) -> b` (a constant or splat selector).
pub(super) fn select_const_pred(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Select) || cx.args(id).len() != 3 {
        return None;
    }
    match cx.splat(cx.arg(id, 0))? {
        Scalar::Pred(true) => Some(Action::Use(cx.arg(id, 1))),
        Scalar::Pred(false) => Some(Action::Use(cx.arg(id, 2))),
        _ => None,
    }
}

/// `select(p, x, x) -> x`.
pub(super) fn select_same(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Select) || cx.args(id).len() != 3 || cx.arg(id, 1) != cx.arg(id, 2) {
        return None;
    }
    Some(Action::Use(cx.arg(id, 1)))
}

/// `select(not(p), a, b) -> select(p, b, a)`.
pub(super) fn select_not_pred(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if !matches!(cx.op(id), Op::Select) || cx.args(id).len() != 3 {
        return None;
    }
    let p = cx.arg(id, 0);
    if unary(cx, p) != Some(UnaryOp::Not) {
        return None;
    }
    Some(Action::Rewrite { op: Op::Select, operands: vec![cx.arg(p, 0), cx.arg(id, 2), cx.arg(id, 1)] })
}

/// Shared shape of `f(f(x)) -> x`.
fn involution(cx: &Ctx, id: InstId, u: UnaryOp) -> Option<Action> {
    if unary(cx, id)? != u {
        return None;
    }
    let inner = cx.arg(id, 0);
    (unary(cx, inner) == Some(u)).then(|| Action::Use(cx.arg(inner, 0)))
}

/// `neg(neg(x)) -> x` (exact: negation flips the sign bit; integers wrap back).
pub(super) fn neg_neg(cx: &mut Ctx, id: InstId) -> Option<Action> {
    involution(cx, id, UnaryOp::Neg)
}

/// `not(not(x)) -> x`.
pub(super) fn not_not(cx: &mut Ctx, id: InstId) -> Option<Action> {
    involution(cx, id, UnaryOp::Not)
}

/// `abs(abs(x)) -> abs(x)` (also for the smallest integer, whose abs is itself).
pub(super) fn abs_abs(cx: &mut Ctx, id: InstId) -> Option<Action> {
    if unary(cx, id)? != UnaryOp::Abs {
        return None;
    }
    let inner = cx.arg(id, 0);
    (unary(cx, inner) == Some(UnaryOp::Abs)).then_some(Action::Use(inner))
}

/// `abs(neg(x)) -> abs(x)` for signed integers and floats (not unsigned: there `abs` is
/// the identity and `neg` wraps).
pub(super) fn abs_of_negate(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let e = elem(cx, id)?;
    if unary(cx, id)? != UnaryOp::Abs || !(e.is_signed_int() || e.is_float()) {
        return None;
    }
    let inner = cx.arg(id, 0);
    (unary(cx, inner) == Some(UnaryOp::Neg))
        .then(|| Action::Rewrite { op: Op::Unary(UnaryOp::Abs), operands: vec![cx.arg(inner, 0)] })
}

/// `compare(x, x, EQ|LE|GE) -> true`, `compare(x, x, NE|LT|GT) -> false` for integers
/// and pred (for floats, NaN compares unequal to itself).
pub(super) fn compare_self_int(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Compare { dir, .. } = *cx.op(id) else { return None };
    let x = cx.arg(id, 0);
    if x != cx.arg(id, 1) || !is_int_or_pred(elem(cx, x)?) {
        return None;
    }
    let value = matches!(dir, CmpDir::Eq | CmpDir::Le | CmpDir::Ge);
    cx.splat_action(id, Scalar::Pred(value))
}

/// `op(broadcast(a), broadcast(b)) -> broadcast(op(a, b))` for elementwise `op` and
/// scalar `a`, `b` (scalar operands of select/clamp may stay scalars): one scalar op
/// instead of one per element, which constant folding can then fold.
pub(super) fn elementwise_of_scalar_broadcasts(cx: &mut Ctx, id: InstId) -> Option<Action> {
    // Matched before cloned: this runs on every instruction (constants included).
    let elementwise = matches!(
        cx.op(id),
        Op::Unary(_)
            | Op::Binary(_)
            | Op::Compare { .. }
            | Op::Select
            | Op::Clamp
            | Op::Convert
            | Op::ReducePrecision { .. }
    );
    let shape = cx.shape(id)?;
    if !elementwise || shape.rank() == 0 {
        return None;
    }
    let out_elem = shape.elem;
    let mut scalars = Vec::new();
    for &a in cx.args(id) {
        let s = cx.shape(a)?;
        if s.rank() == 0 {
            scalars.push(a);
            continue;
        }
        match cx.op(a) {
            Op::BroadcastInDim { .. } if cx.shape(cx.arg(a, 0))?.rank() == 0 => scalars.push(cx.arg(a, 0)),
            _ => return None,
        }
    }
    let ty = Type::Array(Shape::scalar(out_elem));
    let op = cx.op(id).clone();
    let base = op.hlo_name();
    let s = cx.insert_before(id, base, op, scalars, ty);
    Some(Action::Rewrite { op: Op::BroadcastInDim { dims: vec![] }, operands: vec![s] })
}
