//! Reductions as a target may reorder them: which combiners are one associative and
//! commutative op, and the identity of each such op.
//!
//! A target that splits a row into several partial accumulators (SIMD lanes, unrolled
//! vectors, GPU threads) starts each partial at the op's identity and combines the
//! partials at the end, in an order of its choosing. That is exact for integer, pred
//! and max/min reductions; float add and mul are thereby reassociated, as XLA does, so
//! their results may differ from the sequential order in the last bits.

use super::elemental::{Elemental, ExprId, Node};
use crate::ir::{BinaryOp, ElementType, Scalar};

/// Whether `op` on `elem` is associative and commutative, as far as reordering a
/// reduction goes (float add and mul count: see the module doc).
pub fn is_associative(op: BinaryOp, elem: ElementType) -> bool {
    use BinaryOp::*;
    if elem.is_float() {
        matches!(op, Add | Mul | Max | Min)
    } else {
        matches!(op, Add | Mul | Max | Min | And | Or | Xor)
    }
}

/// The op of reduction `k` of `e` when it reduces one value by `acc = op(acc, x)` (either
/// operand order) with an associative `op` ([`is_associative`]) of the value's type;
/// otherwise why not.
pub fn associative_op(e: &Elemental, k: usize) -> Result<BinaryOp, String> {
    let red = &e.reductions[k];
    if red.values.len() != 1 {
        return Err("a variadic row reduction".into());
    }
    let c = e.expr(red.combiner[0]);
    let Node::Binary(op, a, b) = c.node else {
        return Err("a row reduction whose combiner is not one binary op".into());
    };
    let leaf = |x: ExprId| e.expr(x).node.clone();
    let k = k as u32;
    let acc_arg = match (leaf(a), leaf(b)) {
        (Node::Acc { red: r1, i: 0 }, Node::Arg { red: r2, i: 0 })
        | (Node::Arg { red: r2, i: 0 }, Node::Acc { red: r1, i: 0 }) => r1 == k && r2 == k,
        _ => false,
    };
    let same_type = e.expr(a).elem == c.elem && e.expr(b).elem == c.elem && e.expr(red.values[0]).elem == c.elem;
    if acc_arg && same_type && is_associative(op, c.elem) {
        Ok(op)
    } else {
        Err(format!("the row reduction's {} combiner is not recognized as associative", op.hlo_name()))
    }
}

/// The identity of `op` on `elem`: `op(identity, x) = x` for every `x` of the type,
/// bit for bit (float add's is -0, since `+0 + -0 = +0`), as a value of the type (signed
/// integers in `Scalar::S`, unsigned in `Scalar::U`). None when `op` is not associative
/// on `elem`.
pub fn identity(op: BinaryOp, elem: ElementType) -> Option<Scalar> {
    use BinaryOp::*;
    if !is_associative(op, elem) {
        return None;
    }
    if elem.is_float() {
        return Some(Scalar::F(match op {
            Add => -0.0,
            Mul => 1.0,
            Max => f64::NEG_INFINITY,
            _ => f64::INFINITY,
        }));
    }
    if elem.is_pred() {
        return Some(Scalar::Pred(matches!(op, Mul | Min | And)));
    }
    let bits = elem.bit_width();
    Some(if elem.is_signed_int() {
        Scalar::S(match op {
            Mul => 1,
            And => -1,
            Max => i64::MIN >> (64 - bits),
            Min => i64::MAX >> (64 - bits),
            _ => 0,
        })
    } else {
        let all_ones = u64::MAX >> (64 - bits);
        Scalar::U(match op {
            Mul => 1,
            And | Min => all_ones,
            _ => 0,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelBody;
    use BinaryOp::*;
    use ElementType::*;

    #[test]
    fn float_identities() {
        for elem in [F16, BF16, F32, F64] {
            let id = |op| {
                identity(op, elem).map(|s| match s {
                    Scalar::F(x) => (x, x.is_sign_negative()),
                    other => panic!("{other:?}"),
                })
            };
            assert_eq!(id(Add), Some((0.0, true)), "{elem}");
            assert_eq!(id(Mul), Some((1.0, false)), "{elem}");
            assert_eq!(id(Max), Some((f64::NEG_INFINITY, true)), "{elem}");
            assert_eq!(id(Min), Some((f64::INFINITY, false)), "{elem}");
            for op in [Sub, Div, And, Or, Xor, Pow] {
                assert_eq!(identity(op, elem), None, "{op:?} {elem}");
            }
        }
    }

    #[test]
    fn signed_integer_identities() {
        let table = [
            (S8, -128, 127),
            (S16, -32768, 32767),
            (S32, -2147483648, 2147483647),
            (S64, -9223372036854775808, 9223372036854775807),
        ];
        for (elem, min, max) in table {
            assert_eq!(identity(Add, elem), Some(Scalar::S(0)), "{elem}");
            assert_eq!(identity(Mul, elem), Some(Scalar::S(1)), "{elem}");
            assert_eq!(identity(Or, elem), Some(Scalar::S(0)), "{elem}");
            assert_eq!(identity(Xor, elem), Some(Scalar::S(0)), "{elem}");
            assert_eq!(identity(And, elem), Some(Scalar::S(-1)), "{elem}");
            assert_eq!(identity(Max, elem), Some(Scalar::S(min)), "{elem}");
            assert_eq!(identity(Min, elem), Some(Scalar::S(max)), "{elem}");
            assert_eq!(identity(Sub, elem), None, "{elem}");
        }
    }

    #[test]
    fn unsigned_integer_identities() {
        let table = [(U8, 0xff), (U16, 0xffff), (U32, 0xffff_ffff), (U64, 0xffff_ffff_ffff_ffff)];
        for (elem, all_ones) in table {
            assert_eq!(identity(Add, elem), Some(Scalar::U(0)), "{elem}");
            assert_eq!(identity(Mul, elem), Some(Scalar::U(1)), "{elem}");
            assert_eq!(identity(Or, elem), Some(Scalar::U(0)), "{elem}");
            assert_eq!(identity(Xor, elem), Some(Scalar::U(0)), "{elem}");
            assert_eq!(identity(Max, elem), Some(Scalar::U(0)), "{elem}");
            assert_eq!(identity(And, elem), Some(Scalar::U(all_ones)), "{elem}");
            assert_eq!(identity(Min, elem), Some(Scalar::U(all_ones)), "{elem}");
            assert_eq!(identity(ShiftLeft, elem), None, "{elem}");
        }
    }

    #[test]
    fn pred_identities() {
        // Add and max are or, mul and min are and.
        for (op, id) in [(Add, false), (Or, false), (Xor, false), (Max, false), (Mul, true), (And, true), (Min, true)] {
            assert_eq!(identity(op, Pred), Some(Scalar::Pred(id)), "{op:?}");
        }
        assert_eq!(identity(Sub, Pred), None);
    }

    /// The combiner verdict of the only reduction of the module's single kernel, for a
    /// reduce of `x: T[4,8]` over dimension 1 with `body` (parameters `a` then `b`,
    /// root `r`).
    fn verdict(elem: &str, body: &str) -> Result<BinaryOp, String> {
        let text = format!(
            "HloModule m
%body (a: {elem}[], b: {elem}[]) -> {elem}[] {{
  %a = {elem}[] parameter(0)
  %b = {elem}[] parameter(1)
  {body}
}}
ENTRY %main (x: {elem}[4,8], i: {elem}[]) -> {elem}[4] {{
  %x = {elem}[4,8] parameter(0)
  %i = {elem}[] parameter(1)
  ROOT %s = {elem}[4] reduce(%x, %i), dimensions={{1}}, to_apply=%body
}}
"
        );
        let m = crate::parse::parse_module(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let p = crate::kernel::plan(&m).unwrap();
        let KernelBody::Elemental(e) = &p.kernels[0].body else { panic!("{:?}", p.kernels[0].body) };
        associative_op(e, 0)
    }

    #[test]
    fn a_combiner_of_the_accumulator_and_the_element_is_recognized_in_either_order() {
        assert_eq!(verdict("f32", "ROOT %r = f32[] add(%a, %b)"), Ok(Add));
        assert_eq!(verdict("f32", "ROOT %r = f32[] maximum(%b, %a)"), Ok(Max));
        assert_eq!(verdict("s32", "ROOT %r = s32[] xor(%a, %b)"), Ok(Xor));
        assert_eq!(verdict("pred", "ROOT %r = pred[] and(%b, %a)"), Ok(And));
    }

    #[test]
    fn other_combiners_are_refused_with_the_reason() {
        let not_associative =
            |op: &str| Err(format!("the row reduction's {op} combiner is not recognized as associative"));
        assert_eq!(verdict("f32", "ROOT %r = f32[] subtract(%a, %b)"), not_associative("subtract"));
        // Not `acc op x`: the accumulator twice, or a constant.
        assert_eq!(verdict("s32", "ROOT %r = s32[] multiply(%a, %a)"), not_associative("multiply"));
        assert_eq!(verdict("f32", "%one = f32[] constant(1)\n  ROOT %r = f32[] add(%a, %one)"), not_associative("add"));
        assert_eq!(
            verdict("f32", "%s = f32[] add(%a, %b)\n  ROOT %r = f32[] negate(%s)"),
            Err("a row reduction whose combiner is not one binary op".to_string())
        );
    }

    #[test]
    fn a_variadic_reduction_is_refused() {
        let text = "HloModule m
%argmax (a: f32[], i: s32[], b: f32[], j: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %i = s32[] parameter(1)
  %b = f32[] parameter(2)
  %j = s32[] parameter(3)
  %ge = pred[] compare(%a, %b), direction=GE
  %v = f32[] select(%ge, %a, %b)
  %k = s32[] select(%ge, %i, %j)
  ROOT %t = (f32[], s32[]) tuple(%v, %k)
}
ENTRY %main (x: f32[4,8], n: s32[4,8]) -> (f32[4], s32[4]) {
  %x = f32[4,8] parameter(0)
  %n = s32[4,8] parameter(1)
  %lo = f32[] constant(-inf)
  %z = s32[] constant(0)
  ROOT %r = (f32[4], s32[4]) reduce(%x, %n, %lo, %z), dimensions={1}, to_apply=%argmax
}
";
        let m = crate::parse::parse_module(text).unwrap();
        let p = crate::kernel::plan(&m).unwrap();
        let KernelBody::Elemental(e) = &p.kernels[0].body else { panic!("{:?}", p.kernels[0].body) };
        assert_eq!(associative_op(e, 0), Err("a variadic row reduction".to_string()));
    }
}
