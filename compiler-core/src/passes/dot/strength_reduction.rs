//! Dot strength reduction (what XLA's algebraic simplifier does to small dots): a dot
//! with a side that has no free dimension bigger than 1 (a matrix-vector or vector-vector
//! product), or whose contracting dimensions all have size 1 (an outer product), becomes
//! a multiply and a reduce, which fusion can then fuse with the operands' producers and
//! the result's consumers, instead of a library call over a degenerate matrix.
//!
//! `dot(a, b)` with result `[batch.., lhs free.., rhs free..]` becomes
//! `reduce(multiply(broadcast(a'), broadcast(b')), +0, add)` over a product of shape
//! `[batch.., lhs free.., rhs free.., contracting..]` (contracting dims in the lhs's
//! order), where `a'` and `b'` are the operands, converted to the result type when theirs
//! differs (as the dot computes) and transposed when their dims would otherwise reach the
//! product out of order. The reduce adds the products to `+0` one at a time in row-major
//! order of the contracting dims, exactly as the dot sums them, so every result bit is
//! kept (`+0 + -0` is `+0` in both).
//!
//! Refused: pred dots (an or of ands), and f16/bf16 ones (the dot sums those wider and
//! rounds once; a reduce in the narrow type would round at every step).

use crate::ir::{BinaryOp, Computation, ElementType, InstId, Instruction, Literal, Loc, Op, Scalar, Shape, Type};
use crate::passes::rewrite::{rules, run_rules, Action, Ctx, Rule};
use crate::passes::{Changed, Pass, PassLog};

/// The dot strength reduction pass; see the module documentation.
pub struct DotStrengthReduction;

const RULES: &[Rule] = rules![
    "dot-to-multiply-reduce" on ["dot"] => dot_to_multiply_reduce,
];

impl Pass for DotStrengthReduction {
    fn name(&self) -> &'static str {
        "dot-strength-reduction"
    }
    fn run(&self, module: &mut crate::ir::Module, log: &mut PassLog) -> Changed {
        run_rules(RULES, 1, module, log)
    }
}

/// One operand's dims in the order they take in the product: for each operand dim, its
/// position in the product.
fn product_positions(
    rank: usize,
    batch: &[i64],
    contracting: &[i64],
    free_at: usize,
    contracting_at: usize,
) -> Vec<i64> {
    let mut free = free_at as i64;
    (0..rank as i64)
        .map(|d| {
            if let Some(i) = batch.iter().position(|&b| b == d) {
                i as i64
            } else if let Some(k) = contracting.iter().position(|&c| c == d) {
                (contracting_at + k) as i64
            } else {
                free += 1;
                free - 1
            }
        })
        .collect()
}

fn dot_to_multiply_reduce(cx: &mut Ctx, id: InstId) -> Option<Action> {
    let Op::Dot(dd) = cx.op(id) else { return None };
    let dd = dd.clone();
    let out = cx.shape(id)?.clone();
    let elem = out.elem;
    if elem.is_pred() || matches!(elem, ElementType::F16 | ElementType::BF16) {
        return None;
    }
    let (a, b) = (cx.arg(id, 0), cx.arg(id, 1));
    let (ad, bd) = (cx.dims(a), cx.dims(b));
    let is_free = |d: usize, batch: &[i64], contracting: &[i64]| {
        !batch.contains(&(d as i64)) && !contracting.contains(&(d as i64))
    };
    let free_sizes = |dims: &[i64], batch: &[i64], contracting: &[i64]| -> Vec<i64> {
        (0..dims.len()).filter(|&d| is_free(d, batch, contracting)).map(|d| dims[d]).collect()
    };
    let lfree = free_sizes(ad, &dd.lhs_batch, &dd.lhs_contracting);
    let rfree = free_sizes(bd, &dd.rhs_batch, &dd.rhs_contracting);
    let contracting: Vec<i64> =
        dd.lhs_contracting.iter().map(|&c| ad.get(c as usize).copied()).collect::<Option<_>>()?;
    let vector_side = lfree.iter().all(|&n| n == 1) || rfree.iter().all(|&n| n == 1);
    let outer = contracting.iter().all(|&n| n == 1);
    if !(vector_side || outer) {
        return None;
    }
    let (nb, nl, nr) = (dd.lhs_batch.len(), lfree.len(), rfree.len());
    let mut product_dims: Vec<i64> = out.dims.to_vec();
    product_dims.extend(&contracting);
    if product_dims.len() != nb + nl + nr + contracting.len() {
        return None;
    }
    let product_ty = Type::Array(Shape::new(elem, product_dims.clone()));
    let place = |cx: &mut Ctx, x: InstId, positions: Vec<i64>| -> InstId {
        let x_shape = cx.shape(x).expect("dot operands are arrays").clone();
        let mut x = x;
        if x_shape.elem != elem {
            let ty = Type::Array(Shape::new(elem, x_shape.dims.clone()));
            x = cx.insert_before(id, "convert", Op::Convert, vec![x], ty);
        }
        // Broadcast dims in increasing order: transpose first where they are not.
        let mut order: Vec<usize> = (0..positions.len()).collect();
        order.sort_by_key(|&d| positions[d]);
        if order.iter().enumerate().any(|(i, &d)| i != d) {
            let dims: Vec<i64> = order.iter().map(|&d| x_shape.dims[d]).collect();
            let perm = order.iter().map(|&d| d as i64).collect();
            x = cx.insert_before(id, "transpose", Op::Transpose { perm }, vec![x], Type::Array(Shape::new(elem, dims)));
        }
        let dims = order.iter().map(|&d| positions[d]).collect();
        cx.insert_before(id, "broadcast", Op::BroadcastInDim { dims }, vec![x], product_ty.clone())
    };
    let lpos = product_positions(ad.len(), &dd.lhs_batch, &dd.lhs_contracting, nb, nb + nl + nr);
    let rpos = product_positions(bd.len(), &dd.rhs_batch, &dd.rhs_contracting, nb + nl, nb + nl + nr);
    let lhs = place(cx, a, lpos);
    let rhs = place(cx, b, rpos);
    let product = cx.insert_before(id, "multiply", Op::Binary(BinaryOp::Mul), vec![lhs, rhs], product_ty.clone());
    let zero = Literal::scalar_from(
        elem,
        if elem.is_float() {
            Scalar::F(0.0)
        } else if elem.is_signed_int() {
            Scalar::S(0)
        } else {
            Scalar::U(0)
        },
    );
    let scalar = Type::Array(Shape::scalar(elem));
    let init = cx.insert_before(id, "constant", Op::Constant(zero), vec![], scalar.clone());
    let body = add_computation(cx, elem);
    let dims = (nb + nl + nr..product_dims.len()).map(|d| d as i64).collect();
    Some(Action::Rewrite { op: Op::Reduce { dims, body }, operands: vec![product, init] })
}

/// A new `add(acc, x)` computation over scalars of `elem`.
fn add_computation(cx: &mut Ctx, elem: ElementType) -> crate::ir::CompId {
    let name = cx.module.fresh_name("add");
    let mut body = Computation::new(name);
    let scalar = Type::Array(Shape::scalar(elem));
    let acc = body.push_param("acc", scalar.clone(), Loc::default());
    let x = body.push_param("x", scalar.clone(), Loc::default());
    body.root = body.push(Instruction {
        name: "sum".into(),
        op: Op::Binary(BinaryOp::Add),
        operands: vec![acc, x],
        ty: scalar,
        loc: Loc::default(),
    });
    cx.module.add_computation(body)
}
