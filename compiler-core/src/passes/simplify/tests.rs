//! Tests of the simplifier: one per rule (HLO text in, the entry computation's text out),
//! negative tests where a rule must not fire, and a meaning check on every module: the
//! interpreter runs it before and after on seeded random inputs (NaN, ±0, ±inf, extreme
//! integers included) and the results must agree bit for bit.

use super::AlgebraicSimplifier;
use crate::ir::literal::{float_from_bits, wrap_signed, wrap_unsigned};
use crate::ir::{Data, Literal, Module, Shape, Type, Value};
use crate::parse::hlo::parse;
use crate::passes::{Pass, PassLog};
use crate::print::hlo::{print_computation, PrintOptions};

/// xorshift64: a small seeded generator, so failures reproduce.
pub(crate) struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// A random array of `shape`: about half the elements are special values (NaN, ±0,
/// ±inf, the largest and smallest integers, ±1), the rest random.
pub(crate) fn random_literal(rng: &mut XorShift, shape: &Shape) -> Literal {
    let n = shape.num_elements();
    let e = shape.elem;
    let special = |rng: &mut XorShift| rng.next().is_multiple_of(2);
    let data = if e.is_pred() {
        Data::Pred((0..n).map(|_| rng.next() & 1 == 1).collect())
    } else if e.is_signed_int() {
        Data::S(
            (0..n)
                .map(|_| {
                    let bits = e.bit_width();
                    let min = if bits == 64 { i64::MIN } else { -(1i64 << (bits - 1)) };
                    if special(rng) {
                        [0, 1, -1, 2, min, !min][(rng.next() % 6) as usize]
                    } else {
                        wrap_signed(e, rng.next() as i64)
                    }
                })
                .collect(),
        )
    } else if e.is_unsigned_int() {
        Data::U(
            (0..n)
                .map(|_| {
                    wrap_unsigned(
                        e,
                        if special(rng) { [0, 1, 2, u64::MAX][(rng.next() % 4) as usize] } else { rng.next() },
                    )
                })
                .collect(),
        )
    } else {
        let specials =
            [f64::NAN, -f64::NAN, 0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1.0, -1.0, 65504.0, 3.0e38, 1e-40];
        Data::F(
            (0..n)
                .map(|_| {
                    if special(rng) {
                        crate::ir::literal::round_float(e, specials[(rng.next() % specials.len() as u64) as usize])
                    } else {
                        // Random bit patterns cover every exponent, subnormals and NaNs.
                        let v = float_from_bits(e, rng.next() & crate::ir::literal::width_mask(e));
                        let v =
                            if rng.next().is_multiple_of(4) { v } else { ((rng.next() % 2001) as f64 - 1000.0) / 8.0 };
                        // Values must be normalized to their type, as the IR requires.
                        crate::ir::literal::round_float(e, v)
                    }
                })
                .collect(),
        )
    };
    Literal::new(Shape::new(e, shape.dims.clone()), data)
}

fn random_value(rng: &mut XorShift, ty: &Type) -> Value {
    match ty {
        Type::Array(s) => Value::Array(random_literal(rng, s)),
        Type::Tuple(ts) => Value::Tuple(ts.iter().map(|t| random_value(rng, t)).collect()),
        Type::Token => Value::Token,
    }
}

/// Both NaN, or the same bits (so `-0.0` differs from `0.0`).
fn same_arrays(a: &Literal, b: &Literal) -> bool {
    a.shape.same_shape(&b.shape)
        && (0..a.num_elements()).all(|i| match (a.get(i), b.get(i)) {
            (crate::ir::Scalar::F(x), crate::ir::Scalar::F(y)) if x.is_nan() && y.is_nan() => true,
            _ => a.bits(i) == b.bits(i),
        })
}

/// Runs `before` and `after` on `trials` random inputs and asserts bit-exact agreement.
pub(crate) fn assert_same_results(before: &Module, after: &Module, trials: u64) {
    let params = before.entry_comp().param_types();
    assert_eq!(params, after.entry_comp().param_types(), "the signature changed");
    for seed in 1..=trials {
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let args: Vec<Value> = params.iter().map(|t| random_value(&mut rng, t)).collect();
        let want = crate::interp::run(before, &args).expect("the module before the pass runs");
        let got = crate::interp::run(after, &args).expect("the module after the pass runs");
        assert_eq!(want.ty(), got.ty(), "result types differ");
        let (w, g) = (want.flatten(), got.flatten());
        for (x, y) in w.iter().zip(&g) {
            assert!(same_arrays(x, y), "seed {seed}: results differ\nargs: {args:?}\nbefore: {x:?}\nafter: {y:?}");
        }
    }
}

/// The entry computation's instructions as printed (no header, no metadata), one per
/// line, trimmed.
pub(crate) fn entry_text(m: &Module) -> String {
    let text = print_computation(m, m.entry, &PrintOptions { metadata: false });
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    lines[1..lines.len() - 1].join("\n")
}

pub(crate) fn normalize(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n")
}

/// A module whose entry has `body` (instruction lines), after `comps` (sub-computations).
pub(crate) fn module(comps: &str, body: &str) -> Module {
    let text = format!("HloModule m\n{comps}\nENTRY %e {{\n{body}\n}}\n");
    parse(&text).unwrap_or_else(|e| panic!("bad test module: {e}\n{text}"))
}

fn simplify(m: &Module) -> (Module, PassLog, bool) {
    let mut after = m.clone();
    let mut log = PassLog::default();
    let changed = AlgebraicSimplifier::default().run(&mut after, &mut log);
    (after, log, changed)
}

const ADD_F32: &str = "%add (a: f32[], b: f32[]) -> f32[] {\n %a = f32[] parameter(0)\n %b = f32[] parameter(1)\n ROOT %r = f32[] add(%a, %b)\n}\n";
const MAX_F32: &str = "%max (a: f32[], b: f32[]) -> f32[] {\n %a = f32[] parameter(0)\n %b = f32[] parameter(1)\n ROOT %r = f32[] maximum(%b, %a)\n}\n";
const AND_PRED: &str = "%and (a: pred[], b: pred[]) -> pred[] {\n %a = pred[] parameter(0)\n %b = pred[] parameter(1)\n ROOT %r = pred[] and(%a, %b)\n}\n";
const ADD_S32: &str = "%adds (a: s32[], b: s32[]) -> s32[] {\n %a = s32[] parameter(0)\n %b = s32[] parameter(1)\n ROOT %r = s32[] add(%a, %b)\n}\n";

/// Asserts that `rule` fires on the module (`comps` + `body`), that the entry afterwards
/// reads `want`, and that the results did not change.
fn check_with(comps: &str, rule: &str, body: &str, want: &str) {
    let m = module(comps, body);
    let (after, log, changed) = simplify(&m);
    assert!(changed, "{rule}: nothing changed");
    assert!(log.rewrites.iter().any(|r| r.rule == rule), "{rule} did not fire: {:?}", log.rewrites);
    assert_eq!(entry_text(&after), normalize(want), "{rule}: unexpected result (log {:?})", log.rewrites);
    assert_same_results(&m, &after, 40);
    let (_, _, again) = simplify(&after);
    assert!(!again, "{rule}: not a fixed point");
}

fn check(rule: &str, body: &str, want: &str) {
    check_with("", rule, body, want)
}

/// Asserts that the pass leaves the module exactly as it was.
fn check_unchanged_with(comps: &str, body: &str) {
    let m = module(comps, body);
    let (after, log, changed) = simplify(&m);
    assert!(!changed, "expected no change, got {:?}", log.rewrites);
    assert!(log.rewrites.is_empty());
    assert_eq!(entry_text(&after), entry_text(&m));
    assert_same_results(&m, &after, 10);
}

fn check_unchanged(body: &str) {
    check_unchanged_with("", body)
}

// ---- canonical form -------------------------------------------------------------------

#[test]
fn constant_to_rhs() {
    check(
        "constant-to-rhs",
        "%x = f32[4] parameter(0)\n %c = f32[4] constant({1, 2, 3, 4})\n ROOT %m = f32[4] multiply(%c, %x)",
        "%x = f32[4] parameter(0)\n %c = f32[4] constant({1, 2, 3, 4})\n ROOT %m = f32[4] multiply(%x, %c)",
    );
    // Not commutative: stays.
    check_unchanged(
        "%x = f32[4] parameter(0)\n %c = f32[4] constant({1, 2, 3, 4})\n ROOT %m = f32[4] subtract(%c, %x)",
    );
}

#[test]
fn compare_constant_to_rhs() {
    check(
        "compare-constant-to-rhs",
        "%x = f32[3] parameter(0)\n %c = f32[3] constant({1, nan, -0})\n ROOT %p = pred[3] compare(%c, %x), direction=LT",
        "%x = f32[3] parameter(0)\n %c = f32[3] constant({1, nan, -0})\n ROOT %p = pred[3] compare(%x, %c), direction=GT",
    );
}

// ---- identities -----------------------------------------------------------------------

#[test]
fn add_zero() {
    check(
        "add-zero",
        "%x = f32[4] parameter(0)\n %z = f32[] constant(-0)\n %b = f32[4] broadcast(%z), dimensions={}\n ROOT %a = f32[4] add(%b, %x)",
        "ROOT %x = f32[4] parameter(0)",
    );
    check(
        "add-zero",
        "%x = s32[4] parameter(0)\n %z = s32[4] constant({0, 0, 0, 0})\n ROOT %a = s32[4] add(%x, %z)",
        "ROOT %x = s32[4] parameter(0)",
    );
    // x + 0.0 is not x for x = -0.0.
    check_unchanged("%x = f32[4] parameter(0)\n %z = f32[] constant(0)\n %b = f32[4] broadcast(%z), dimensions={}\n ROOT %a = f32[4] add(%x, %b)");
    // Not a splat.
    check_unchanged("%x = s32[2] parameter(0)\n %z = s32[2] constant({0, 1})\n ROOT %a = s32[2] add(%x, %z)");
}

#[test]
fn use_keeps_types_exact() {
    // The add's type has no layout, x's has one: replacing the add by x would change the
    // type its users see, so the rule refuses.
    check_unchanged("%x = s32[4]{0} parameter(0)\n %z = s32[4] constant({0, 0, 0, 0})\n ROOT %a = s32[4] add(%x, %z)");
}

#[test]
fn sub_zero() {
    check(
        "sub-zero",
        "%x = f32[2] parameter(0)\n %z = f32[2] constant({0, 0})\n ROOT %s = f32[2] subtract(%x, %z)",
        "ROOT %x = f32[2] parameter(0)",
    );
    // x - (-0.0) is x + 0.0: not x for x = -0.0.
    check_unchanged("%x = f32[2] parameter(0)\n %z = f32[2] constant({-0, -0})\n ROOT %s = f32[2] subtract(%x, %z)");
}

#[test]
fn mul_one() {
    check(
        "mul-one",
        "%x = bf16[3] parameter(0)\n %o = bf16[3] constant({1, 1, 1})\n ROOT %m = bf16[3] multiply(%x, %o)",
        "ROOT %x = bf16[3] parameter(0)",
    );
    // Multiplying floats by a power of two is left alone.
    check_unchanged("%x = f32[3] parameter(0)\n %o = f32[3] constant({2, 2, 2})\n ROOT %m = f32[3] multiply(%x, %o)");
}

#[test]
fn div_one() {
    check("div-one", "%x = s32[3] parameter(0)\n %o = s32[] constant(1)\n %b = s32[3] broadcast(%o), dimensions={}\n ROOT %d = s32[3] divide(%x, %b)", "ROOT %x = s32[3] parameter(0)");
    // 1 / x is not x.
    check_unchanged("%x = f32[3] parameter(0)\n %o = f32[3] constant({1, 1, 1})\n ROOT %d = f32[3] divide(%o, %x)");
}

#[test]
fn mul_zero_int() {
    check(
        "mul-zero-int",
        "%x = s32[3] parameter(0)\n %z = s32[3] constant({0, 0, 0})\n ROOT %m = s32[3] multiply(%x, %z)",
        "%x = s32[3] parameter(0)\n ROOT %z = s32[3] constant({0, 0, 0})",
    );
    // NaN * 0 and inf * 0 are NaN, -1 * 0 is -0.
    check_unchanged("%x = f32[3] parameter(0)\n %z = f32[3] constant({0, 0, 0})\n ROOT %m = f32[3] multiply(%x, %z)");
}

#[test]
fn sub_self_int() {
    check(
        "sub-self-int",
        "%x = u8[3] parameter(0)\n ROOT %s = u8[3] subtract(%x, %x)",
        "%x = u8[3] parameter(0)\n %constant.0 = u8[] constant(0)\n ROOT %s = u8[3] broadcast(%constant.0), dimensions={}",
    );
    // inf - inf and NaN - NaN are NaN.
    check_unchanged("%x = f32[3] parameter(0)\n ROOT %s = f32[3] subtract(%x, %x)");
}

#[test]
fn xor_self() {
    check(
        "xor-self",
        "%x = pred[] parameter(0)\n ROOT %s = pred[] xor(%x, %x)",
        "%x = pred[] parameter(0)\n ROOT %s = pred[] constant(false)",
    );
}

#[test]
fn and_all_ones() {
    check(
        "and-all-ones",
        "%x = u8[2] parameter(0)\n %c = u8[2] constant({255, 255})\n ROOT %a = u8[2] and(%x, %c)",
        "ROOT %x = u8[2] parameter(0)",
    );
    check(
        "and-all-ones",
        "%x = pred[2] parameter(0)\n %c = pred[2] constant({true, true})\n ROOT %a = pred[2] and(%c, %x)",
        "ROOT %x = pred[2] parameter(0)",
    );
    check_unchanged("%x = u8[2] parameter(0)\n %c = u8[2] constant({127, 127})\n ROOT %a = u8[2] and(%x, %c)");
}

#[test]
fn and_zero() {
    check(
        "and-zero",
        "%x = s64[2] parameter(0)\n %c = s64[2] constant({0, 0})\n ROOT %a = s64[2] and(%x, %c)",
        "%x = s64[2] parameter(0)\n ROOT %c = s64[2] constant({0, 0})",
    );
}

#[test]
fn or_zero() {
    check(
        "or-zero",
        "%x = pred[2] parameter(0)\n %c = pred[2] constant({false, false})\n ROOT %o = pred[2] or(%x, %c)",
        "ROOT %x = pred[2] parameter(0)",
    );
}

#[test]
fn or_all_ones() {
    check(
        "or-all-ones",
        "%x = s16[2] parameter(0)\n %c = s16[] constant(-1)\n %b = s16[2] broadcast(%c), dimensions={}\n ROOT %o = s16[2] or(%x, %b)",
        "%x = s16[2] parameter(0)\n %c = s16[] constant(-1)\n ROOT %b = s16[2] broadcast(%c), dimensions={}",
    );
}

#[test]
fn xor_zero() {
    check(
        "xor-zero",
        "%x = u32[2] parameter(0)\n %c = u32[2] constant({0, 0})\n ROOT %o = u32[2] xor(%x, %c)",
        "ROOT %x = u32[2] parameter(0)",
    );
}

#[test]
fn shift_by_zero() {
    check(
        "shift-by-zero",
        "%x = s32[2] parameter(0)\n %c = s32[2] constant({0, 0})\n ROOT %o = s32[2] shift-right-arithmetic(%x, %c)",
        "ROOT %x = s32[2] parameter(0)",
    );
    // 0 << x is not 0 << 0.
    check_unchanged("%x = s32[2] parameter(0)\n %c = s32[2] constant({0, 0})\n ROOT %o = s32[2] shift-left(%c, %x)");
}

#[test]
fn max_identity() {
    check(
        "max-identity",
        "%x = f32[4] parameter(0)\n %c = f32[4] constant({-inf, -inf, -inf, -inf})\n ROOT %m = f32[4] maximum(%x, %c)",
        "ROOT %x = f32[4] parameter(0)",
    );
    check(
        "max-identity",
        "%x = s8[2] parameter(0)\n %c = s8[2] constant({-128, -128})\n ROOT %m = s8[2] maximum(%c, %x)",
        "ROOT %x = s8[2] parameter(0)",
    );
    // max(NaN, +inf) is NaN: max(x, +inf) -> +inf would be wrong.
    check_unchanged(
        "%x = f32[4] parameter(0)\n %c = f32[4] constant({inf, inf, inf, inf})\n ROOT %m = f32[4] maximum(%x, %c)",
    );
    // The largest finite value is not the identity.
    check_unchanged(
        "%x = f16[2] parameter(0)\n %c = f16[2] constant({-65504, -65504})\n ROOT %m = f16[2] maximum(%x, %c)",
    );
}

#[test]
fn min_identity() {
    check(
        "min-identity",
        "%x = f64[2] parameter(0)\n %c = f64[2] constant({inf, inf})\n ROOT %m = f64[2] minimum(%x, %c)",
        "ROOT %x = f64[2] parameter(0)",
    );
    check(
        "min-identity",
        "%x = u16[2] parameter(0)\n %c = u16[2] constant({65535, 65535})\n ROOT %m = u16[2] minimum(%x, %c)",
        "ROOT %x = u16[2] parameter(0)",
    );
    check_unchanged(
        "%x = s32[2] parameter(0)\n %c = s32[2] constant({2147483646, 2147483646})\n ROOT %m = s32[2] minimum(%x, %c)",
    );
}

#[test]
fn idempotent_self() {
    check(
        "idempotent-self",
        "%x = f32[4] parameter(0)\n ROOT %m = f32[4] maximum(%x, %x)",
        "ROOT %x = f32[4] parameter(0)",
    );
    check("idempotent-self", "%x = s32[4] parameter(0)\n ROOT %m = s32[4] or(%x, %x)", "ROOT %x = s32[4] parameter(0)");
    // x + x is not x.
    check_unchanged("%x = f32[4] parameter(0)\n ROOT %m = f32[4] add(%x, %x)");
}

#[test]
fn add_negate() {
    check(
        "add-negate",
        "%x = f32[4] parameter(0)\n %y = f32[4] parameter(1)\n %n = f32[4] negate(%y)\n ROOT %a = f32[4] add(%n, %x)",
        "%x = f32[4] parameter(0)\n %y = f32[4] parameter(1)\n ROOT %a = f32[4] subtract(%x, %y)",
    );
}

#[test]
fn sub_negate() {
    check(
        "sub-negate",
        "%x = s8[4] parameter(0)\n %y = s8[4] parameter(1)\n %n = s8[4] negate(%y)\n ROOT %a = s8[4] subtract(%x, %n)",
        "%x = s8[4] parameter(0)\n %y = s8[4] parameter(1)\n ROOT %a = s8[4] add(%x, %y)",
    );
    // neg(y) - x is not touched.
    check_unchanged("%x = f32[4] parameter(0)\n %y = f32[4] parameter(1)\n %n = f32[4] negate(%y)\n ROOT %a = f32[4] subtract(%n, %x)");
}

#[test]
fn select_const_pred() {
    check(
        "select-const-pred",
        "%a = f32[2] parameter(0)\n %b = f32[2] parameter(1)\n %t = pred[] constant(false)\n ROOT %s = f32[2] select(%t, %a, %b)",
        "%a = f32[2] parameter(0)\n ROOT %b = f32[2] parameter(1)",
    );
    check_unchanged("%a = f32[2] parameter(0)\n %b = f32[2] parameter(1)\n %t = pred[2] constant({true, false})\n ROOT %s = f32[2] select(%t, %a, %b)");
}

#[test]
fn select_same() {
    check(
        "select-same",
        "%p = pred[2] parameter(0)\n %a = f32[2] parameter(1)\n ROOT %s = f32[2] select(%p, %a, %a)",
        "%p = pred[2] parameter(0)\n ROOT %a = f32[2] parameter(1)",
    );
}

#[test]
fn select_not_pred() {
    check(
        "select-not-pred",
        "%p = pred[2] parameter(0)\n %a = s32[2] parameter(1)\n %b = s32[2] parameter(2)\n %n = pred[2] not(%p)\n ROOT %s = s32[2] select(%n, %a, %b)",
        "%p = pred[2] parameter(0)\n %a = s32[2] parameter(1)\n %b = s32[2] parameter(2)\n ROOT %s = s32[2] select(%p, %b, %a)",
    );
}

#[test]
fn neg_neg() {
    check(
        "neg-neg",
        "%x = f32[3] parameter(0)\n %n = f32[3] negate(%x)\n ROOT %m = f32[3] negate(%n)",
        "ROOT %x = f32[3] parameter(0)",
    );
    // Four negations need two rewrites and end at x too.
    check(
        "neg-neg",
        "%x = s32[3] parameter(0)\n %n1 = s32[3] negate(%x)\n %n2 = s32[3] negate(%n1)\n %n3 = s32[3] negate(%n2)\n ROOT %n4 = s32[3] negate(%n3)",
        "ROOT %x = s32[3] parameter(0)",
    );
}

#[test]
fn not_not() {
    check(
        "not-not",
        "%x = u8[3] parameter(0)\n %n = u8[3] not(%x)\n ROOT %m = u8[3] not(%n)",
        "ROOT %x = u8[3] parameter(0)",
    );
}

#[test]
fn abs_abs() {
    check(
        "abs-abs",
        "%x = s8[3] parameter(0)\n %n = s8[3] abs(%x)\n ROOT %m = s8[3] abs(%n)",
        "%x = s8[3] parameter(0)\n ROOT %n = s8[3] abs(%x)",
    );
}

#[test]
fn abs_of_negate() {
    check(
        "abs-of-negate",
        "%x = f32[3] parameter(0)\n %n = f32[3] negate(%x)\n ROOT %m = f32[3] abs(%n)",
        "%x = f32[3] parameter(0)\n ROOT %m = f32[3] abs(%x)",
    );
    // For unsigned ints abs is the identity and negate wraps.
    check_unchanged("%x = u32[3] parameter(0)\n %n = u32[3] negate(%x)\n ROOT %m = u32[3] abs(%n)");
}

#[test]
fn compare_self_int() {
    check(
        "compare-self-int",
        "%x = s32[3] parameter(0)\n ROOT %c = pred[3] compare(%x, %x), direction=GE",
        "%x = s32[3] parameter(0)\n %constant.0 = pred[] constant(true)\n ROOT %c = pred[3] broadcast(%constant.0), dimensions={}",
    );
    check(
        "compare-self-int",
        "%x = u8[] parameter(0)\n ROOT %c = pred[] compare(%x, %x), direction=NE",
        "%x = u8[] parameter(0)\n ROOT %c = pred[] constant(false)",
    );
    // NaN == NaN is false.
    check_unchanged("%x = f32[3] parameter(0)\n ROOT %c = pred[3] compare(%x, %x), direction=EQ");
}

#[test]
fn elementwise_of_scalar_broadcasts() {
    check(
        "elementwise-of-scalar-broadcasts",
        "%a = f32[] parameter(0)\n %b = f32[] parameter(1)\n %ba = f32[2,3] broadcast(%a), dimensions={}\n %bb = f32[2,3] broadcast(%b), dimensions={}\n ROOT %m = f32[2,3] multiply(%ba, %bb)",
        "%a = f32[] parameter(0)\n %b = f32[] parameter(1)\n %multiply.0 = f32[] multiply(%a, %b)\n ROOT %m = f32[2,3] broadcast(%multiply.0), dimensions={}",
    );
    // A select with a scalar selector over broadcasts.
    check(
        "elementwise-of-scalar-broadcasts",
        "%p = pred[] parameter(0)\n %a = s32[] parameter(1)\n %ba = s32[4] broadcast(%a), dimensions={}\n %c = s32[] constant(7)\n %bc = s32[4] broadcast(%c), dimensions={}\n ROOT %s = s32[4] select(%p, %ba, %bc)",
        "%p = pred[] parameter(0)\n %a = s32[] parameter(1)\n %c = s32[] constant(7)\n %select.0 = s32[] select(%p, %a, %c)\n ROOT %s = s32[4] broadcast(%select.0), dimensions={}",
    );
    // One operand is a real array: nothing to do.
    check_unchanged("%a = f32[] parameter(0)\n %x = f32[3] parameter(1)\n %ba = f32[3] broadcast(%a), dimensions={}\n ROOT %m = f32[3] multiply(%x, %ba)");
}

// ---- converts -------------------------------------------------------------------------

#[test]
fn convert_same_type() {
    check(
        "convert-same-type",
        "%x = s32[3] parameter(0)\n ROOT %c = s32[3] convert(%x)",
        "ROOT %x = s32[3] parameter(0)",
    );
}

#[test]
fn convert_chain_exact() {
    check(
        "convert-chain-exact",
        "%x = f16[4] parameter(0)\n %a = f32[4] convert(%x)\n ROOT %b = f64[4] convert(%a)",
        "%x = f16[4] parameter(0)\n ROOT %b = f64[4] convert(%x)",
    );
    // There and back again through a wider type: the identity.
    check(
        "convert-chain-exact",
        "%x = s8[4] parameter(0)\n %a = f32[4] convert(%x)\n ROOT %b = s8[4] convert(%a)",
        "ROOT %x = s8[4] parameter(0)",
    );
    check(
        "convert-chain-exact",
        "%x = u16[4] parameter(0)\n %a = s32[4] convert(%x)\n ROOT %b = pred[4] convert(%a)",
        "%x = u16[4] parameter(0)\n ROOT %b = pred[4] convert(%x)",
    );
    // Lossy first steps are refused: f32 -> f16 rounds, s32 -> f32 rounds, u32 -> s32 wraps.
    check_unchanged("%x = f32[4] parameter(0)\n %a = f16[4] convert(%x)\n ROOT %b = f32[4] convert(%a)");
    check_unchanged("%x = s32[4] parameter(0)\n %a = f32[4] convert(%x)\n ROOT %b = f64[4] convert(%a)");
    check_unchanged("%x = u32[4] parameter(0)\n %a = s32[4] convert(%x)\n ROOT %b = s64[4] convert(%a)");
    check_unchanged("%x = bf16[4] parameter(0)\n %a = f16[4] convert(%x)\n ROOT %b = f32[4] convert(%a)");
}

#[test]
fn exact_widening_table() {
    use super::convert::exact_widening;
    use crate::ir::ElementType::*;
    assert!(exact_widening(F16, F32) && exact_widening(BF16, F64) && exact_widening(F32, F64));
    assert!(!exact_widening(F16, BF16) && !exact_widening(BF16, F16) && !exact_widening(F64, F32));
    assert!(
        exact_widening(U8, F16) && exact_widening(S8, BF16) && !exact_widening(U16, F16) && !exact_widening(S16, BF16)
    );
    assert!(
        exact_widening(S16, F32) && exact_widening(S32, F64) && !exact_widening(S32, F32) && !exact_widening(S64, F64)
    );
    assert!(
        exact_widening(U32, S64) && !exact_widening(U32, S32) && !exact_widening(S8, U64) && exact_widening(U8, U16)
    );
    assert!(exact_widening(Pred, BF16) && !exact_widening(S8, Pred) && !exact_widening(F16, S64));
}

// ---- shapes ---------------------------------------------------------------------------

#[test]
fn reshape_same_shape() {
    check(
        "reshape-same-shape",
        "%x = f32[2,3] parameter(0)\n ROOT %r = f32[2,3] reshape(%x)",
        "ROOT %x = f32[2,3] parameter(0)",
    );
}

#[test]
fn reshape_reshape() {
    check(
        "reshape-reshape",
        "%x = f32[2,3] parameter(0)\n %r = f32[3,2] reshape(%x)\n ROOT %s = f32[6] reshape(%r)",
        "%x = f32[2,3] parameter(0)\n ROOT %s = f32[6] reshape(%x)",
    );
    // Back to the original shape: the reshape goes away too.
    check(
        "reshape-same-shape",
        "%x = f32[2,3] parameter(0)\n %r = f32[6] reshape(%x)\n ROOT %s = f32[2,3] reshape(%r)",
        "ROOT %x = f32[2,3] parameter(0)",
    );
}

#[test]
fn broadcast_identity() {
    check(
        "broadcast-identity",
        "%x = s32[2,3] parameter(0)\n ROOT %b = s32[2,3] broadcast(%x), dimensions={0,1}",
        "ROOT %x = s32[2,3] parameter(0)",
    );
    // A size-1 dim expanded, or dims swapped: not the identity.
    check_unchanged("%x = s32[1,3] parameter(0)\n ROOT %b = s32[2,3] broadcast(%x), dimensions={0,1}");
    check_unchanged("%x = s32[3,3] parameter(0)\n ROOT %b = s32[3,3] broadcast(%x), dimensions={1,0}");
}

#[test]
fn broadcast_broadcast() {
    check(
        "broadcast-broadcast",
        "%x = f32[3] parameter(0)\n %b = f32[3,4] broadcast(%x), dimensions={0}\n ROOT %c = f32[2,4,3] broadcast(%b), dimensions={2,1}",
        "%x = f32[3] parameter(0)\n ROOT %c = f32[2,4,3] broadcast(%x), dimensions={2}",
    );
}

#[test]
fn transpose_identity() {
    check(
        "transpose-identity",
        "%x = f32[2,3] parameter(0)\n ROOT %t = f32[2,3] transpose(%x), dimensions={0,1}",
        "ROOT %x = f32[2,3] parameter(0)",
    );
}

#[test]
fn transpose_transpose() {
    check(
        "transpose-transpose",
        "%x = f32[2,3,4] parameter(0)\n %t = f32[3,4,2] transpose(%x), dimensions={1,2,0}\n ROOT %u = f32[4,2,3] transpose(%t), dimensions={1,2,0}",
        "%x = f32[2,3,4] parameter(0)\n ROOT %u = f32[4,2,3] transpose(%x), dimensions={2,0,1}",
    );
    // Inverse permutations cancel.
    check(
        "transpose-transpose",
        "%x = f32[2,3,4] parameter(0)\n %t = f32[3,4,2] transpose(%x), dimensions={1,2,0}\n ROOT %u = f32[2,3,4] transpose(%t), dimensions={2,0,1}",
        "ROOT %x = f32[2,3,4] parameter(0)",
    );
}

#[test]
fn transpose_is_reshape() {
    check(
        "transpose-is-reshape",
        "%x = f32[1,3,1,4] parameter(0)\n ROOT %t = f32[3,1,4,1] transpose(%x), dimensions={1,0,3,2}",
        "%x = f32[1,3,1,4] parameter(0)\n ROOT %t = f32[3,1,4,1] reshape(%x)",
    );
    // Dims 3 and 4 change order: a real transpose.
    check_unchanged("%x = f32[1,3,4] parameter(0)\n ROOT %t = f32[4,3,1] transpose(%x), dimensions={2,1,0}");
}

#[test]
fn shape_op_of_scalar_broadcast() {
    check(
        "shape-op-of-scalar-broadcast",
        "%s = f32[] parameter(0)\n %b = f32[2,3] broadcast(%s), dimensions={}\n ROOT %t = f32[3,2] transpose(%b), dimensions={1,0}",
        "%s = f32[] parameter(0)\n ROOT %t = f32[3,2] broadcast(%s), dimensions={}",
    );
    check(
        "shape-op-of-scalar-broadcast",
        "%s = s32[] parameter(0)\n %b = s32[6] broadcast(%s), dimensions={}\n ROOT %r = s32[2,3] reshape(%b)",
        "%s = s32[] parameter(0)\n ROOT %r = s32[2,3] broadcast(%s), dimensions={}",
    );
}

#[test]
fn reverse_reverse() {
    check(
        "reverse-reverse",
        "%x = f32[2,3] parameter(0)\n %r = f32[2,3] reverse(%x), dimensions={0,1}\n ROOT %s = f32[2,3] reverse(%r), dimensions={1,0}",
        "ROOT %x = f32[2,3] parameter(0)",
    );
    check(
        "reverse-reverse",
        "%x = f32[2,3] parameter(0)\n %r = f32[2,3] reverse(%x), dimensions={0,1}\n ROOT %s = f32[2,3] reverse(%r), dimensions={1}",
        "%x = f32[2,3] parameter(0)\n ROOT %s = f32[2,3] reverse(%x), dimensions={0}",
    );
}

#[test]
fn reverse_trivial_dims() {
    check(
        "reverse-trivial-dims",
        "%x = f32[1,3] parameter(0)\n ROOT %r = f32[1,3] reverse(%x), dimensions={0,1}",
        "%x = f32[1,3] parameter(0)\n ROOT %r = f32[1,3] reverse(%x), dimensions={1}",
    );
    check(
        "reverse-trivial-dims",
        "%x = f32[1,3] parameter(0)\n ROOT %r = f32[1,3] reverse(%x), dimensions={0}",
        "ROOT %x = f32[1,3] parameter(0)",
    );
    check_unchanged("%x = f32[2,3] parameter(0)\n ROOT %r = f32[2,3] reverse(%x), dimensions={0}");
}

#[test]
fn pad_zero() {
    check(
        "pad-zero",
        "%x = f32[2,3] parameter(0)\n %v = f32[] constant(5)\n ROOT %p = f32[2,3] pad(%x, %v), padding=0_0x0_0",
        "ROOT %x = f32[2,3] parameter(0)",
    );
    check_unchanged(
        "%x = f32[2,3] parameter(0)\n %v = f32[] constant(5)\n ROOT %p = f32[2,4] pad(%x, %v), padding=0_0x0_1",
    );
}

#[test]
fn concat_single() {
    check(
        "concat-single",
        "%x = f32[2,3] parameter(0)\n ROOT %c = f32[2,3] concatenate(%x), dimensions={1}",
        "ROOT %x = f32[2,3] parameter(0)",
    );
}

#[test]
fn iota_trivial_dim() {
    check(
        "iota-trivial-dim",
        "ROOT %i = f32[4,1] iota(), iota_dimension=1",
        "%constant.0 = f32[] constant(0)\n ROOT %i = f32[4,1] broadcast(%constant.0), dimensions={}",
    );
    check_unchanged("ROOT %i = s32[4,1] iota(), iota_dimension=0");
}

#[test]
fn gte_of_tuple() {
    check(
        "get-tuple-element-of-tuple",
        "%x = f32[2] parameter(0)\n %y = s32[] parameter(1)\n %t = (f32[2], s32[]) tuple(%x, %y)\n ROOT %g = s32[] get-tuple-element(%t), index=1",
        "%x = f32[2] parameter(0)\n ROOT %y = s32[] parameter(1)",
    );
}

// ---- slices ---------------------------------------------------------------------------

#[test]
fn slice_full() {
    check(
        "slice-full",
        "%x = f32[2,3] parameter(0)\n ROOT %s = f32[2,3] slice(%x), slice={[0:2], [0:3]}",
        "ROOT %x = f32[2,3] parameter(0)",
    );
    check_unchanged("%x = f32[2,3] parameter(0)\n ROOT %s = f32[2,2] slice(%x), slice={[0:2], [1:3]}");
}

#[test]
fn slice_slice() {
    check(
        "slice-slice",
        "%x = f32[20] parameter(0)\n %a = f32[8] slice(%x), slice={[3:19:2]}\n ROOT %b = f32[3] slice(%a), slice={[1:8:3]}",
        "%x = f32[20] parameter(0)\n ROOT %b = f32[3] slice(%x), slice={[5:18:6]}",
    );
}

#[test]
fn slice_of_broadcast() {
    check(
        "slice-of-broadcast",
        "%x = f32[5] parameter(0)\n %b = f32[4,5] broadcast(%x), dimensions={1}\n ROOT %s = f32[2,2] slice(%b), slice={[1:3], [1:5:2]}",
        "%x = f32[5] parameter(0)\n %slice.0 = f32[2] slice(%x), slice={[1:5:2]}\n ROOT %s = f32[2,2] broadcast(%slice.0), dimensions={1}",
    );
    // Only the broadcast's own dims are sliced: no inner slice; a size-1 dim expands.
    check(
        "slice-of-broadcast",
        "%x = f32[1,3] parameter(0)\n %b = f32[4,3,6] broadcast(%x), dimensions={0,1}\n ROOT %s = f32[2,3,1] slice(%b), slice={[1:3], [0:3], [5:6]}",
        "%x = f32[1,3] parameter(0)\n ROOT %s = f32[2,3,1] broadcast(%x), dimensions={0,1}",
    );
}

#[test]
fn slice_of_concat() {
    check(
        "slice-of-concat",
        "%a = f32[2,3] parameter(0)\n %b = f32[2,4] parameter(1)\n %c = f32[2,7] concatenate(%a, %b), dimensions={1}\n ROOT %s = f32[1,2] slice(%c), slice={[1:2], [4:7:2]}",
        "%a = f32[2,3] parameter(0)\n %b = f32[2,4] parameter(1)\n ROOT %s = f32[1,2] slice(%b), slice={[1:2], [1:4:2]}",
    );
    // Exactly one operand: the slice goes away.
    check(
        "slice-of-concat",
        "%a = f32[3] parameter(0)\n %b = f32[4] parameter(1)\n %c = f32[7] concatenate(%a, %b), dimensions={0}\n ROOT %s = f32[3] slice(%c), slice={[0:3]}",
        "ROOT %a = f32[3] parameter(0)\n %b = f32[4] parameter(1)",
    );
    // Elements from both operands.
    check_unchanged("%a = f32[3] parameter(0)\n %b = f32[4] parameter(1)\n %c = f32[7] concatenate(%a, %b), dimensions={0}\n ROOT %s = f32[2] slice(%c), slice={[2:4]}");
}

#[test]
fn dynamic_slice_constant() {
    // Start 5 clamps to 4 - 2 = 2; -3 clamps to 0.
    check(
        "dynamic-slice-constant",
        "%x = s32[4,6] parameter(0)\n %i = s32[] constant(5)\n %j = s32[] constant(-3)\n ROOT %d = s32[2,3] dynamic-slice(%x, %i, %j), dynamic_slice_sizes={2,3}",
        "%x = s32[4,6] parameter(0)\n ROOT %d = s32[2,3] slice(%x), slice={[2:4], [0:3]}",
    );
    check_unchanged("%x = s32[4] parameter(0)\n %i = s32[] parameter(1)\n ROOT %d = s32[2] dynamic-slice(%x, %i), dynamic_slice_sizes={2}");
}

#[test]
fn dynamic_update_slice_full() {
    check(
        "dynamic-update-slice-full",
        "%x = f32[2,3] parameter(0)\n %u = f32[2,3] parameter(1)\n %i = s32[] parameter(2)\n ROOT %d = f32[2,3] dynamic-update-slice(%x, %u, %i, %i)",
        "%x = f32[2,3] parameter(0)\n ROOT %u = f32[2,3] parameter(1)\n %i = s32[] parameter(2)",
    );
    check_unchanged("%x = f32[2,3] parameter(0)\n %u = f32[1,3] parameter(1)\n %i = s32[] parameter(2)\n ROOT %d = f32[2,3] dynamic-update-slice(%x, %u, %i, %i)");
}

// ---- reductions -----------------------------------------------------------------------

#[test]
fn reduce_no_dims() {
    check_with(
        ADD_F32,
        "reduce-no-dims",
        "%x = f32[3] parameter(0)\n %z = f32[] constant(-0)\n ROOT %r = f32[3] reduce(%x, %z), dimensions={}, to_apply=%add",
        "ROOT %x = f32[3] parameter(0)",
    );
    check_with(
        ADD_S32,
        "reduce-no-dims",
        "%x = s32[3] parameter(0)\n %z = s32[] constant(0)\n ROOT %r = s32[3] reduce(%x, %z), dimensions={}, to_apply=%adds",
        "ROOT %x = s32[3] parameter(0)",
    );
    // +0.0 + -0.0 is +0.0: an init of +0.0 must stay; so must any other init.
    check_unchanged_with(ADD_F32, "%x = f32[3] parameter(0)\n %z = f32[] constant(0)\n ROOT %r = f32[3] reduce(%x, %z), dimensions={}, to_apply=%add");
    check_unchanged_with(ADD_S32, "%x = s32[3] parameter(0)\n %z = s32[] constant(1)\n ROOT %r = s32[3] reduce(%x, %z), dimensions={}, to_apply=%adds");
}

#[test]
fn reduce_trivial_dims() {
    check_with(
        ADD_F32,
        "reduce-trivial-dims",
        "%x = f32[3,1,2] parameter(0)\n %z = f32[] constant(-0)\n ROOT %r = f32[3,2] reduce(%x, %z), dimensions={1}, to_apply=%add",
        "%x = f32[3,1,2] parameter(0)\n ROOT %r = f32[3,2] reshape(%x)",
    );
    check_with(
        AND_PRED,
        "reduce-trivial-dims",
        "%x = pred[6,1,1] parameter(0)\n %t = pred[] constant(true)\n ROOT %r = pred[6] reduce(%x, %t), dimensions={1,2}, to_apply=%and",
        "%x = pred[6,1,1] parameter(0)\n ROOT %r = pred[6] reshape(%x)",
    );
    // +0.0 is not the identity of float add (+0.0 + -0.0 is +0.0); a dimension of size 2
    // really reduces; a dimension of size 0 makes every result element the init.
    check_unchanged_with(ADD_F32, "%x = f32[3,1] parameter(0)\n %z = f32[] constant(0)\n ROOT %r = f32[3] reduce(%x, %z), dimensions={1}, to_apply=%add");
    check_unchanged_with(ADD_F32, "%x = f32[3,2] parameter(0)\n %z = f32[] constant(-0)\n ROOT %r = f32[3] reduce(%x, %z), dimensions={1}, to_apply=%add");
    check_unchanged_with(ADD_F32, "%x = f32[3,0] parameter(0)\n %z = f32[] constant(-0)\n ROOT %r = f32[3] reduce(%x, %z), dimensions={1}, to_apply=%add");
}

#[test]
fn reduce_of_broadcast() {
    check_with(
        MAX_F32,
        "reduce-of-broadcast",
        "%x = f32[3] parameter(0)\n %b = f32[4,3] broadcast(%x), dimensions={1}\n %m = f32[] constant(-inf)\n ROOT %r = f32[3] reduce(%b, %m), dimensions={0}, to_apply=%max",
        "ROOT %x = f32[3] parameter(0)",
    );
    // Summing copies multiplies: refused for add.
    check_unchanged_with(
        ADD_F32,
        "%x = f32[3] parameter(0)\n %b = f32[4,3] broadcast(%x), dimensions={1}\n %m = f32[] constant(-0)\n ROOT %r = f32[3] reduce(%b, %m), dimensions={0}, to_apply=%add",
    );
    // Reducing a dim that came from x: refused.
    check_unchanged_with(
        MAX_F32,
        "%x = f32[3] parameter(0)\n %b = f32[4,3] broadcast(%x), dimensions={1}\n %m = f32[] constant(-inf)\n ROOT %r = f32[4] reduce(%b, %m), dimensions={1}, to_apply=%max",
    );
}

// ---- the driver -----------------------------------------------------------------------

#[test]
fn chains_reach_a_fixed_point_and_log_every_rule() {
    let m = module(
        "",
        "%x = f32[2,3] parameter(0)\n %t = f32[3,2] transpose(%x), dimensions={1,0}\n %u = f32[2,3] transpose(%t), dimensions={1,0}\n \
         %n = f32[2,3] negate(%u)\n %z = f32[] constant(-0)\n %bz = f32[2,3] broadcast(%z), dimensions={}\n %a = f32[2,3] add(%bz, %n)\n \
         ROOT %m = f32[2,3] negate(%a)",
    );
    let (after, log, changed) = simplify(&m);
    assert!(changed);
    assert_eq!(entry_text(&after), "ROOT %x = f32[2,3] parameter(0)");
    let rules: Vec<(&str, &str)> = log.rewrites.iter().map(|r| (r.rule, r.inst.as_str())).collect();
    assert_eq!(
        rules,
        vec![
            ("transpose-transpose", "u"),
            ("constant-to-rhs", "a"),
            ("transpose-identity", "u"),
            ("add-zero", "a"),
            ("neg-neg", "m"),
        ]
    );
    assert_same_results(&m, &after, 50);
}

#[test]
fn rewrites_keep_the_loc() {
    let mut m =
        module("", "%x = f32[4] parameter(0)\n %c = f32[4] constant({1, 2, 3, 4})\n ROOT %m = f32[4] multiply(%c, %x)");
    let root = m.entry_comp().root;
    m.comp_mut(m.entry).inst_mut(root).loc = crate::ir::Loc::at(7, 3);
    let (after, _, _) = simplify(&m);
    let inst = after.entry_comp().root_inst();
    assert_eq!((inst.name.as_str(), inst.loc.line, inst.loc.col), ("m", 7, 3));
}

#[test]
fn rule_names_are_unique_and_many() {
    let mut names: Vec<&str> = super::RULES.iter().map(|r| r.name).collect();
    let n = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), n, "duplicate rule names");
    assert!(n >= 30, "{n} rules");
}

#[test]
fn random_inputs_cover_special_values() {
    let mut rng = XorShift(7);
    let l = random_literal(&mut rng, &Shape::new(crate::ir::ElementType::F32, vec![400]));
    let v = l.to_f64_vec();
    assert!(v.iter().any(|x| x.is_nan()) && v.iter().any(|x| *x == 0.0 && x.is_sign_negative()));
    assert!(v.contains(&f64::INFINITY) && v.contains(&f64::NEG_INFINITY));
    let l = random_literal(&mut rng, &Shape::new(crate::ir::ElementType::S8, vec![200]));
    assert!(l.to_f64_vec().contains(&-128.0) && l.to_f64_vec().contains(&127.0));
}

#[test]
fn the_meaning_check_catches_a_wrong_rewrite() {
    // `x + 0.0 -> x` is wrong for x = -0.0; the random inputs include -0.0, so the check
    // must notice.
    let before = module(
        "",
        "%x = f32[8] parameter(0)\n %z = f32[8] constant({0, 0, 0, 0, 0, 0, 0, 0})\n ROOT %a = f32[8] add(%x, %z)",
    );
    let after = module("", "ROOT %x = f32[8] parameter(0)");
    let caught = std::panic::catch_unwind(|| assert_same_results(&before, &after, 20));
    assert!(caught.is_err());
}

#[test]
fn malformed_instructions_are_skipped_not_a_panic() {
    use crate::ir::{Instruction, Loc, Op, UnaryOp};
    // negate(negate()) with the inner negate missing its operand, and a transpose whose
    // permutation does not fit its operand: neither may crash the pass.
    let mut m = module("", "%x = f32[2,3] parameter(0)\n %t = f32[3,2] transpose(%x), dimensions={1,0}\n ROOT %u = f32[2,3] transpose(%t), dimensions={1,0}");
    let e = m.entry;
    let c = m.comp_mut(e);
    let t = c.order[1];
    if let Op::Transpose { perm } = &mut c.inst_mut(t).op {
        perm.push(2);
    }
    let ty = c.inst(t).ty.clone();
    let bad = c.push(Instruction {
        name: "bad".into(),
        op: Op::Unary(UnaryOp::Neg),
        operands: vec![],
        ty: ty.clone(),
        loc: Loc::default(),
    });
    let n = c.push(Instruction {
        name: "n".into(),
        op: Op::Unary(UnaryOp::Neg),
        operands: vec![bad],
        ty: ty.clone(),
        loc: Loc::default(),
    });
    let root = c.root;
    let tuple_ty = Type::Tuple(vec![c.inst(root).ty.clone(), ty]);
    c.root = c.push(Instruction {
        name: "r".into(),
        op: Op::Tuple,
        operands: vec![root, n],
        ty: tuple_ty,
        loc: Loc::default(),
    });
    let (_, log, changed) = simplify(&m);
    assert!(!changed, "{:?}", log.rewrites);
}

/// Builds a random module over `elem`: two parameters, then `steps` instructions, each
/// an elementwise op, a compare and select, a convert round trip or a data-movement
/// pair, with operands drawn from earlier values and from constants the rules look for
/// (0, -0, 1, ±inf, the integer extremes).
fn random_module(rng: &mut XorShift, elem: crate::ir::ElementType, steps: usize) -> Module {
    use crate::interp::testutil::TestModule;
    use crate::ir::{BinaryOp, CmpDir, ElementType::*, InstId, Op, UnaryOp};
    let dims = [2i64, 3];
    let t = Type::array(elem, dims);
    let specials: Vec<f64> = if elem.is_float() {
        vec![0.0, -0.0, 1.0, -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 2.0]
    } else if elem.is_pred() {
        vec![0.0, 1.0]
    } else if elem.is_signed_int() {
        vec![0.0, 1.0, -1.0, -2147483648.0, 2147483647.0]
    } else {
        vec![0.0, 1.0, 255.0]
    };
    let binops: Vec<BinaryOp> = if elem.is_float() {
        vec![BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min]
    } else if elem.is_pred() {
        vec![BinaryOp::Add, BinaryOp::Mul, BinaryOp::And, BinaryOp::Or, BinaryOp::Xor, BinaryOp::Max, BinaryOp::Min]
    } else {
        use BinaryOp::*;
        vec![Add, Sub, Mul, Div, Max, Min, And, Or, Xor, ShiftLeft, ShiftRightLogical]
    };
    let unops: Vec<UnaryOp> = if elem.is_float() {
        vec![UnaryOp::Neg, UnaryOp::Abs]
    } else if elem.is_pred() {
        vec![UnaryOp::Not]
    } else {
        vec![UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Not]
    };
    let pick = |rng: &mut XorShift, n: usize| (rng.next() % n as u64) as usize;
    let mut r = XorShift(rng.next() | 1);
    TestModule::new().finish_with_entry(&[t.clone(), t.clone()], |b, p| {
        let mut pool: Vec<InstId> = p.to_vec();
        let constant = |b: &mut crate::interp::testutil::CompBuilder, r: &mut XorShift| -> InstId {
            let v = specials[pick(r, specials.len())];
            if r.next().is_multiple_of(2) {
                let s = b.constant(Literal::from_f64s(Shape::scalar(elem), &[v]));
                b.op(Op::BroadcastInDim { dims: vec![] }, &[s], t.clone())
            } else {
                b.constant(Literal::from_f64s(Shape::new(elem, dims), &[v; 6]))
            }
        };
        for _ in 0..steps {
            let x = pool[pick(&mut r, pool.len())];
            let y = if r.next().is_multiple_of(3) { constant(b, &mut r) } else { pool[pick(&mut r, pool.len())] };
            let (x, y) = if r.next().is_multiple_of(2) { (x, y) } else { (y, x) };
            let v = match pick(&mut r, 6) {
                0 | 1 => b.op(Op::Binary(binops[pick(&mut r, binops.len())]), &[x, y], t.clone()),
                2 => b.op(Op::Unary(unops[pick(&mut r, unops.len())]), &[x], t.clone()),
                3 => {
                    let dir = [CmpDir::Eq, CmpDir::Lt, CmpDir::Ge, CmpDir::Ne][pick(&mut r, 4)];
                    let rhs = if r.next().is_multiple_of(2) { x } else { y };
                    let c = b.op(Op::Compare { dir, kind: None }, &[x, rhs], Type::array(Pred, dims));
                    b.op(Op::Select, &[c, x, y], t.clone())
                }
                4 => {
                    let wide = if elem.is_float() {
                        F64
                    } else if elem.is_pred() {
                        S8
                    } else {
                        S64
                    };
                    let mid = [wide, F32, F16, elem][pick(&mut r, 4)];
                    let a = b.op(Op::Convert, &[x], Type::array(mid, dims));
                    b.op(Op::Convert, &[a], t.clone())
                }
                _ => {
                    let tr = b.op(Op::Transpose { perm: vec![1, 0] }, &[x], Type::array(elem, [3, 2]));
                    let back = if r.next().is_multiple_of(2) {
                        b.op(Op::Transpose { perm: vec![1, 0] }, &[tr], t.clone())
                    } else {
                        let rev = b.op(Op::Reverse { dims: vec![0, 1] }, &[tr], Type::array(elem, [3, 2]));
                        let rev = b.op(Op::Reverse { dims: vec![1, 0] }, &[rev], Type::array(elem, [3, 2]));
                        b.op(Op::Reshape, &[rev], t.clone())
                    };
                    let s = b.op(
                        Op::Slice { start: vec![0, 0], limit: vec![2, 3], stride: vec![1, 1] },
                        &[back],
                        t.clone(),
                    );
                    b.op(Op::Reverse { dims: vec![0] }, &[s], t.clone())
                }
            };
            pool.push(v);
        }
        let last = *pool.last().unwrap();
        let other = pool[pick(&mut r, pool.len())];
        b.tuple(&[last, other])
    })
}

#[test]
fn random_modules_keep_their_meaning_through_simplify_and_fold() {
    use crate::ir::ElementType::*;
    use crate::passes::{constant_fold::ConstantFold, dce::Dce};
    let mut rng = XorShift(0x5EED);
    let mut fired = std::collections::BTreeSet::new();
    for round in 0..1000 {
        let elem = [F32, S32, U8, Pred, BF16, S8][round % 6];
        let before = random_module(&mut rng, elem, 8);
        let mut after = before.clone();
        let mut log = PassLog::default();
        for _ in 0..2 {
            AlgebraicSimplifier::default().run(&mut after, &mut log);
            ConstantFold::default().run(&mut after, &mut log);
            Dce.run(&mut after, &mut log);
        }
        fired.extend(log.rewrites.iter().map(|r| r.rule));
        let same = std::panic::catch_unwind(|| assert_same_results(&before, &after, 12));
        if same.is_err() {
            let opts = PrintOptions { metadata: false };
            let text = |m: &Module| print_computation(m, m.entry, &opts);
            panic!(
                "module {round} changed meaning\nbefore:\n{}\nafter:\n{}\nrules: {:?}",
                text(&before),
                text(&after),
                log.rewrites
            );
        }
    }
    // The generator reaches a good part of the rule table (so the check is not vacuous).
    assert!(fired.len() >= 30, "only {} rules fired: {fired:?}", fired.len());
}

#[test]
fn later_rounds_visit_enough_to_reach_the_fixed_point() {
    // Rounds after the first revisit only what the previous round touched: if that set
    // missed an instruction whose view changed, a fresh full round (a second run's
    // first) would still find a rewrite. On random modules none must.
    use crate::ir::ElementType::*;
    let mut rng = XorShift(0xF1CED);
    let mut rewrites = 0;
    let mut several_rounds = 0;
    for round in 0..1000 {
        let elem = [F32, S32, U8, Pred, BF16, S8][round % 6];
        let mut m = random_module(&mut rng, elem, 12);
        let mut log = PassLog::default();
        AlgebraicSimplifier { max_rounds: 64 }.run(&mut m, &mut log);
        rewrites += log.rewrites.len();
        several_rounds += usize::from(log.rewrites.len() >= 2);
        let before = entry_text(&m);
        let mut again = PassLog::default();
        let changed = AlgebraicSimplifier { max_rounds: 1 }.run(&mut m, &mut again);
        assert!(
            !changed && again.rewrites.is_empty(),
            "module {round}: a full round still rewrote {:?} after\n{before}",
            again.rewrites
        );
    }
    // The modules give later rounds work (so the check is not vacuous).
    assert!(rewrites > 1000 && several_rounds > 200, "{rewrites} rewrites, {several_rounds} modules with several");
}

#[test]
fn the_rules_op_filter_changes_no_rewrite() {
    // The driver tries a rule only on the ops it names: the same table with every rule
    // tried on every op must rewrite the same instructions the same way.
    use crate::ir::ElementType::*;
    use crate::passes::rewrite::{run_rules, Rule};
    let unfiltered: Vec<Rule> = super::RULES.iter().map(|r| Rule { ops: &[], ..*r }).collect();
    let mut rng = XorShift(0x0F17E5);
    let mut rewrites = 0;
    for round in 0..600 {
        let elem = [F32, S32, U8, Pred, BF16, S8][round % 6];
        let m = random_module(&mut rng, elem, 10);
        let (mut filtered, mut all) = (m.clone(), m);
        let (mut log_f, mut log_a) = (PassLog::default(), PassLog::default());
        run_rules(super::RULES, 8, &mut filtered, &mut log_f);
        run_rules(&unfiltered, 8, &mut all, &mut log_a);
        assert_eq!(log_f.rewrites, log_a.rewrites, "module {round}");
        assert_eq!(entry_text(&filtered), entry_text(&all), "module {round}");
        rewrites += log_f.rewrites.len();
    }
    assert!(rewrites > 500, "{rewrites} rewrites: the modules must give the rules work");
}

#[test]
fn simplifies_inside_called_computations() {
    // The reduce body computes max(a, neg(neg(b))): the body is simplified to max(a, b),
    // after which the reduce over no dims with init -inf is recognized and dropped.
    let body = "%body (a: f32[], b: f32[]) -> f32[] {\n %a = f32[] parameter(0)\n %b = f32[] parameter(1)\n \
                %n = f32[] negate(%b)\n %nn = f32[] negate(%n)\n ROOT %r = f32[] maximum(%a, %nn)\n}\n";
    let m = module(body, "%x = f32[3] parameter(0)\n %i = f32[] constant(-inf)\n ROOT %r = f32[3] reduce(%x, %i), dimensions={}, to_apply=%body");
    let (after, log, changed) = simplify(&m);
    assert!(changed);
    let rules: Vec<&str> = log.rewrites.iter().map(|r| r.rule).collect();
    assert_eq!(rules, vec!["neg-neg", "reduce-no-dims"]);
    assert_eq!(entry_text(&after), "ROOT %x = f32[3] parameter(0)");
    assert_same_results(&m, &after, 40);
}
