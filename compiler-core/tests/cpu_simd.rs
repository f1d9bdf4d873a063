//! The CPU target's SIMD loops and thread splitting against the interpreter, on random
//! inputs of every element type, at sizes that exercise the vector body, the scalar tail
//! and the split across threads (1, 3, 4, 5, 17, 1000, 70001): elementwise kernels,
//! broadcasts, transposed and concatenated reads, converts, row and column reductions.
//!
//! Kernels of 64K iterations or more run split across threads, along a kept variable:
//! the outermost (70 x 1001) or the vectorized one after a short outer loop (2 x 40001).
//!
//! Results must be bit-identical, except float sums of a vectorized row reduction
//! (reassociated): those are compared with a tolerance, or fed integer-valued floats so
//! every order gives the same exact sum. Needs the `cpu` feature.

#![cfg(feature = "cpu")]

use crate::common;

use common::{ulps, Rng};

use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{ElementType, Literal, Shape, Value};
use hloscope_core::targets::cpu;

const SIZES: &[i64] = &[1, 3, 4, 5, 17, 1000, 70_001];

/// Random values of `elem`: integers over their whole range, floats in [-8, 8) with
/// some -0.0, or (`integral`) whole floats in [-8, 8] so sums are exact in any order.
fn random(elem: ElementType, dims: &[i64], seed: u64, integral: bool) -> Literal {
    let n: i64 = dims.iter().product();
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let shape = Shape::new(elem, dims);
    if elem.is_float() {
        let v: Vec<f64> = (0..n)
            .map(|_| {
                let r = rng.next();
                if integral {
                    (r % 17) as f64 - 8.0
                } else if r.is_multiple_of(16) {
                    -0.0
                } else {
                    (r >> 11) as f64 / (1u64 << 53) as f64 * 16.0 - 8.0
                }
            })
            .collect();
        Literal::from_f64s(shape, &v)
    } else {
        let v: Vec<i64> = (0..n).map(|_| rng.next() as i64).collect();
        Literal::from_i64s(shape, &v)
    }
}

/// Compiles `hlo` for the CPU and runs it and the interpreter on `args`: the executable,
/// its outputs and the interpreter's (flattened, of the same shapes).
fn run_both(hlo: &str, args: &[Literal]) -> (cpu::CpuExecutable, Vec<Literal>, Vec<Literal>) {
    let module = hloscope_core::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}\n{hlo}"));
    let args: Vec<Value> = args.iter().cloned().map(Value::Array).collect();
    let want = Interpreter::new(&module).run(&args).unwrap().flatten();
    let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
    let got = exe.run(&args).unwrap().flatten();
    assert_eq!(got.len(), want.len());
    for (o, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g.shape.same_shape(&w.shape), "output {o}: {} vs {}", g.shape, w.shape);
    }
    (exe, got, want)
}

/// Compiles `hlo` for the CPU, runs it and the interpreter on `args`, and checks every
/// output: bit-identical, or for float outputs within `atol` when given. Returns the
/// kernels' CLIF listings (empty for kernels not JIT-compiled).
fn check(hlo: &str, args: &[Literal], atol: Option<f64>) -> Vec<String> {
    let (exe, got, want) = run_both(hlo, args);
    for (o, (g, w)) in got.iter().zip(&want).enumerate() {
        for i in 0..w.num_elements() {
            let same = g.bits(i) == w.bits(i);
            let close = match atol {
                Some(t) if w.elem().is_float() => {
                    let (a, b) = (g.get(i).as_f64(), w.get(i).as_f64());
                    (a - b).abs() <= t
                }
                _ => false,
            };
            assert!(
                same || close,
                "output {o} element {i}: got {:?}, want {:?}\n{hlo}\nplan:\n{}",
                g.get(i),
                w.get(i),
                exe.plan().summary()
            );
        }
    }
    (0..exe.plan().kernels.len()).map(|i| exe.clif(i).unwrap_or("").to_string()).collect()
}

fn vectorized(clifs: &[String]) -> bool {
    clifs.iter().any(|c| c.starts_with("; vectorized"))
}

/// An elementwise program over `t[dims]` with a pred output next to the value output.
fn elementwise(t: ElementType, dims: &str) -> String {
    let body = if t.is_pred() {
        format!(
            "  %x = pred[{dims}] xor(%a, %b)
  %o = pred[{dims}] or(%x, %a)
  %n = pred[{dims}] not(%o)
  %s = pred[{dims}] select(%a, %b, %n)
  %c = pred[{dims}] and(%s, %o)"
        )
    } else {
        let extra = if t.is_float() {
            format!("  %d = {t}[{dims}] subtract(%mx, %b)\n  %q = {t}[{dims}] abs(%d)")
        } else {
            format!("  %d = {t}[{dims}] xor(%mx, %b)\n  %q = {t}[{dims}] and(%d, %a)")
        };
        format!(
            "  %p = {t}[{dims}] add(%a, %b)
  %m = {t}[{dims}] multiply(%p, %a)
  %mx = {t}[{dims}] maximum(%m, %b)
{extra}
  %mn = {t}[{dims}] minimum(%q, %a)
  %lt = pred[{dims}] compare(%a, %b), direction=LT
  %ng = {t}[{dims}] negate(%mn)
  %s = {t}[{dims}] select(%lt, %ng, %p)
  %c = pred[{dims}] compare(%s, %b), direction=GE"
        )
    };
    format!(
        "HloModule m
ENTRY %main (a: {t}[{dims}], b: {t}[{dims}]) -> ({t}[{dims}], pred[{dims}]) {{
  %a = {t}[{dims}] parameter(0)
  %b = {t}[{dims}] parameter(1)
{body}
  ROOT %t = ({t}[{dims}], pred[{dims}]) tuple(%s, %c)
}}"
    )
}

#[test]
fn elementwise_every_type_and_size() {
    for t in ElementType::ALL {
        for &n in SIZES {
            let hlo = elementwise(t, &n.to_string());
            let clifs = check(&hlo, &[random(t, &[n], 1, false), random(t, &[n], 2, false)], None);
            if n >= 8
                && matches!(
                    t,
                    ElementType::F32 | ElementType::S32 | ElementType::U32 | ElementType::F64 | ElementType::S64
                )
            {
                assert!(vectorized(&clifs), "{t}[{n}] not vectorized: {}", clifs[0].lines().next().unwrap_or(""));
            }
            if matches!(t, ElementType::F16 | ElementType::BF16) {
                assert!(!vectorized(&clifs), "f16/bf16 stay scalar");
            }
        }
        // Two dimensions: the tail of every row.
        let hlo = elementwise(t, "7,19");
        check(&hlo, &[random(t, &[7, 19], 3, false), random(t, &[7, 19], 4, false)], None);
    }
}

#[test]
fn broadcasts_transposes_and_concatenates() {
    for &t in &[ElementType::F32, ElementType::S32, ElementType::F64, ElementType::U8, ElementType::S64] {
        for &(r, c) in &[(1, 1), (3, 5), (4, 17), (9, 1000), (70, 1001), (2, 40_001)] {
            // A row vector (contiguous), a column vector (invariant in the inner loop), a
            // scalar, a transposed matrix (gathered), and iota along the minor dimension.
            let hlo = format!(
                "HloModule m
ENTRY %main (x: {t}[{r},{c}], row: {t}[{c}], col: {t}[{r}], s: {t}[], y: {t}[{c},{r}]) -> ({t}[{r},{c}], {t}[{r},{}]) {{
  %x = {t}[{r},{c}] parameter(0)
  %row = {t}[{c}] parameter(1)
  %col = {t}[{r}] parameter(2)
  %s = {t}[] parameter(3)
  %y = {t}[{c},{r}] parameter(4)
  %br = {t}[{r},{c}] broadcast(%row), dimensions={{1}}
  %bc = {t}[{r},{c}] broadcast(%col), dimensions={{0}}
  %bs = {t}[{r},{c}] broadcast(%s), dimensions={{}}
  %yt = {t}[{r},{c}] transpose(%y), dimensions={{1,0}}
  %io = {t}[{r},{c}] iota(), iota_dimension=1
  %a1 = {t}[{r},{c}] add(%x, %br)
  %a2 = {t}[{r},{c}] multiply(%a1, %bc)
  %a3 = {t}[{r},{c}] subtract(%a2, %bs)
  %a4 = {t}[{r},{c}] maximum(%a3, %yt)
  %a5 = {t}[{r},{c}] add(%a4, %io)
  %cat = {t}[{r},{}] concatenate(%a5, %x), dimensions={{1}}
  ROOT %out = ({t}[{r},{c}], {t}[{r},{}]) tuple(%a5, %cat)
}}",
                2 * c,
                2 * c,
                2 * c
            );
            let args = [
                random(t, &[r, c], 5, false),
                random(t, &[c], 6, false),
                random(t, &[r], 7, false),
                random(t, &[], 8, false),
                random(t, &[c, r], 9, false),
            ];
            let clifs = check(&hlo, &args, None);
            if c >= 17 && t == ElementType::F32 {
                assert!(vectorized(&clifs), "{t}[{r},{c}]: {}", clifs.join("\n---\n"));
            }
        }
    }
}

#[test]
fn converts_between_types_of_one_width() {
    // f32 <-> s32/u32 (saturating, NaN -> 0 in the interpreter's semantics), f64 <->
    // s64/u64, pred <-> numbers, and bitcasts.
    let cases = [
        ("f32", "s32"),
        ("f32", "u32"),
        ("s32", "f32"),
        ("u32", "f32"),
        ("f64", "s64"),
        ("f64", "u64"),
        ("s64", "f64"),
        ("u64", "f64"),
        ("s8", "u8"),
        ("u16", "s16"),
    ];
    for (from, to) in cases {
        for &n in &[5, 17, 1000] {
            let hlo = format!(
                "HloModule m
ENTRY %main (a: {from}[{n}]) -> ({to}[{n}], {to}[{n}], pred[{n}]) {{
  %a = {from}[{n}] parameter(0)
  %c = {to}[{n}] convert(%a)
  %b = {to}[{n}] bitcast-convert(%a)
  %p = pred[{n}] convert(%a)
  %pc = {to}[{n}] convert(%p)
  %s = {to}[{n}] add(%c, %pc)
  ROOT %t = ({to}[{n}], {to}[{n}], pred[{n}]) tuple(%s, %b, %p)
}}"
            );
            let from_t = match from {
                "f32" => ElementType::F32,
                "s32" => ElementType::S32,
                "u32" => ElementType::U32,
                "f64" => ElementType::F64,
                "s64" => ElementType::S64,
                "u64" => ElementType::U64,
                "s8" => ElementType::S8,
                _ => ElementType::U16,
            };
            // Floats far outside the integer ranges too, to exercise saturation.
            let mut a = random(from_t, &[n], 10, false);
            if from_t.is_float() {
                let v: Vec<f64> =
                    a.to_f64_vec().iter().enumerate().map(|(i, &x)| if i % 3 == 0 { x * 1e12 } else { x }).collect();
                a = Literal::from_f64s(Shape::new(from_t, vec![n]), &v);
            }
            check(&hlo, &[a], None);
        }
    }
}

/// A program reducing `x: t[r, c]` over `dims` with `op` from init `init`.
fn reduce_hlo(t: ElementType, r: i64, c: i64, op: &str, dims: &str, init: &str) -> String {
    let out = if dims == "1" { r } else { c };
    format!(
        "HloModule m
%f (p: {t}[], q: {t}[]) -> {t}[] {{
  %p = {t}[] parameter(0)
  %q = {t}[] parameter(1)
  ROOT %s = {t}[] {op}(%p, %q)
}}
ENTRY %main (x: {t}[{r},{c}]) -> {t}[{out}] {{
  %x = {t}[{r},{c}] parameter(0)
  %z = {t}[] constant({init})
  ROOT %r = {t}[{out}] reduce(%x, %z), dimensions={{{dims}}}, to_apply=%f
}}"
    )
}

#[test]
fn row_and_column_reductions_every_type() {
    let shapes: &[(i64, i64)] =
        &[(1, 1), (2, 3), (3, 4), (4, 5), (5, 17), (3, 1000), (70, 1001), (1001, 70), (2, 40_001)];
    for t in ElementType::ALL {
        let ops: &[(&str, &str)] = if t.is_pred() {
            &[("and", "true"), ("or", "false"), ("xor", "true")]
        } else if t.is_float() {
            &[("add", "3"), ("maximum", "3"), ("minimum", "-inf")]
        } else {
            &[
                ("add", "3"),
                ("multiply", "3"),
                ("maximum", "3"),
                ("minimum", "3"),
                ("and", "3"),
                ("or", "3"),
                ("xor", "3"),
            ]
        };
        for &(op, init) in ops {
            for &(r, c) in shapes {
                for dims in ["1", "0"] {
                    let hlo = reduce_hlo(t, r, c, op, dims, init);
                    // Whole floats: sums are exact in any order (bit-exact comparison).
                    let clifs = check(&hlo, &[random(t, &[r, c], 11, op == "add")], None);
                    if t == ElementType::F32 && c >= 17 && op != "minimum" {
                        assert!(
                            vectorized(&clifs),
                            "{op} over {dims} of f32[{r},{c}]: {}",
                            clifs[0].lines().next().unwrap_or("")
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn reassociated_float_sums_stay_close() {
    // Fractional values: the vector accumulators sum in another order than the
    // interpreter, so f32 sums agree to rounding only.
    for &(r, c) in &[(4, 17), (3, 1000), (2, 70_001)] {
        let hlo = reduce_hlo(ElementType::F32, r, c, "add", "1", "0.5");
        let clifs = check(&hlo, &[random(ElementType::F32, &[r, c], 12, false)], Some(1e-6 * c as f64));
        assert!(vectorized(&clifs));
        let hlo = reduce_hlo(ElementType::F64, r, c, "add", "1", "0.5");
        check(&hlo, &[random(ElementType::F64, &[r, c], 13, false)], Some(1e-13 * c as f64));
    }
}

#[test]
fn softmax_like_fusion_with_inner_outputs() {
    // max and sum over rows next to an elementwise output of the input's shape (an
    // inner output of the reduction kernel) and a division by the row sum.
    for &(r, c) in &[(3, 5), (8, 1000), (70, 1001)] {
        let hlo = format!(
            "HloModule m
%max (p: f32[], q: f32[]) -> f32[] {{
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %s = f32[] maximum(%p, %q)
}}
%add (p: f32[], q: f32[]) -> f32[] {{
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %s = f32[] add(%p, %q)
}}
ENTRY %main (x: f32[{r},{c}]) -> (f32[{r},{c}], f32[{r}]) {{
  %x = f32[{r},{c}] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[{r}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %mb = f32[{r},{c}] broadcast(%m), dimensions={{0}}
  %d = f32[{r},{c}] subtract(%x, %mb)
  %sq = f32[{r},{c}] multiply(%d, %d)
  %z = f32[] constant(0)
  %s = f32[{r}] reduce(%sq, %z), dimensions={{1}}, to_apply=%add
  %sb = f32[{r},{c}] broadcast(%s), dimensions={{0}}
  %q = f32[{r},{c}] divide(%d, %sb)
  ROOT %t = (f32[{r},{c}], f32[{r}]) tuple(%q, %s)
}}"
        );
        check(&hlo, &[random(ElementType::F32, &[r, c], 14, false)], Some(1e-3 * c as f64));
    }
}

#[test]
fn argmax_column_reduction_keeps_the_interpreters_order() {
    // A variadic column reduction: each lane is a different column.
    for &(r, c) in &[(3, 5), (17, 9), (300, 257)] {
        let hlo = format!(
            "HloModule m
%argmax (a: f32[], ai: s32[], b: f32[], bi: s32[]) -> (f32[], s32[]) {{
  %a = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %b = f32[] parameter(2)
  %bi = s32[] parameter(3)
  %ge = pred[] compare(%a, %b), direction=GE
  %v = f32[] select(%ge, %a, %b)
  %i = s32[] select(%ge, %ai, %bi)
  ROOT %t = (f32[], s32[]) tuple(%v, %i)
}}
ENTRY %main (x: f32[{r},{c}]) -> (f32[{c}], s32[{c}]) {{
  %x = f32[{r},{c}] parameter(0)
  %iota = s32[{r},{c}] iota(), iota_dimension=0
  %ninf = f32[] constant(-inf)
  %zi = s32[] constant(0)
  ROOT %am = (f32[{c}], s32[{c}]) reduce(%x, %iota, %ninf, %zi), dimensions={{0}}, to_apply=%argmax
}}"
        );
        let clifs = check(&hlo, &[random(ElementType::F32, &[r, c], 15, true)], None);
        if c >= 8 {
            assert!(vectorized(&clifs), "{}", clifs.join("\n"));
        }
    }
}

#[test]
fn total_order_compares_and_special_values() {
    // -0 < +0 and NaN ordering under total order; max/min with -0, infinities.
    let hlo = "HloModule m
ENTRY %main (a: f32[9], b: f32[9]) -> (pred[9], f32[9], f32[9], pred[9]) {
  %a = f32[9] parameter(0)
  %b = f32[9] parameter(1)
  %lt = pred[9] compare(%a, %b), direction=LT, type=TOTALORDER
  %mx = f32[9] maximum(%a, %b)
  %mn = f32[9] minimum(%a, %b)
  %fin = pred[9] is-finite(%a)
  ROOT %t = (pred[9], f32[9], f32[9], pred[9]) tuple(%lt, %mx, %mn, %fin)
}";
    let inf = f64::INFINITY;
    let a =
        Literal::from_f64s(Shape::new(ElementType::F32, vec![9]), &[-0.0, 0.0, 1.0, -inf, inf, 2.5, -3.0, 0.0, 7.0]);
    let b =
        Literal::from_f64s(Shape::new(ElementType::F32, vec![9]), &[0.0, -0.0, 1.0, 3.0, -inf, 2.5, -2.0, -0.0, -7.0]);
    let clifs = check(hlo, &[a, b], None);
    assert!(vectorized(&clifs), "{}", clifs.join("\n"));
}

/// As [`check`] for f32 outputs compared within `max_ulps` of the interpreter's
/// correctly rounded results (the inline approximations of exp, tanh, ...).
fn check_ulps(hlo: &str, args: &[Literal], max_ulps: u64) -> Vec<String> {
    let (exe, got, want) = run_both(hlo, args);
    for (o, (g, w)) in got.iter().zip(&want).enumerate() {
        for i in 0..w.num_elements() {
            let (a, b) = (g.get(i).as_f64() as f32, w.get(i).as_f64() as f32);
            assert!(ulps(a, b) <= max_ulps, "output {o} element {i}: got {a:e}, want {b:e}\n{hlo}");
        }
    }
    (0..exe.plan().kernels.len()).map(|i| exe.clif(i).unwrap_or("").to_string()).collect()
}

#[test]
fn unrolled_steps_and_tails_at_every_short_length() {
    // Lengths 0..=40 cross every boundary of the unrolled vector steps (2 or 4 vectors
    // of 4 lanes) and their scalar tails. exp of inputs in [-96, 96) mixes lanes of its
    // fast path with lanes that need the rare one (overflow to inf, subnormal results,
    // 0), so vectors of both kinds (a branch per vector) sit next to each other and to
    // the tail; row reductions run two or four vector accumulators.
    for n in 0..=40i64 {
        let hlo = format!(
            "HloModule m
ENTRY %main (a: f32[{n}]) -> (f32[{n}], f32[{n}]) {{
  %a = f32[{n}] parameter(0)
  %k = f32[] constant(12)
  %kb = f32[{n}] broadcast(%k), dimensions={{}}
  %s = f32[{n}] multiply(%a, %kb)
  %e = f32[{n}] exponential(%s)
  %t = f32[{n}] tanh(%a)
  ROOT %r = (f32[{n}], f32[{n}]) tuple(%e, %t)
}}"
        );
        let clifs = check_ulps(&hlo, &[random(ElementType::F32, &[n], 21 + n as u64, false)], 2);
        let note = clifs[0].lines().next().unwrap_or("").to_string();
        if n >= 8 {
            let unroll = if n >= 16 { 4 } else { 2 };
            assert!(note.starts_with(&format!("; vectorized: 4 lanes x {unroll}, Loop")), "f32[{n}]: {note}");
        }
        for (op, init) in [("add", "3"), ("maximum", "-inf"), ("multiply", "1")] {
            let t = if op == "multiply" { ElementType::S32 } else { ElementType::F32 };
            let hlo = reduce_hlo(t, 3, n, op, "1", init);
            // Whole floats: sums are exact in any order (bit-exact comparison).
            let clifs = check(&hlo, &[random(t, &[3, n], 31 + n as u64, op == "add")], None);
            let note = clifs[0].lines().next().unwrap_or("").to_string();
            if n >= 8 {
                let unroll = if n >= 16 { 4 } else { 2 };
                assert!(
                    note.starts_with(&format!("; vectorized: 4 lanes x {unroll}, Row")),
                    "{op} over rows of {t}[3,{n}]: {note}"
                );
            }
        }
    }
}

#[test]
fn max_and_min_with_constants_keep_nans_and_signed_zeros() {
    // `max(x, k)` / `min(x, k)` with a constant `k` take a single maxps/minps; the
    // interpreter's rules still hold: a NaN operand is the result, max(-0, +0) = +0,
    // min(-0, +0) = -0, and constants on either side. Inputs mix ±0, ±inf, NaN and
    // ordinary values; 5 elements run scalar, 1000 run vectors with a tail.
    let specials = [0.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5, -1.5, 3.0, -7.25, 1e-30];
    for t in [ElementType::F32, ElementType::F64, ElementType::BF16] {
        for n in [5i64, 1000] {
            let mut lines = String::new();
            let mut outs = Vec::new();
            for (i, k) in ["0", "-0", "1.5", "-3", "inf", "-inf", "nan"].iter().enumerate() {
                lines +=
                    &format!("  %k{i} = {t}[] constant({k})\n  %b{i} = {t}[{n}] broadcast(%k{i}), dimensions={{}}\n");
                lines += &format!("  %mx{i} = {t}[{n}] maximum(%a, %b{i})\n  %xm{i} = {t}[{n}] maximum(%b{i}, %a)\n");
                lines += &format!("  %mn{i} = {t}[{n}] minimum(%a, %b{i})\n  %nm{i} = {t}[{n}] minimum(%b{i}, %a)\n");
                outs.extend([format!("%mx{i}"), format!("%xm{i}"), format!("%mn{i}"), format!("%nm{i}")]);
            }
            let types = vec![format!("{t}[{n}]"); outs.len()].join(", ");
            let hlo = format!(
                "HloModule m\nENTRY %main (a: {t}[{n}]) -> ({types}) {{\n  %a = {t}[{n}] parameter(0)\n{lines}  ROOT %r = ({types}) tuple({})\n}}",
                outs.join(", ")
            );
            let values: Vec<f64> = (0..n as usize).map(|i| specials[i % specials.len()]).collect();
            let (exe, got, want) = run_both(&hlo, &[Literal::from_f64s(Shape::new(t, vec![n]), &values)]);
            for (o, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(w.num_elements(), values.len());
                for (i, x) in values.iter().enumerate() {
                    // Bit for bit; NaNs (the generic min/max may change their payload) as NaN.
                    let (a, b) = (g.get(i).as_f64(), w.get(i).as_f64());
                    assert!(
                        g.bits(i) == w.bits(i) || (a.is_nan() && b.is_nan()),
                        "{t}[{n}] {}: element {i} = {} -> {a}, want {b}",
                        outs[o],
                        x
                    );
                }
            }
            if t != ElementType::BF16 && n == 1000 {
                let clif = exe.clif(0).unwrap_or("");
                assert!(clif.starts_with("; vectorized"), "{t}: {clif}");
            }
        }
    }
}

#[test]
fn max_and_min_rows_take_the_fast_path_and_stay_exact() {
    // Row max/min run one maxps/minps per vector plus a NaN tracker, and rerun a row
    // exactly when the tracker is NaN or the result is a zero. Rows (of 37 and 1000:
    // vector steps and a tail) hold, each at a different position (vector part or
    // tail): a NaN; +0 and -0 with a zero result; only -0; +inf and -inf (a false
    // alarm of the tracker); ordinary values with the extreme in the tail; zeros of both
    // signs in the order the vector steps would get wrong. Inits are
    // -inf, +inf, 0, -0 and NaN. Bit for bit with the interpreter, NaNs as NaN.
    for t in [ElementType::F32, ElementType::F64] {
        for c in [37i64, 1000] {
            let rows: Vec<Vec<f64>> = vec![
                (0..c).map(|i| if i == 5 { f64::NAN } else { (i % 7) as f64 - 3.0 }).collect(),
                (0..c).map(|i| if i == c - 1 { f64::NAN } else { i as f64 }).collect(),
                (0..c)
                    .map(|i| {
                        if i % 3 == 0 {
                            0.0
                        } else if i % 3 == 1 {
                            -0.0
                        } else {
                            -(i as f64)
                        }
                    })
                    .collect(),
                (0..c).map(|i| if i % 2 == 0 { -0.0 } else { -1.0 - i as f64 }).collect(),
                (0..c).map(|i| if i % 2 == 0 { -0.0 } else { 1.0 + i as f64 }).collect(),
                (0..c)
                    .map(|i| {
                        if i == 3 {
                            f64::INFINITY
                        } else if i == 9 {
                            f64::NEG_INFINITY
                        } else {
                            i as f64 * 0.5
                        }
                    })
                    .collect(),
                (0..c)
                    .map(|i| {
                        if i == c - 2 {
                            1e6
                        } else if i == c - 3 {
                            -1e6
                        } else {
                            (i as f64).sin()
                        }
                    })
                    .collect(),
                (0..c).map(|_| 0.0).collect(),
                // Every lane meets -0 first, +0 later (max must be +0), and the reverse
                // with positives (min must be -0): the maxps/minps order keeps the first.
                (0..c)
                    .map(|i| {
                        if i < 16 {
                            -0.0
                        } else if i < 32 {
                            0.0
                        } else {
                            -1.0
                        }
                    })
                    .collect(),
                (0..c)
                    .map(|i| {
                        if i < 16 {
                            0.0
                        } else if i < 32 {
                            -0.0
                        } else {
                            1.0
                        }
                    })
                    .collect(),
            ];
            let r = rows.len() as i64;
            let values: Vec<f64> = rows.concat();
            let arg = Literal::from_f64s(Shape::new(t, vec![r, c]), &values);
            for (op, inits) in [("maximum", ["-inf", "0", "-0", "nan"]), ("minimum", ["inf", "0", "-0", "nan"])] {
                for init in inits {
                    let hlo = reduce_hlo(t, r, c, op, "1", init);
                    let (exe, got, want) = run_both(&hlo, std::slice::from_ref(&arg));
                    for i in 0..r as usize {
                        let (a, b) = (got[0].get(i).as_f64(), want[0].get(i).as_f64());
                        assert!(
                            got[0].bits(i) == want[0].bits(i) || (a.is_nan() && b.is_nan()),
                            "{op} init {init} of {t}[{r},{c}] row {i}: got {a:?}, want {b:?}"
                        );
                    }
                    let clif = exe.clif(0).unwrap_or("");
                    assert!(
                        clif.contains("; max/min rows: one maxps/minps per vector"),
                        "{op} {t}[{r},{c}]: {}",
                        clif.lines().take(3).collect::<Vec<_>>().join("\n")
                    );
                    assert!(exe.code_summary(0).ends_with(" + fast max/min"), "{}", exe.code_summary(0));
                }
            }
        }
    }
}
