//! Tests of the CHLO decompositions (`parse::chlo::decompose`).
//!
//! Each test builds a module around one `chlo.*` op in Rust, runs the reference
//! interpreter on it and compares the results with hand-checked values or with what XLA
//! computes (`chlo_data/xla_reference.rs`, generated from JAX on the CPU by
//! `chlo_data/gen_reference.py`), within the ULP distance the conformance corpus uses.

use hloscope_core::interp;
use hloscope_core::ir::{
    CompId, Computation, ElementType, InstId, Literal, Loc, Module, Op, Scalar, Shape, Type, Value,
};
use hloscope_core::parse::chlo::{decompose, ChloAttrs, RaggedDotDims};

use crate::corpus;
#[path = "chlo_data/xla_reference.rs"]
mod xla_reference;

use ElementType::*;

/// Builds `main(args...) = chlo.<name>(args...)` and returns the module.
fn build(name: &str, arg_types: &[Type], results: &[Type], attrs: &ChloAttrs) -> Result<Module, String> {
    let mut m = Module::new("chlo_test");
    let mut comp = Computation::new("main");
    let params: Vec<InstId> = arg_types
        .iter()
        .enumerate()
        .map(|(i, t)| comp.push_param(format!("p{i}"), t.clone(), Loc::default()))
        .collect();
    let c: CompId = m.add_computation(comp);
    m.entry = c;
    let outs = decompose(&mut m, c, name, &params, results, attrs, &Loc::at(3, 5))?;
    let root = if outs.len() == 1 {
        outs[0]
    } else {
        let ty = Type::Tuple(outs.iter().map(|&o| m.comp(c).inst(o).ty.clone()).collect());
        m.comp_mut(c).push(hloscope_core::ir::Instruction {
            name: "tuple".into(),
            op: Op::Tuple,
            operands: outs,
            ty,
            loc: Loc::default(),
        })
    };
    m.comp_mut(c).root = root;
    Ok(m)
}

/// Runs `chlo.<name>` on `args`; the result types are given explicitly.
fn run(name: &str, args: &[Literal], results: &[Type], attrs: &ChloAttrs) -> Vec<Literal> {
    let types: Vec<Type> = args.iter().map(|a| Type::Array(a.shape.clone())).collect();
    let m = build(name, &types, results, attrs).unwrap_or_else(|e| panic!("decompose chlo.{name}: {e}"));
    for inst in m.entry_comp().order.iter().map(|&i| m.entry_comp().inst(i)) {
        assert_eq!(
            inst.loc,
            if matches!(inst.op, Op::Parameter(_) | Op::Tuple) { inst.loc.clone() } else { Loc::at(3, 5) }
        );
    }
    let vals: Vec<Value> = args.iter().cloned().map(Value::Array).collect();
    let out = interp::run(&m, &vals).unwrap_or_else(|e| panic!("run chlo.{name}: {e}"));
    out.flatten()
}

/// Runs a unary op whose result has the operand's type.
fn run1(name: &str, x: Literal) -> Literal {
    let ty = Type::Array(x.shape.clone());
    run(name, &[x], &[ty], &ChloAttrs::default()).remove(0)
}

fn floats(elem: ElementType, v: &[f64]) -> Literal {
    Literal::from_f64s(Shape::new(elem, vec![v.len() as i64]), v)
}
fn ints(elem: ElementType, dims: &[i64], v: &[i64]) -> Literal {
    Literal::from_i64s(Shape::new(elem, dims), v)
}
fn arr(elem: ElementType, dims: &[i64]) -> Type {
    Type::array(elem, dims)
}

/// The conformance corpus' ULP distance: on the bit patterns of |a| and |b|, the
/// difference when the signs agree and the sum otherwise; NaN/NaN is 0 and any other
/// non-finite pair must be identical.
fn ulp_distance(a: f64, b: f64, elem: ElementType) -> u64 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    if !a.is_finite() || !b.is_finite() {
        return if a.to_bits() == b.to_bits() { 0 } else { u64::MAX };
    }
    let mag = |v: f64| -> u64 {
        match elem {
            F32 => (v.abs() as f32).to_bits() as u64,
            F64 => v.abs().to_bits(),
            F16 => half::f16::from_f64(v.abs()).to_bits() as u64,
            _ => half::bf16::from_f64(v.abs()).to_bits() as u64,
        }
    };
    let (ma, mb) = (mag(a), mag(b));
    if a.is_sign_negative() == b.is_sign_negative() || ma == 0 || mb == 0 {
        ma.abs_diff(mb)
    } else {
        ma + mb
    }
}

/// Checks `op` on the reference inputs against XLA, f32 and f64: each result within
/// `max_ulp` ULP (3 is what `check.expect_close` allows) or, failing that, within
/// `rel` times max(1, |XLA's result|). The relative escape is for the ops the corpus
/// checks with an absolute tolerance (`check.expect_almost_eq`): XLA rewrites their
/// decompositions (division by a constant becomes a multiplication by its reciprocal),
/// so sums that cancel to ~0, as lgamma(2), differ in the last bits.
fn check_vs_xla(op: &str, max_ulp: u64, rel: f64) {
    for elem in [F32, F64] {
        let (xs, ys): (Vec<f64>, Vec<f64>) = match elem {
            F32 => {
                let (_, x, y) = xla_reference::F32.iter().find(|e| e.0 == op).expect("reference op");
                (
                    x.iter().map(|&b| f32::from_bits(b) as f64).collect(),
                    y.iter().map(|&b| f32::from_bits(b) as f64).collect(),
                )
            }
            _ => {
                let (_, x, y) = xla_reference::F64.iter().find(|e| e.0 == op).expect("reference op");
                (x.iter().map(|&b| f64::from_bits(b)).collect(), y.iter().map(|&b| f64::from_bits(b)).collect())
            }
        };
        let got = run1(op, floats(elem, &xs)).to_f64_vec();
        for ((&x, &want), &g) in xs.iter().zip(&ys).zip(&got) {
            let d = ulp_distance(g, want, elem);
            let close = want.is_finite() && (g - want).abs() <= rel * want.abs().max(1.0);
            assert!(d <= max_ulp || close, "chlo.{op} {elem}: x = {x:e}: got {g:e}, XLA {want:e} ({d} ULP)");
        }
    }
}

#[test]
fn lgamma_matches_xla() {
    check_vs_xla("lgamma", 3, 1e-6);
}
#[test]
fn digamma_matches_xla() {
    check_vs_xla("digamma", 3, 1e-6);
}
#[test]
fn erf_matches_xla() {
    check_vs_xla("erf", 3, 0.0);
}
#[test]
fn erfc_matches_xla() {
    check_vs_xla("erfc", 3, 0.0);
}
#[test]
fn erf_inv_matches_xla() {
    check_vs_xla("erf_inv", 3, 0.0);
}
#[test]
fn bessel_i1e_matches_xla() {
    check_vs_xla("bessel_i1e", 3, 1e-6);
}
#[test]
fn tan_matches_xla() {
    check_vs_xla("tan", 3, 0.0);
}
#[test]
fn sinh_cosh_match_xla() {
    check_vs_xla("sinh", 3, 0.0);
    check_vs_xla("cosh", 3, 0.0);
}
#[test]
fn inverse_trig_matches_xla() {
    for op in ["asin", "acos", "atan", "asinh", "acosh", "atanh"] {
        check_vs_xla(op, 3, 0.0);
    }
}

#[test]
fn next_after_matches_xla_bitwise() {
    let (x, y, r) = xla_reference::NEXT_AFTER_32;
    let xs: Vec<f64> = x.iter().map(|&b| f32::from_bits(b) as f64).collect();
    let ys: Vec<f64> = y.iter().map(|&b| f32::from_bits(b) as f64).collect();
    let t = arr(F32, &[xs.len() as i64]);
    let got = run("next_after", &[floats(F32, &xs), floats(F32, &ys)], &[t], &ChloAttrs::default()).remove(0);
    for (i, (&g, &want)) in got.to_f64_vec().iter().zip(r.iter()).enumerate() {
        let want = f32::from_bits(want);
        assert!(
            (g as f32).to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
            "next_after({}, {}) = {g:e}, XLA {want:e}",
            xs[i],
            ys[i]
        );
    }
    let (x, y, r) = xla_reference::NEXT_AFTER_64;
    let xs: Vec<f64> = x.iter().map(|&b| f64::from_bits(b)).collect();
    let ys: Vec<f64> = y.iter().map(|&b| f64::from_bits(b)).collect();
    let t = arr(F64, &[xs.len() as i64]);
    let got = run("next_after", &[floats(F64, &xs), floats(F64, &ys)], &[t], &ChloAttrs::default()).remove(0);
    for (i, (&g, &want)) in got.to_f64_vec().iter().zip(r.iter()).enumerate() {
        let want = f64::from_bits(want);
        assert!(
            g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
            "next_after({}, {}) = {g:e}",
            xs[i],
            ys[i]
        );
    }
}

#[test]
fn next_after_half_types_step_one_ulp() {
    // 1.0 toward 2: f16 1 + 2^-10, bf16 1 + 2^-7; 0 toward -1: minus the smallest subnormal.
    for (elem, step, tiny) in [(F16, 2f64.powi(-10), 2f64.powi(-24)), (BF16, 2f64.powi(-7), 2f64.powi(-133))] {
        let t = arr(elem, &[2]);
        let got =
            run("next_after", &[floats(elem, &[1.0, 0.0]), floats(elem, &[2.0, -1.0])], &[t], &ChloAttrs::default());
        assert_eq!(got[0].to_f64_vec(), vec![1.0 + step, -tiny], "{elem}");
    }
}

#[test]
fn lgamma_and_digamma_hand_values() {
    // lgamma(1) = lgamma(2) = 0, lgamma(0.5) = ln(sqrt(pi)); poles give +inf.
    let g = run1("lgamma", floats(F64, &[1.0, 2.0, 0.5, 0.0, -3.0, f64::NEG_INFINITY])).to_f64_vec();
    assert!(g[0].abs() < 1e-15 && g[1].abs() < 1e-15, "{g:?}");
    assert!((g[2] - 0.5723649429247001).abs() < 1e-15);
    assert_eq!(&g[3..], &[f64::INFINITY, f64::INFINITY, f64::INFINITY]);
    // digamma(1) = -euler_gamma; NaN at 0 and the negative integers.
    let d = run1("digamma", floats(F64, &[1.0, 0.0, -2.0])).to_f64_vec();
    assert!((d[0] + 0.5772156649015329).abs() < 1e-14, "{d:?}");
    assert!(d[1].is_nan() && d[2].is_nan());
}

#[test]
fn half_precision_is_computed_in_f32() {
    // lgamma(3) = ln 2 rounds to f16 0.6929 (0x398c) and to bf16 0.69140625.
    let h = run1("lgamma", floats(F16, &[3.0, 0.5]));
    assert_eq!(h.shape.elem, F16);
    assert_eq!(h.to_f64_vec()[0], half::f16::from_f64(2f64.ln()).to_f64());
    let b = run1("erf_inv", floats(BF16, &[0.5]));
    assert_eq!(b.to_f64_vec()[0], half::bf16::from_f64(0.4769362762044699).to_f64());
}

#[test]
fn polygamma_and_zeta() {
    // zeta(2, 1) = pi^2/6; polygamma(1, 1) = pi^2/6; polygamma(0, x) = digamma(x).
    let t = arr(F64, &[1]);
    let z = run("zeta", &[floats(F64, &[2.0]), floats(F64, &[1.0])], std::slice::from_ref(&t), &ChloAttrs::default());
    assert!((z[0].to_f64_vec()[0] - std::f64::consts::PI.powi(2) / 6.0).abs() < 1e-14);
    let p =
        run("polygamma", &[floats(F64, &[1.0]), floats(F64, &[1.0])], std::slice::from_ref(&t), &ChloAttrs::default());
    assert!((p[0].to_f64_vec()[0] - std::f64::consts::PI.powi(2) / 6.0).abs() < 1e-13);
    let p =
        run("polygamma", &[floats(F64, &[0.0]), floats(F64, &[1.0])], std::slice::from_ref(&t), &ChloAttrs::default());
    assert!((p[0].to_f64_vec()[0] + 0.5772156649015329).abs() < 1e-14);
    // polygamma(2, 3) = -2 zeta(3, 3) = -2 (zeta(3) - 1 - 1/8) = -0.1541138063191886.
    let p = run("polygamma", &[floats(F64, &[2.0]), floats(F64, &[3.0])], &[t], &ChloAttrs::default());
    assert!((p[0].to_f64_vec()[0] + 0.1541138063191886).abs() < 1e-13, "{:?}", p[0]);
}

#[test]
fn mulhi_all_integer_widths() {
    // (type, lhs, rhs, expected high halves)
    type Case<'a> = (ElementType, &'a [i64], &'a [i64], &'a [i64]);
    let cases: &[Case] = &[
        // 64*4 = 0x100 -> 1; -64*4 = -256 -> -1; -64*-4 -> 1.
        (S8, &[64, -64, -64], &[4, 4, -4], &[1, -1, 1]),
        (U8, &[240, 128], &[16, 2], &[15, 1]),
        (S16, &[16384, -16384], &[8, 8], &[2, -2]),
        (U32, &[0xFFFF_FFFF, 0x8000_0000], &[0xFFFF_FFFF, 2], &[0xFFFF_FFFE, 1]),
        (S32, &[i32::MIN as i64, 0x4000_0000], &[i32::MIN as i64, -4], &[0x4000_0000, -1]),
        // (2^64-1)^2 >> 64 = 2^64 - 2; 2^63 * 4 >> 64 = 2.
        (U64, &[-1, i64::MIN], &[-1, 4], &[-2, 2]),
        // i64::MIN^2 = 2^126 -> 2^62; -1 * 5 = -5 -> high word -1; 2^62 * 8 = 2^65 -> 2.
        (S64, &[i64::MIN, -1, 1 << 62], &[i64::MIN, 5, 8], &[1 << 62, -1, 2]),
    ];
    for &(elem, a, b, want) in cases {
        let n = a.len() as i64;
        let got = run("mulhi", &[ints(elem, &[n], a), ints(elem, &[n], b)], &[arr(elem, &[n])], &ChloAttrs::default());
        assert_eq!(got[0], ints(elem, &[n], want), "mulhi {elem}");
    }
}

#[test]
fn top_k_values_and_indices() {
    let x = Literal::from_f64s(Shape::new(F32, vec![2, 4]), &[1.0, 3.0, 3.0, -1.0, f64::NAN, 0.0, -0.0, 5.0]);
    let attrs = ChloAttrs { k: Some(3), ..Default::default() };
    let out = run("top_k", &[x], &[arr(F32, &[2, 3]), arr(S32, &[2, 3])], &attrs);
    // Ties keep the lower index first; the total order puts NaN above everything and
    // +0 above -0.
    let v = out[0].to_f64_vec();
    assert_eq!(&v[..3], &[3.0, 3.0, 1.0]);
    assert!(v[3].is_nan() && v[4] == 5.0 && v[5] == 0.0 && v[5].is_sign_positive());
    assert_eq!(out[1], ints(S32, &[2, 3], &[1, 2, 0, 0, 3, 1]));
    // Smallest, integers, k larger than the row.
    let attrs = ChloAttrs { k: Some(9), largest: Some(false), ..Default::default() };
    let out = run("top_k", &[ints(U8, &[3], &[7, 200, 3])], &[arr(U8, &[3]), arr(S32, &[3])], &attrs);
    assert_eq!(out[0], ints(U8, &[3], &[3, 7, 200]));
    assert_eq!(out[1], ints(S32, &[3], &[2, 0, 1]));
}

#[test]
fn broadcast_binary_ops() {
    // [2,3] + [3] (numpy), and [3] * [2,3] with explicit broadcast_dimensions.
    let a = Literal::from_f64s(Shape::new(F32, vec![2, 3]), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = floats(F32, &[10.0, 20.0, 30.0]);
    let out = run("broadcast_add", &[a.clone(), b.clone()], &[arr(F32, &[2, 3])], &ChloAttrs::default());
    assert_eq!(out[0].to_f64_vec(), vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
    let c = floats(F32, &[2.0, 3.0]);
    let attrs = ChloAttrs { broadcast_dimensions: Some(vec![0]), ..Default::default() };
    let out = run("broadcast_multiply", &[c, a.clone()], &[arr(F32, &[2, 3])], &attrs);
    assert_eq!(out[0].to_f64_vec(), vec![2.0, 4.0, 6.0, 12.0, 15.0, 18.0]);
    // Degenerate dims: [2,1] - [1,3] -> [2,3].
    let col = Literal::from_f64s(Shape::new(F32, vec![2, 1]), &[1.0, 2.0]);
    let row = Literal::from_f64s(Shape::new(F32, vec![1, 3]), &[1.0, 2.0, 3.0]);
    let out = run("broadcast_subtract", &[col, row], &[arr(F32, &[2, 3])], &ChloAttrs::default());
    assert_eq!(out[0].to_f64_vec(), vec![0.0, -1.0, -2.0, 1.0, 0.0, -1.0]);
    // compare with a scalar.
    let attrs = ChloAttrs { comparison_direction: Some("GT".into()), ..Default::default() };
    let out = run("broadcast_compare", &[a, floats(F32, &[3.0]).reshaped(vec![])], &[arr(Pred, &[2, 3])], &attrs);
    assert_eq!(out[0].to_f64_vec(), vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    let out = run(
        "broadcast_xor",
        &[ints(S32, &[2], &[6, 5]), ints(S32, &[], &[3])],
        &[arr(S32, &[2])],
        &ChloAttrs::default(),
    );
    assert_eq!(out[0], ints(S32, &[2], &[5, 6]));
}

#[test]
fn predicates_square_conj_constant_like() {
    let x = floats(F32, &[f64::INFINITY, f64::NEG_INFINITY, 1.0, f64::NAN]);
    let t = [arr(Pred, &[4])];
    let d = ChloAttrs::default();
    assert_eq!(run("is_inf", std::slice::from_ref(&x), &t, &d)[0].to_f64_vec(), vec![1.0, 1.0, 0.0, 0.0]);
    assert_eq!(run("is_pos_inf", std::slice::from_ref(&x), &t, &d)[0].to_f64_vec(), vec![1.0, 0.0, 0.0, 0.0]);
    assert_eq!(run("is_neg_inf", std::slice::from_ref(&x), &t, &d)[0].to_f64_vec(), vec![0.0, 1.0, 0.0, 0.0]);
    assert_eq!(run1("square", ints(S32, &[2], &[-3, 4])), ints(S32, &[2], &[9, 16]));
    assert_eq!(run1("conj", floats(F64, &[-2.5])).to_f64_vec(), vec![-2.5]);
    let attrs = ChloAttrs { value: Some(Literal::scalar_from(F32, Scalar::F(1.5))), ..Default::default() };
    let out = run("constant_like", &[x], &[arr(F32, &[4])], &attrs);
    assert_eq!(out[0].to_f64_vec(), vec![1.5; 4]);
}

#[test]
fn ragged_dot_mode_1_sums_masked_groups() {
    // lhs [3,2] rows split into groups [2, 1]; rhs [2 groups, 2, 1].
    let lhs = Literal::from_f64s(Shape::new(F32, vec![3, 2]), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let rhs = Literal::from_f64s(Shape::new(F32, vec![2, 2, 1]), &[1.0, 1.0, 10.0, 100.0]);
    let gs = ints(S64, &[2], &[2, 1]);
    let dims = RaggedDotDims {
        lhs_contracting_dimensions: vec![1],
        rhs_contracting_dimensions: vec![1],
        lhs_ragged_dimensions: vec![0],
        rhs_group_dimensions: vec![0],
        ..Default::default()
    };
    let attrs = ChloAttrs { ragged_dot: Some(dims), ..Default::default() };
    let out = run("ragged_dot", &[lhs, rhs, gs], &[arr(F32, &[3, 1])], &attrs);
    // Rows 0,1 use group 0 (sum), row 2 uses group 1 (10*5 + 100*6).
    assert_eq!(out[0].to_f64_vec(), vec![3.0, 7.0, 650.0]);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let f = arr(F32, &[2]);
    let f1 = std::slice::from_ref(&f);
    let d = ChloAttrs::default();
    let err = |name: &str, args: &[Type], res: &[Type], attrs: &ChloAttrs| {
        build(name, args, res, attrs).err().unwrap_or_default()
    };
    assert!(err("scan", f1, f1, &d).contains("body region"));
    assert!(err("broadcast_complex", &[f.clone(), f.clone()], f1, &d).contains("unsupported CHLO op"));
    assert!(err("frobnicate", f1, f1, &d).contains("unsupported"));
    assert!(err("lgamma", &[arr(S32, &[2])], &[arr(S32, &[2])], &d).contains("floating-point"));
    assert!(err("lgamma", &[f.clone(), f.clone()], f1, &d).contains("1 operand"));
    assert!(err("lgamma", f1, &[arr(F32, &[3])], &d).contains("declared"));
    assert!(err("top_k", f1, &[f.clone(), arr(S32, &[2])], &d).contains("k"));
    assert!(err("top_k", &[arr(F32, &[])], &[], &ChloAttrs { k: Some(1), ..Default::default() }).contains("rank"));
    assert!(err("broadcast_add", &[f.clone(), arr(F32, &[3])], f1, &d).contains("broadcastable"));
    assert!(err("broadcast_add", &[f.clone(), arr(S32, &[2])], f1, &d).contains("element types"));
    assert!(err("broadcast_compare", &[f.clone(), f.clone()], &[arr(Pred, &[2])], &d).contains("comparison_direction"));
    assert!(err("mulhi", &[f.clone(), f.clone()], f1, &d).contains("integer"));
    assert!(err("constant_like", f1, f1, &d).contains("value"));
    assert!(err("ragged_dot", &[f.clone(), f.clone(), arr(S64, &[1])], f1, &d).contains("dimension_numbers"));
    // Tuple operand.
    let tup = Type::Tuple(vec![f.clone()]);
    assert!(err("lgamma", &[tup], &[f], &d).contains("array"));
}

// ---- the conformance files that use CHLO ops ---------------------------------------

/// Checks one `check.*` custom call the way the corpus README describes.
fn conformance_check(inst: &hloscope_core::ir::Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::CustomCall(cc) = &inst.op else { return Err("not a custom call".into()) };
    let attr = |n: &str| cc.attrs.iter().find(|(k, _)| k == n).and_then(|(_, v)| v.parse::<f64>().ok());
    let (Some(got), Some(want)) = (args.first().and_then(Value::as_array), args.get(1).and_then(Value::as_array))
    else {
        return Err(format!("{}: expected two arrays", cc.target));
    };
    if !got.shape.same_shape(&want.shape) {
        return Err(format!("{}: shape {} vs {}", cc.target, got.shape, want.shape));
    }
    let elem = got.elem();
    for i in 0..got.num_elements() {
        let (g, w) = (got.get(i), want.get(i));
        let ok = match (cc.target.as_str(), g, w) {
            (_, Scalar::F(g), Scalar::F(w)) if cc.target == "check.expect_close" => {
                ulp_distance(g, w, elem) <= attr("max_ulp_difference").unwrap_or(3.0) as u64
            }
            (_, Scalar::F(g), Scalar::F(w)) if cc.target == "check.expect_almost_eq" => {
                (g.is_nan() && w.is_nan())
                    || (g.is_infinite() || w.is_infinite()) && g == w
                    || (g - w).abs() <= attr("tolerance").unwrap_or(1e-3)
            }
            (_, Scalar::F(g), Scalar::F(w)) => g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()) || g == w,
            _ => g == w,
        };
        if !ok {
            return Err(format!("{}: element {i}: got {g:?}, expected {w:?}", cc.target));
        }
    }
    Ok(Value::Tuple(vec![]))
}

/// Parses and runs one conformance module (or `// -----` chunk); `Err` says why it failed.
fn run_conformance_case(text: &str) -> Result<(), String> {
    let module = hloscope_core::parse::mlir::parse(text).map_err(|e| format!("parse: {e}"))?;
    let failures = std::cell::RefCell::new(Vec::new());
    let mut interp = interp::Interpreter::new(&module).with_custom_call_hook(|inst, args| {
        if let Err(e) = conformance_check(inst, args) {
            failures.borrow_mut().push(e);
        }
        Ok(Value::Tuple(vec![]))
    });
    interp.run(&[]).map_err(|e| format!("run: {e}"))?;
    drop(interp);
    match failures.into_inner().first() {
        Some(e) => Err(e.clone()),
        None => Ok(()),
    }
}

/// Every corpus file that uses a CHLO op (the `interpret/chlo/` files split into their
/// cases). Prints the failures and the pass count; the count may only go up.
#[test]
fn conformance_files_with_chlo_ops() {
    let dir = corpus::corpus_dir();
    let dir = dir.as_path();
    let mut cases = Vec::new();
    for sub in ["testdata", "interpret/chlo"] {
        let mut files: Vec<_> =
            std::fs::read_dir(dir.join(sub)).expect("corpus dir").map(|e| e.expect("entry").path()).collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).expect("read");
            if !text.contains("chlo.") || path.extension().is_none_or(|e| e != "mlir") {
                continue;
            }
            let name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
            if sub == "testdata" {
                cases.push((name, text));
            } else {
                for (i, chunk) in text.split("\n// -----\n").enumerate() {
                    cases.push((format!("{name}#{i}"), chunk.to_string()));
                }
            }
        }
    }
    let mut passed = 0;
    for (name, text) in &cases {
        match run_conformance_case(text) {
            Ok(()) => passed += 1,
            Err(e) => eprintln!("FAIL {name}: {}", e.chars().take(300).collect::<String>()),
        }
    }
    eprintln!("CHLO conformance: {passed} of {} cases pass", cases.len());
    assert!(
        passed >= MIN_CONFORMANCE_PASSES,
        "{passed} of {} CHLO cases pass, expected at least {MIN_CONFORMANCE_PASSES}",
        cases.len()
    );
}

/// Cases of `conformance_files_with_chlo_ops` known to pass.
const MIN_CONFORMANCE_PASSES: usize = 111;

#[test]
fn scan_cumulative_sum_forward_and_reverse() {
    // body(x, acc) = (x + acc, x + acc) over [1, 2, 3, 4].
    for (reverse, want) in [(false, [1, 3, 6, 10]), (true, [10, 9, 7, 4])] {
        let mut m = Module::new("scan_test");
        let s = Type::array(S32, vec![]);
        let mut body = Computation::new("body");
        let x = body.push_param("x", s.clone(), Loc::default());
        let acc = body.push_param("acc", s.clone(), Loc::default());
        let sum = body.push(hloscope_core::ir::Instruction {
            name: "sum".into(),
            op: Op::Binary(hloscope_core::ir::BinaryOp::Add),
            operands: vec![x, acc],
            ty: s.clone(),
            loc: Loc::default(),
        });
        body.root = body.push(hloscope_core::ir::Instruction {
            name: "ret".into(),
            op: Op::Tuple,
            operands: vec![sum, sum],
            ty: Type::Tuple(vec![s.clone(), s.clone()]),
            loc: Loc::default(),
        });
        let body = m.add_computation(body);
        let mut main = Computation::new("main");
        let xs = main.push_param("xs", arr(S32, &[4]), Loc::default());
        let init = main.push_param("init", s.clone(), Loc::default());
        let c = m.add_computation(main);
        m.entry = c;
        let attrs = ChloAttrs {
            body: Some(body),
            num_inits: Some(1),
            dimension: Some(0),
            is_reverse: Some(reverse),
            ..Default::default()
        };
        let outs = decompose(&mut m, c, "scan", &[xs, init], &[arr(S32, &[4]), s.clone()], &attrs, &Loc::default())
            .expect("scan");
        let ty = Type::Tuple(vec![arr(S32, &[4]), s.clone()]);
        let root = m.comp_mut(c).push(hloscope_core::ir::Instruction {
            name: "t".into(),
            op: Op::Tuple,
            operands: outs,
            ty,
            loc: Loc::default(),
        });
        m.comp_mut(c).root = root;
        let args = [Value::Array(ints(S32, &[4], &[1, 2, 3, 4])), Value::Array(ints(S32, &[], &[0]))];
        let out = interp::run(&m, &args).expect("run").flatten();
        assert_eq!(out[0], ints(S32, &[4], &want), "reverse = {reverse}");
        assert_eq!(out[1], ints(S32, &[], &[10]));
    }
}
