//! HLO's element semantics as test vectors that every emitter must pass: the cases where
//! a target's natural instruction gives another answer than XLA (a trap or an undefined
//! value on division by zero, a shift count taken modulo the width, a float-to-int
//! conversion that wraps or gives `INT_MIN` instead of saturating, NaN in a compare,
//! ties in rounding, pred arithmetic).
//!
//! Each case is one instruction on parameters with hand-checked expected values (from the
//! StableHLO spec and XLA's elemental IR emitter); the interpreter is held to them in this
//! module's tests, and each target's test suite runs [`cases`] on its own kernels, once
//! as given and once with every input repeated (so vector code and scalar tails both
//! see each value).

use crate::ir::{ElementType, Literal, Shape};

/// One instruction with its inputs and the result HLO defines.
#[derive(Clone, Debug)]
pub struct SemanticCase {
    pub name: &'static str,
    /// A module whose entry takes the inputs as parameters and returns the result.
    pub hlo: String,
    pub inputs: Vec<Literal>,
    pub want: Literal,
}

impl SemanticCase {
    /// The same case with each input and the result repeated `times` over (a longer
    /// array, for the vector paths).
    pub fn repeated(&self, times: usize) -> SemanticCase {
        let n = self.want.shape.num_elements();
        let rep = |l: &Literal| {
            let bytes = l.to_le_bytes().repeat(times);
            Literal::from_le_bytes(Shape::new(l.shape.elem, vec![(l.shape.num_elements() * times) as i64]), &bytes)
                .expect("the same bytes, repeated")
        };
        let dims = format!("[{n}]");
        let long = format!("[{}]", n * times);
        SemanticCase {
            name: self.name,
            hlo: self.hlo.replace(&dims, &long),
            inputs: self.inputs.iter().map(rep).collect(),
            want: rep(&self.want),
        }
    }
}

/// Whether `got` is the `want` HLO defines: the same bits, except that any NaN matches
/// any NaN (HLO does not fix a NaN's sign or payload).
pub fn same_result(got: &Literal, want: &Literal) -> bool {
    if got.shape.elem != want.shape.elem || got.shape.dims != want.shape.dims {
        return false;
    }
    if !want.shape.elem.is_float() {
        return got.to_le_bytes() == want.to_le_bytes();
    }
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    g.iter().zip(&w).all(|(a, b)| (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits())
}

enum Vals {
    I(&'static [i64]),
    F(&'static [f64]),
}

fn literal(elem: ElementType, v: &Vals) -> Literal {
    match v {
        Vals::I(v) => Literal::from_i64s(Shape::new(elem, vec![v.len() as i64]), v),
        Vals::F(v) => Literal::from_f64s(Shape::new(elem, vec![v.len() as i64]), v),
    }
}

/// `r = op(p0, p1, ...)` over 1-D arrays of `n` elements; `attrs` follows the operands.
fn case(
    name: &'static str,
    op: &str,
    attrs: &str,
    ins: &[(ElementType, Vals)],
    out: (ElementType, Vals),
) -> SemanticCase {
    let inputs: Vec<Literal> = ins.iter().map(|(e, v)| literal(*e, v)).collect();
    let want = literal(out.0, &out.1);
    let n = want.shape.num_elements();
    let mut hlo = String::from("HloModule semantics\nENTRY main {\n");
    for (i, l) in inputs.iter().enumerate() {
        hlo += &format!("  p{i} = {}[{n}] parameter({i})\n", l.shape.elem);
    }
    let operands: Vec<String> = (0..inputs.len()).map(|i| format!("p{i}")).collect();
    hlo += &format!("  ROOT r = {}[{n}] {op}({}){attrs}\n}}\n", out.0, operands.join(", "));
    SemanticCase { name, hlo, inputs, want }
}

const MIN32: i64 = i32::MIN as i64;
const MAX32: i64 = i32::MAX as i64;
const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

/// Every case, in a fixed order.
pub fn cases() -> Vec<SemanticCase> {
    use ElementType::*;
    use Vals::{F, I};
    vec![
        // Signed division truncates; x / 0 = -1, INT_MIN / -1 = INT_MIN (no trap).
        case(
            "s32 divide: truncation, by zero, INT_MIN / -1",
            "divide",
            "",
            &[(S32, I(&[7, -7, 5, MIN32, 0, -6])), (S32, I(&[2, 2, 0, -1, 0, 4]))],
            (S32, I(&[3, -3, -1, MIN32, -1, -1])),
        ),
        // The remainder takes the dividend's sign; x % 0 = x, INT_MIN % -1 = 0.
        case(
            "s32 remainder: sign of the dividend, by zero, INT_MIN % -1",
            "remainder",
            "",
            &[(S32, I(&[7, -7, 5, MIN32, 0, -6])), (S32, I(&[2, 2, 0, -1, 0, 4]))],
            (S32, I(&[1, -1, 5, 0, 0, -2])),
        ),
        case(
            "s8 divide: INT_MIN / -1 and by zero at 8 bits",
            "divide",
            "",
            &[(S8, I(&[-128, 100, -100, 127])), (S8, I(&[-1, 0, 0, -1]))],
            (S8, I(&[-128, -1, -1, -127])),
        ),
        // Unsigned x / 0 is all ones, x % 0 is x.
        case(
            "u32 divide by zero is all ones",
            "divide",
            "",
            &[(U32, I(&[7, 4294967295, 0])), (U32, I(&[0, 2, 0]))],
            (U32, I(&[4294967295, 2147483647, 4294967295])),
        ),
        case(
            "u32 remainder by zero is the dividend",
            "remainder",
            "",
            &[(U32, I(&[7, 4294967295, 9])), (U32, I(&[0, 2, 4]))],
            (U32, I(&[7, 1, 1])),
        ),
        case(
            "s64 divide: INT64_MIN / -1 and by zero",
            "divide",
            "",
            &[(S64, I(&[i64::MIN, 9, -9])), (S64, I(&[-1, 0, 2]))],
            (S64, I(&[i64::MIN, -1, -4])),
        ),
        // Shifts by the width or more (or a negative count, huge as unsigned): 0 for
        // left and logical shifts, the sign for arithmetic ones.
        case(
            "s32 shift-left past the width is 0",
            "shift-left",
            "",
            &[(S32, I(&[1, 1, 1, -1, 3])), (S32, I(&[31, 32, -1, 1, 33]))],
            (S32, I(&[MIN32, 0, 0, -2, 0])),
        ),
        case(
            "s32 shift-right-arithmetic past the width fills with the sign",
            "shift-right-arithmetic",
            "",
            &[(S32, I(&[-8, -8, 8, -1, 8])), (S32, I(&[1, 32, 40, -1, 3]))],
            (S32, I(&[-4, -1, 0, -1, 1])),
        ),
        case(
            "s32 shift-right-logical past the width is 0",
            "shift-right-logical",
            "",
            &[(S32, I(&[-8, -8, 8, 8])), (S32, I(&[28, 32, -1, 3]))],
            (S32, I(&[15, 0, 0, 1])),
        ),
        case(
            "u8 shift-left at and past 8 bits",
            "shift-left",
            "",
            &[(U8, I(&[1, 1, 255, 3])), (U8, I(&[7, 8, 1, 200]))],
            (U8, I(&[128, 0, 254, 0])),
        ),
        // Float to integer: truncate toward zero, saturate, NaN to 0.
        case(
            "f32 to s32 convert saturates and sends NaN to 0",
            "convert",
            "",
            &[(F32, F(&[NAN, INF, -INF, 3e9, -3e9, -2.7, 2.7, -0.5]))],
            (S32, I(&[0, MAX32, MIN32, MAX32, MIN32, -2, 2, 0])),
        ),
        case(
            "f32 to u8 convert saturates at 0 and 255",
            "convert",
            "",
            &[(F32, F(&[-1.0, 300.0, NAN, 255.9, 1.5]))],
            (U8, I(&[0, 255, 0, 255, 1])),
        ),
        case(
            "f32 to s64 convert saturates",
            "convert",
            "",
            &[(F32, F(&[1e19, -1e19, -7.9]))],
            (S64, I(&[i64::MAX, i64::MIN, -7])),
        ),
        case("s32 to pred convert is != 0", "convert", "", &[(S32, I(&[0, 5, -1, MIN32]))], (Pred, I(&[0, 1, 1, 1]))),
        case("pred to f32 convert is 0 or 1", "convert", "", &[(Pred, I(&[0, 1]))], (F32, F(&[0.0, 1.0]))),
        // NaN is not 0: true (a driver that assumes no NaN folds `NaN != 0` to false).
        case(
            "f32 to pred convert is != 0, NaN true",
            "convert",
            "",
            &[(F32, F(&[0.0, -0.0, NAN, 1e-30, -INF]))],
            (Pred, I(&[0, 0, 1, 1, 1])),
        ),
        // Rounding to the narrow floats: to nearest, ties to even, overflow to inf.
        case(
            "f32 to f16 convert rounds to nearest even and overflows to inf",
            "convert",
            "",
            &[(F32, F(&[65520.0, 1.0009765625, 1.00048828125, 1.00146484375, -70000.0]))],
            (F16, F(&[INF, 1.0009765625, 1.0, 1.001953125, -INF])),
        ),
        case(
            "f32 to bf16 convert rounds to nearest even",
            "convert",
            "",
            &[(F32, F(&[1.00390625, 1.01171875, 3.0e38, 1.0]))],
            (BF16, F(&[1.0, 1.015625, 3.00405527047391e38, 1.0])),
        ),
        // Compares: IEEE (NaN unordered) and the total order
        // (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN).
        case(
            "f32 compare LT: NaN is unordered, -0 equals 0",
            "compare",
            ", direction=LT",
            &[(F32, F(&[-0.0, NAN, -NAN, 1.0, -1.0])), (F32, F(&[0.0, INF, -INF, NAN, 1.0]))],
            (Pred, I(&[0, 0, 0, 0, 1])),
        ),
        case(
            "f32 compare NE: NaN is not equal to itself",
            "compare",
            ", direction=NE",
            &[(F32, F(&[NAN, -0.0, 1.0])), (F32, F(&[NAN, 0.0, 1.0]))],
            (Pred, I(&[1, 0, 0])),
        ),
        case(
            "f32 compare LT in total order: -0 < 0, NaN above inf, -NaN below -inf",
            "compare",
            ", direction=LT, type=TOTALORDER",
            &[(F32, F(&[-0.0, NAN, -NAN, 1.0, 0.0])), (F32, F(&[0.0, INF, -INF, NAN, -0.0]))],
            (Pred, I(&[1, 0, 1, 1, 0])),
        ),
        case(
            "u32 compare is unsigned",
            "compare",
            ", direction=LT",
            &[(U32, I(&[4294967295, 1])), (U32, I(&[1, 4294967295]))],
            (Pred, I(&[0, 1])),
        ),
        // pred arithmetic: add is or, multiply is and.
        case(
            "pred add is or",
            "add",
            "",
            &[(Pred, I(&[0, 0, 1, 1])), (Pred, I(&[0, 1, 0, 1]))],
            (Pred, I(&[0, 1, 1, 1])),
        ),
        case(
            "pred multiply is and",
            "multiply",
            "",
            &[(Pred, I(&[0, 0, 1, 1])), (Pred, I(&[0, 1, 0, 1]))],
            (Pred, I(&[0, 0, 0, 1])),
        ),
        // Integer negate and abs wrap at INT_MIN.
        case("s32 negate wraps at INT_MIN", "negate", "", &[(S32, I(&[MIN32, 5, 0]))], (S32, I(&[MIN32, -5, 0]))),
        case("s32 abs wraps at INT_MIN", "abs", "", &[(S32, I(&[MIN32, -5, 7]))], (S32, I(&[MIN32, 5, 7]))),
        // max/min propagate NaN.
        case(
            "f32 maximum propagates NaN",
            "maximum",
            "",
            &[(F32, F(&[NAN, 1.0, -INF, 2.0])), (F32, F(&[1.0, NAN, 3.0, -1.0]))],
            (F32, F(&[NAN, NAN, 3.0, 2.0])),
        ),
        case(
            "f32 minimum propagates NaN",
            "minimum",
            "",
            &[(F32, F(&[NAN, 1.0, -INF, 2.0])), (F32, F(&[1.0, NAN, 3.0, -1.0]))],
            (F32, F(&[NAN, NAN, -INF, -1.0])),
        ),
        // Float remainder is fmod (the dividend's sign).
        case(
            "f32 remainder is fmod",
            "remainder",
            "",
            &[(F32, F(&[-7.0, 7.0, 5.5, 1.0, INF])), (F32, F(&[2.0, -2.0, INF, 0.0, 2.0]))],
            (F32, F(&[-1.0, 1.0, 5.5, NAN, NAN])),
        ),
        // Rounding ops.
        case(
            "f32 round-nearest-even: ties to even",
            "round-nearest-even",
            "",
            &[(F32, F(&[0.5, 1.5, 2.5, -0.5, -2.5, 2.6]))],
            (F32, F(&[0.0, 2.0, 2.0, -0.0, -2.0, 3.0])),
        ),
        case(
            "f32 round-nearest-afz: ties away from zero",
            "round-nearest-afz",
            "",
            &[(F32, F(&[0.5, 1.5, 2.5, -0.5, -2.5, 2.4]))],
            (F32, F(&[1.0, 2.0, 3.0, -1.0, -3.0, 2.0])),
        ),
        case(
            "f32 sign keeps zeros and NaN",
            "sign",
            "",
            &[(F32, F(&[-3.0, -0.0, 0.0, NAN, 2.0]))],
            (F32, F(&[-1.0, -0.0, 0.0, NAN, 1.0])),
        ),
        case("s32 sign", "sign", "", &[(S32, I(&[-5, 0, 7, MIN32]))], (S32, I(&[-1, 0, 1, -1]))),
        // Bit ops.
        case("s32 popcnt", "popcnt", "", &[(S32, I(&[-1, 0, 7, MIN32]))], (S32, I(&[32, 0, 3, 1]))),
        case(
            "s32 count-leading-zeros",
            "count-leading-zeros",
            "",
            &[(S32, I(&[0, 1, -1, 65535]))],
            (S32, I(&[32, 31, 0, 16])),
        ),
        case(
            "f32 to s32 bitcast-convert keeps the bits",
            "bitcast-convert",
            "",
            &[(F32, F(&[1.0, -0.0, INF]))],
            (S32, I(&[1065353216, MIN32, 2139095040])),
        ),
        case(
            "s32 clamp",
            "clamp",
            "",
            &[(S32, I(&[0, 0, 0])), (S32, I(&[-1, 5, 20])), (S32, I(&[10, 10, 10]))],
            (S32, I(&[0, 5, 10])),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::Interpreter;
    use crate::ir::Value;

    /// The interpreter, the numerics oracle, gives every hand-checked result.
    #[test]
    fn the_interpreter_meets_every_case() {
        let all = cases();
        assert!(all.len() >= 30);
        let mut failures = Vec::new();
        for c in all.iter().flat_map(|c| [c.clone(), c.repeated(9)]) {
            let module = crate::parse::parse_module(&c.hlo).unwrap_or_else(|e| panic!("{}: {e:?}\n{}", c.name, c.hlo));
            let args: Vec<Value> = c.inputs.iter().cloned().map(Value::Array).collect();
            let got = Interpreter::new(&module).run(&args).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            match got {
                Value::Array(l) if same_result(&l, &c.want) => {}
                other => failures.push(format!("{}: got {other:?}, want {:?}", c.name, c.want)),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn same_result_matches_any_nan_but_tells_zeros_apart() {
        let f = |v: &[f64]| Literal::from_f64s(Shape::new(ElementType::F32, vec![v.len() as i64]), v);
        assert!(same_result(&f(&[f64::NAN, 1.0]), &f(&[-f64::NAN, 1.0])));
        assert!(!same_result(&f(&[0.0]), &f(&[-0.0])));
        assert!(!same_result(&f(&[1.0]), &f(&[1.0, 1.0])));
    }
}
