//! Which kernels get SIMD code, and in which shape: the vectorization plan of one
//! elemental kernel, decided before any code is emitted, shared by the targets with
//! 128-bit vectors (the CPU target's Cranelift code, WebAssembly's SIMD128), each of
//! which may still refuse a plan's op it has no vector form of (and emit the kernel
//! scalar).
//!
//! Cranelift's x86-64 backend has 128-bit vectors, so a kernel whose non-pred element
//! types all have one byte width W runs `16 / W` lanes per step (f32/s32: 4, f64/s64: 2,
//! s8/u8: 16). A pred is then a lane mask of that width (all ones = true), the form
//! vector compares produce and `bitselect` consumes. Always along the innermost loop
//! variable, with a scalar tail for the remainder:
//! - **Loop**: the innermost variable is the minor dimension of every output; each step
//!   computes `lanes` consecutive elements, unrolled four times (twice when the loop
//!   is shorter than four vectors) for instruction-level parallelism: the
//!   transcendentals' polynomial chains are latency-bound, and independent vectors in
//!   one step let the out-of-order core overlap them.
//! - **Row reduction** (the innermost variable is reduced): every reduction must be one
//!   value combined by an associative and commutative op (add, mul, max, min, and, or,
//!   xor; recognized, with its identity, by [`crate::kernel::reduction`]). Four vector
//!   accumulators (two in rows shorter than four vectors), one per vector of the
//!   unrolled step, start at the op's identity and are combined
//!   horizontally into the scalar accumulator (which started at the init) after the
//!   loop. Float add and mul are thereby reassociated, as XLA:CPU
//!   does: float sums are no longer bit-identical to the interpreter's sequential order
//!   (tests compare them with a tolerance); max/min and integer ops stay exact.
//! - **Column reduction** (the innermost variable is kept): each lane is a different
//!   output element, so any vectorizable combiner (argmax too) runs in exactly the
//!   interpreter's order.
//!
//! A load whose linear index is `innermost variable + invariant` (as
//! [`crate::kernel::index`] decides) is one vector load; an invariant one is a scalar
//! load and a splat; anything else (transposed, strided, reversed, clamped reads)
//! gathers its lanes with scalar loads. Iota and range tests
//! are also built lane by lane. Ops without a vector lowering keep the kernel scalar:
//! transcendentals (they call the f64 helper), f16/bf16 (their conversions are scalar code), integer
//! division and shifts (per-lane shift amounts), popcnt/clz, byte multiplies, f64 to
//! 64-bit integer and width-changing converts.

use crate::ir::{BinaryOp, ElementType, UnaryOp};
use crate::kernel::elemental::{Elemental, ExprId, Idx, Node};
use crate::kernel::reduction;
use serde::{Deserialize, Serialize};

/// How a kernel is vectorized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum VecKind {
    Loop,
    /// One associative op per reduction, in reduction order.
    Row(Vec<BinaryOp>),
    Column,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VecPlan {
    pub kind: VecKind,
    /// Lanes per vector.
    pub lanes: u32,
    /// Vectors per loop step.
    pub unroll: u32,
    /// The byte width of every lane (pred masks included).
    pub width: u32,
    /// The vectorized (innermost) variable.
    pub var: u32,
}

/// The vectorization plan of `e`, or why it stays scalar.
pub fn plan(e: &Elemental) -> Result<VecPlan, String> {
    let var = e.space.len().checked_sub(1).ok_or("a rank-0 kernel")? as u32;
    // A data-dependent index (gather, dynamic slice) reads a value per lane: scalar.
    if e.idx.iter().any(|i| matches!(i, Idx::Data(_))) {
        return Err("a data-dependent index".into());
    }
    for (i, x) in e.nodes.iter().enumerate() {
        vector_form(e, ExprId(i as u32)).map_err(|why| format!("{why} ({} node {i})", x.elem))?;
    }
    let widths: Vec<u32> = e.nodes.iter().filter(|x| !x.elem.is_pred()).map(|x| x.elem.byte_size() as u32).collect();
    let width = widths.first().copied().unwrap_or(1);
    if widths.iter().any(|&w| w != width) {
        return Err("element types of different widths".into());
    }
    let lanes = 16 / width;
    let extent = e.space[var as usize];
    let kind = if !e.is_reduction() {
        VecKind::Loop
    } else if e.reduced[var as usize] {
        VecKind::Row((0..e.reductions.len()).map(|k| reduction::associative_op(e, k)).collect::<Result<_, _>>()?)
    } else {
        VecKind::Column
    };
    // Four independent vectors per step where the loop is long enough (latency-bound
    // polynomial chains overlap), two below; column reductions keep one.
    let unroll = match kind {
        VecKind::Column => 1,
        _ if extent >= (lanes * 4) as i64 => 4,
        _ => 2,
    };
    if extent < (lanes * unroll) as i64 {
        return Err(format!("the innermost loop ({extent}) is shorter than one vector step"));
    }
    Ok(VecPlan { kind, lanes, unroll, width, var })
}

/// Whether unary `op` on `elem` has an inline vector form: single instructions, and
/// f32 transcendentals (`math`'s approximations work on f32x4; f64 ones call the C
/// library, so such kernels stay scalar).
pub fn unary_has_vector_form(op: UnaryOp, elem: ElementType) -> bool {
    use UnaryOp::*;
    match elem {
        ElementType::Pred => op == Not,
        el if el.is_int() => matches!(op, Abs | Neg | Not | Sign),
        ElementType::F32 => matches!(
            op,
            Abs | Neg | Floor | Ceil | RoundEven | Sqrt | IsFinite
                // Inline approximations in `math`, written for f32x4 as well.
                | Exp | Expm1 | Log | Log1p | Tanh | Logistic | Erf | Sin | Cos | Tan | Cbrt | Sign | RoundAfz | Rsqrt
        ),
        ElementType::F64 => matches!(op, Abs | Neg | Floor | Ceil | RoundEven | Sqrt | IsFinite),
        _ => false,
    }
}

/// Why node `x` has no vector form, if it has none.
fn vector_form(e: &Elemental, x: ExprId) -> Result<(), String> {
    let expr = e.expr(x);
    let elem = expr.elem;
    if matches!(elem, ElementType::F16 | ElementType::BF16) {
        return Err("f16/bf16 conversions are scalar code".into());
    }
    use BinaryOp::*;
    match &expr.node {
        Node::Unary(op, a) => {
            // IsFinite is typed by its float operand.
            let on = if *op == UnaryOp::IsFinite { e.expr(*a).elem } else { elem };
            if !unary_has_vector_form(*op, on) {
                return Err(format!("{} has no vector form", op.hlo_name()));
            }
        }
        Node::Binary(op, _, _) => {
            let ok = match elem {
                ElementType::Pred => matches!(op, Add | Max | Or | Mul | Min | And | Xor),
                ElementType::F32 => matches!(op, Add | Sub | Mul | Div | Max | Min | Pow | Atan2),
                el if el.is_float() => matches!(op, Add | Sub | Mul | Div | Max | Min),
                // x86 has no byte-lane multiply.
                el if el.byte_size() == 1 => matches!(op, Add | Sub | And | Or | Xor | Max | Min),
                _ => matches!(op, Add | Sub | Mul | And | Or | Xor | Max | Min),
            };
            if !ok {
                return Err(format!("{} has no vector form", op.hlo_name()));
            }
        }
        Node::Convert(a) | Node::BitcastConvert(a) => {
            let from = e.expr(*a).elem;
            if matches!(from, ElementType::F16 | ElementType::BF16) {
                return Err("f16/bf16 conversions are scalar code".into());
            }
            if !matches!(expr.node, Node::BitcastConvert(_))
                && from.is_float()
                && elem.is_int()
                && elem.byte_size() == 8
            {
                return Err("f64 -> 64-bit integer vectors are not lowered".into());
            }
            let bitcast = matches!(expr.node, Node::BitcastConvert(_));
            if bitcast && (from.is_pred() || elem.is_pred()) {
                return Err("a bitcast-convert of pred".into());
            }
        }
        _ => {}
    }
    Ok(())
}
