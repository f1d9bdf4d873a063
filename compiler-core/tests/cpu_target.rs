//! The CPU target on small hand-checked programs: integer edge cases, f16 rounding,
//! data movement fused into one loop kernel, column and variadic reductions, a dot with a
//! transposed operand, and the interpreter fallback. Needs the `cpu` feature (on under
//! `cargo test --workspace`, which builds the backend that enables it).

#![cfg(feature = "cpu")]

use crate::common;

use common::{f32s, run_against_interpreter, s32, ulps};
use hloscope_core::ir::{ElementType, Literal, Shape, Value};
use hloscope_core::kernel::KernelKind;
use hloscope_core::targets::cpu;

/// Runs `hlo` on the CPU and in the interpreter; outputs must agree (f32 within 4 ulp).
fn run(hlo: &str, args: &[Literal]) -> (Vec<Literal>, Vec<KernelKind>) {
    run_against_interpreter(hlo, args, |g, w| if close(g, w, 4) { Ok(()) } else { Err(format!("{g:?} vs {w:?}")) })
}

/// Equal, except that f32 elements may differ by `max_ulp` (the kernels' inline
/// approximations of transcendentals; the interpreter rounds f64 results).
fn close(got: &Literal, want: &Literal, max_ulp: u64) -> bool {
    if got.shape != want.shape {
        return false;
    }
    if !got.shape.elem.is_float() {
        return got == want;
    }
    // Other float types exactly (NaN equals NaN), f32 within `max_ulp`.
    got.to_f64_vec().iter().zip(want.to_f64_vec()).all(|(&g, w)| {
        if got.shape.elem == ElementType::F32 {
            ulps(g as f32, w as f32) <= max_ulp
        } else {
            g == w || (g.is_nan() && w.is_nan())
        }
    })
}

#[test]
fn integer_division_and_shifts_follow_xla() {
    let hlo = "HloModule m
ENTRY %main (a: s32[4], b: s32[4]) -> (s32[4], s32[4], s32[4]) {
  %a = s32[4] parameter(0)
  %b = s32[4] parameter(1)
  %d = s32[4] divide(%a, %b)
  %r = s32[4] remainder(%a, %b)
  %s = s32[4] shift-left(%a, %b)
  ROOT %t = (s32[4], s32[4], s32[4]) tuple(%d, %r, %s)
}";
    let min = i32::MIN as i64;
    let (out, kinds) = run(hlo, &[s32(&[4], &[7, -7, 5, min]), s32(&[4], &[2, 2, 0, -1])]);
    assert_eq!(out[0], s32(&[4], &[3, -3, -1, min]));
    assert_eq!(out[1], s32(&[4], &[1, -1, 5, 0]));
    // 5 << 0 = 5; shifting by -1 (4294967295 unsigned) is out of range: 0.
    assert_eq!(out[2], s32(&[4], &[28, -28, 5, 0]));
    assert_eq!(kinds, vec![KernelKind::Loop]);
}

#[test]
fn f16_is_rounded_after_every_op() {
    let hlo = "HloModule m
ENTRY %main (a: f16[2], b: f16[2]) -> f16[2] {
  %a = f16[2] parameter(0)
  %b = f16[2] parameter(1)
  ROOT %s = f16[2] add(%a, %b)
}";
    let h = |v: &[f64]| Literal::from_f64s(Shape::new(ElementType::F16, vec![2]), v);
    // f16 spacing at 2048 is 2: 2049 ties to 2048, 2051 ties to 2052.
    let (out, _) = run(hlo, &[h(&[2048.0, 2048.0]), h(&[1.0, 3.0])]);
    assert_eq!(out[0], h(&[2048.0, 2052.0]));
}

#[test]
fn data_movement_fuses_into_one_loop_kernel() {
    // x = [[1,2,3],[4,5,6]]: transpose -> [[1,4],[2,5],[3,6]], reverse rows ->
    // [[3,6],[2,5],[1,4]], slice rows 1.. -> [[2,5],[1,4]], pad one 0 column on the left
    // -> [[0,2,5],[0,1,4]], concatenate x below -> 4x3, negate.
    let hlo = "HloModule m
ENTRY %main (x: f32[2,3]) -> f32[4,3] {
  %x = f32[2,3] parameter(0)
  %t = f32[3,2] transpose(%x), dimensions={1,0}
  %r = f32[3,2] reverse(%t), dimensions={0}
  %s = f32[2,2] slice(%r), slice={[1:3], [0:2]}
  %z = f32[] constant(0)
  %p = f32[2,3] pad(%s, %z), padding=0_0x1_0
  %c = f32[4,3] concatenate(%p, %x), dimensions={0}
  ROOT %n = f32[4,3] negate(%c)
}";
    let (out, kinds) = run(hlo, &[f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.])]);
    let want = [0., 2., 5., 0., 1., 4., 1., 2., 3., 4., 5., 6.].map(|v: f64| -v);
    assert_eq!(out[0], f32s(&[4, 3], &want));
    assert_eq!(kinds, vec![KernelKind::Loop]);
}

#[test]
fn column_sum_and_argmax() {
    let hlo = "HloModule m
%add (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %s = f32[] add(%p, %q)
}
%argmax (a: f32[], ai: s32[], b: f32[], bi: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %b = f32[] parameter(2)
  %bi = s32[] parameter(3)
  %ge = pred[] compare(%a, %b), direction=GE
  %v = f32[] select(%ge, %a, %b)
  %i = s32[] select(%ge, %ai, %bi)
  ROOT %t = (f32[], s32[]) tuple(%v, %i)
}
ENTRY %main (x: f32[3,2]) -> (f32[2], (f32[2], s32[2])) {
  %x = f32[3,2] parameter(0)
  %z = f32[] constant(0)
  %sum = f32[2] reduce(%x, %z), dimensions={0}, to_apply=%add
  %iota = s32[3,2] iota(), iota_dimension=0
  %ninf = f32[] constant(-inf)
  %zi = s32[] constant(0)
  %am = (f32[2], s32[2]) reduce(%x, %iota, %ninf, %zi), dimensions={0}, to_apply=%argmax
  ROOT %t = (f32[2], (f32[2], s32[2])) tuple(%sum, %am)
}";
    let (out, kinds) = run(hlo, &[f32s(&[3, 2], &[1., 8., 5., 2., 3., 4.])]);
    assert_eq!(out[0], f32s(&[2], &[9., 14.]));
    assert_eq!(out[1], f32s(&[2], &[5., 8.]));
    assert_eq!(out[2], s32(&[2], &[1, 0]));
    assert!(kinds.iter().all(|k| matches!(k, KernelKind::Reduction(_))), "{kinds:?}");
}

#[test]
fn dot_with_transposed_rhs_and_epilogue() {
    // [[1,2],[3,4]] . [[5,6],[7,8]]^T = [[17,23],[39,53]], then + 1.
    let hlo = "HloModule m
ENTRY %main (a: f32[2,2], b: f32[2,2]) -> f32[2,2] {
  %a = f32[2,2] parameter(0)
  %b = f32[2,2] parameter(1)
  %d = f32[2,2] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %one = f32[] constant(1)
  %ones = f32[2,2] broadcast(%one), dimensions={}
  ROOT %s = f32[2,2] add(%d, %ones)
}";
    let (out, kinds) = run(hlo, &[f32s(&[2, 2], &[1., 2., 3., 4.]), f32s(&[2, 2], &[5., 6., 7., 8.])]);
    assert_eq!(out[0], f32s(&[2, 2], &[18., 24., 40., 54.]));
    assert!(kinds.contains(&KernelKind::Dot), "{kinds:?}");
}

#[test]
fn unsupported_ops_run_in_the_interpreter() {
    // x + x = [[4, 2], [2, 5]], whose lower Cholesky factor is [[2, 0], [1, 2]].
    let hlo = "HloModule m
ENTRY %main (x: f32[2,2]) -> f32[2,2] {
  %x = f32[2,2] parameter(0)
  %e = f32[2,2] add(%x, %x)
  ROOT %c = f32[2,2] cholesky(%e), cholesky_options={lower=true}
}";
    let (out, kinds) = run(hlo, &[f32s(&[2, 2], &[2.0, 1.0, 1.0, 2.5])]);
    let l = out[0].to_f64_vec();
    assert_eq!((l[0], l[2], l[3]), (2.0, 1.0, 2.0));
    assert_eq!(kinds.len(), 2);
    assert!(matches!(&kinds[1], KernelKind::Opaque { reason } if reason.contains("cholesky")), "{kinds:?}");
}

#[test]
fn empty_arrays_and_empty_reductions() {
    let hlo = "HloModule m
%add (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %s = f32[] add(%p, %q)
}
ENTRY %main (x: f32[2,0]) -> (f32[0,2], f32[2]) {
  %x = f32[2,0] parameter(0)
  %r = f32[0,2] reshape(%x)
  %n = f32[0,2] negate(%r)
  %z = f32[] constant(1.5)
  %s = f32[2] reduce(%x, %z), dimensions={1}, to_apply=%add
  ROOT %t = (f32[0,2], f32[2]) tuple(%n, %s)
}";
    let (out, _) = run(hlo, &[f32s(&[2, 0], &[])]);
    assert_eq!(out[0], f32s(&[0, 2], &[]));
    // Nothing to reduce: the init.
    assert_eq!(out[1], f32s(&[2], &[1.5, 1.5]));
}

#[test]
fn transcendentals_are_within_their_stated_ulp_bounds() {
    // The kernels inline f32 approximations (targets::cpu::math); its table states the
    // maximum error against the correctly rounded result: exp 1, log 1, tanh 3,
    // logistic 2, erf 2 ulp.
    let hlo = "HloModule m
ENTRY %main (x: f32[6]) -> (f32[6], f32[6], f32[6], f32[6], f32[6]) {
  %x = f32[6] parameter(0)
  %e = f32[6] exponential(%x)
  %a = f32[6] abs(%x)
  %l = f32[6] log(%a)
  %t = f32[6] tanh(%x)
  %g = f32[6] logistic(%x)
  %r = f32[6] erf(%x)
  ROOT %out = (f32[6], f32[6], f32[6], f32[6], f32[6]) tuple(%e, %l, %t, %g, %r)
}";
    let xs = [-3.25, -1.0, -0.1, 0.3, 2.0, 9.5];
    let (out, kinds) = run(hlo, &[f32s(&[6], &xs)]);
    assert_eq!(kinds, vec![KernelKind::Loop]);
    type Reference = (fn(f64) -> f64, u64);
    let refs: [Reference; 5] = [
        (f64::exp, 1),
        (|x: f64| x.abs().ln(), 1),
        (f64::tanh, 3),
        (|x: f64| 1.0 / (1.0 + (-x).exp()), 2),
        (libm::erf, 2),
    ];
    for (o, (f, bound)) in out.iter().zip(refs) {
        for (&got, &x) in o.to_f64_vec().iter().zip(&xs) {
            let want = f(x as f32 as f64);
            assert!(ulps(got as f32, want as f32) <= bound, "{got} vs {want} at {x}");
        }
    }
    // tanh(9.5) = 1 - 1.1e-8 rounds to 1 exactly.
    assert_eq!(out[2].to_f64_vec()[5], 1.0);
}

#[test]
fn f64_transcendentals_call_the_c_library() {
    // f64 calls exp, log1p, atan2, pow and fmod by their C names: the same functions
    // Rust's f64 methods (the interpreter) use, so results are equal (`run` checks f64
    // exactly); the CLIF shows the calls.
    let hlo = "HloModule m
ENTRY %main (x: f64[4], y: f64[4]) -> (f64[4], f64[4], f64[4], f64[4], f64[4], f64[4]) {
  %x = f64[4] parameter(0)
  %y = f64[4] parameter(1)
  %e = f64[4] exponential(%x)
  %l = f64[4] log-plus-one(%y)
  %a = f64[4] atan2(%x, %y)
  %p = f64[4] power(%y, %x)
  %r = f64[4] remainder(%x, %y)
  %g = f64[4] logistic(%x)
  ROOT %out = (f64[4], f64[4], f64[4], f64[4], f64[4], f64[4]) tuple(%e, %l, %a, %p, %r, %g)
}";
    let f64s = |v: &[f64]| Literal::from_f64s(Shape::new(ElementType::F64, vec![4]), v);
    let (out, kinds) = run(hlo, &[f64s(&[-2.5, 0.0, 1.0, 7.25]), f64s(&[0.75, -4.0, 3.0, 2.0])]);
    assert_eq!(kinds, vec![KernelKind::Loop]);
    assert_eq!(out[0].to_f64_vec()[2], 1f64.exp());
    assert_eq!(out[3].to_f64_vec()[3], 2f64.powf(7.25));
    assert_eq!(out[4].to_f64_vec(), vec![-0.25, 0.0, 1.0, 1.25]);
    let module = hloscope_core::parse::parse_module(hlo).unwrap();
    let exe = cpu::compile(&module).unwrap();
    let clif = (0..exe.plan().kernels.len()).filter_map(|i| exe.clif(i)).collect::<String>();
    // exp (twice: exponential and logistic), log1p, atan2, pow, fmod.
    assert!(clif.matches("= call fn").count() >= 6, "{clif}");
}

#[test]
fn compiled_kernels_show_their_clif_and_machine_code() {
    let hlo = "HloModule m
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %n = f32[8] multiply(%x, %x)
}";
    let module = hloscope_core::parse::parse_module(hlo).unwrap();
    let exe = cpu::compile(&module).unwrap();
    let clif = exe.clif(0).unwrap();
    assert!(clif.contains("fmul"), "{clif}");
    assert!(!exe.asm(0).unwrap().is_empty());
    assert_eq!(exe.clif(1), None);
}

#[test]
fn a_compile_without_listings_has_none_and_computes_the_same_bits() {
    // Softmax rows: a reduction, exp (strip-mined on wide CPUs) and a division.
    let hlo = "HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[16,256]) -> f32[16,256] {
  %x = f32[16,256] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[16] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[16,256] broadcast(%mx), dimensions={0}
  %d = f32[16,256] subtract(%x, %mb)
  %e = f32[16,256] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[16] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %sb = f32[16,256] broadcast(%s), dimensions={0}
  ROOT %y = f32[16,256] divide(%e, %sb)
}";
    let module = cpu::optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap();
    let with = cpu::compile(&module).unwrap();
    let without = cpu::compile_with(&module, cpu::CompileOptions { listings: false, ..Default::default() }).unwrap();
    let kernels = with.plan().kernels.len();
    assert!((0..kernels).any(|i| with.clif(i).is_some() && with.asm(i).is_some()));
    for i in 0..kernels {
        assert_eq!((without.clif(i), without.asm(i)), (None, None), "kernel {i}");
    }
    let x: Vec<f64> = (0..16 * 256).map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0).collect();
    let arg = Value::Array(Literal::from_f64s(Shape::new(ElementType::F32, vec![16, 256]), &x));
    let (a, b) = (with.run(std::slice::from_ref(&arg)).unwrap(), without.run(&[arg]).unwrap());
    let bits = |v: &Value| v.as_array().unwrap().to_f64_vec().iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a), bits(&b));
    // The rows sum to 1: the kernels ran.
    let y = a.as_array().unwrap().to_f64_vec();
    assert!((y[..256].iter().sum::<f64>() - 1.0).abs() < 1e-4);
}

/// A while loop over (i, s): while i < 5 { s += i * i; i += 1 }.
const SQUARES_LOOP: &str = "%cond (i: s32[], s: f32[]) -> pred[] {
  %i = s32[] parameter(0)
  %s = f32[] parameter(1)
  %five = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %five), direction=LT
}
%body (i: s32[], s: f32[]) -> (s32[], f32[]) {
  %i = s32[] parameter(0)
  %s = f32[] parameter(1)
  %f = f32[] convert(%i)
  %sq = f32[] multiply(%f, %f)
  %s2 = f32[] add(%s, %sq)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[]) tuple(%i2, %s2)
}
";

#[test]
fn while_loops_run_their_compiled_bodies() {
    // i = 0, s = 0; while i < 5: s += i * i; i += 1  ->  s = 0+1+4+9+16 = 30.
    let hlo = &format!(
        "HloModule m
{SQUARES_LOOP}ENTRY %main (x: f32[]) -> (s32[], f32[]) {{
  %x = f32[] parameter(0)
  %zero = s32[] constant(0)
  ROOT %w = (s32[], f32[]) while(%zero, %x), condition=%cond, body=%body
}}"
    );
    let (out, kinds) = run(hlo, &[f32s(&[], &[0.0])]);
    assert_eq!(out, vec![s32(&[], &[5]), f32s(&[], &[30.0])]);
    assert_eq!(kinds, vec![KernelKind::While]);
}

#[test]
fn a_module_compiled_owned_runs_its_loop_and_branches_as_a_borrowed_one_does() {
    // s = x + 30 after the loop; branch 0 doubles [s, s], branch 1 negates it.
    let hlo = &format!(
        "HloModule m
{SQUARES_LOOP}%double (x: f32[2]) -> f32[2] {{
  %x = f32[2] parameter(0)
  ROOT %d = f32[2] add(%x, %x)
}}
%negate (x: f32[2]) -> f32[2] {{
  %x = f32[2] parameter(0)
  ROOT %n = f32[2] negate(%x)
}}
ENTRY %main (x: f32[], i: s32[]) -> f32[2] {{
  %x = f32[] parameter(0)
  %i = s32[] parameter(1)
  %zero = s32[] constant(0)
  %w = (s32[], f32[]) while(%zero, %x), condition=%cond, body=%body
  %s = f32[] get-tuple-element(%w), index=1
  %v = f32[2] broadcast(%s), dimensions={{}}
  ROOT %c = f32[2] conditional(%i, %v, %v), branch_computations={{%double, %negate}}
}}"
    );
    let module = cpu::optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap();
    let borrowed = cpu::compile_with(&module, Default::default()).unwrap();
    let owned = cpu::compile_owned(module, Default::default()).unwrap();
    let kinds: Vec<KernelKind> = owned.plan().kernels.iter().map(|k| k.kind.clone()).collect();
    assert!(kinds.contains(&KernelKind::While) && kinds.contains(&KernelKind::Case), "{kinds:?}");
    for (branch, want) in [(0, [62.0, 62.0]), (1, [-31.0, -31.0])] {
        let args = [Value::Array(f32s(&[], &[1.0])), Value::Array(s32(&[], &[branch]))];
        for exe in [&borrowed, &owned] {
            assert_eq!(exe.run(&args).unwrap(), Value::Array(f32s(&[2], &want)), "branch {branch}");
        }
    }
}

#[test]
fn integer_dots_are_compiled_as_reductions() {
    // [[1,2],[3,4]] . [[5,6],[7,8]] = [[19,22],[43,50]]; the s8 rhs is converted first.
    let hlo = "HloModule m
ENTRY %main (a: s32[2,2], b: s8[2,2]) -> s32[2,2] {
  %a = s32[2,2] parameter(0)
  %b = s8[2,2] parameter(1)
  ROOT %d = s32[2,2] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    let b = Literal::from_i64s(Shape::new(ElementType::S8, vec![2, 2]), &[5, 6, 7, 8]);
    let (out, kinds) = run(hlo, &[s32(&[2, 2], &[1, 2, 3, 4]), b]);
    assert_eq!(out[0], s32(&[2, 2], &[19, 22, 43, 50]));
    assert!(matches!(kinds[..], [KernelKind::Reduction(_)]), "{kinds:?}");
}

#[test]
fn conditionals_run_the_selected_compiled_branch() {
    // Branch 0 doubles, branch 1 negates; index 7 is out of range: the last branch.
    let hlo = "HloModule m
%double (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  ROOT %d = f32[2] add(%x, %x)
}
%negate (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  ROOT %n = f32[2] negate(%x)
}
ENTRY %main (i: s32[], x: f32[2]) -> f32[2] {
  %i = s32[] parameter(0)
  %x = f32[2] parameter(1)
  ROOT %c = f32[2] conditional(%i, %x, %x), branch_computations={%double, %negate}
}";
    let x = f32s(&[2], &[1.5, -4.0]);
    let (out, kinds) = run(hlo, &[s32(&[], &[0]), x.clone()]);
    assert_eq!(out[0], f32s(&[2], &[3.0, -8.0]));
    assert_eq!(kinds, vec![KernelKind::Case]);
    let (out, _) = run(hlo, &[s32(&[], &[7]), x]);
    assert_eq!(out[0], f32s(&[2], &[-1.5, 4.0]));
}

#[test]
fn runs_on_caller_bytes_in_place_and_through_copies() {
    // Results: a computed value, a parameter returned as is, the same computed value
    // again (copied, not written twice in place) and a constant.
    let hlo = "HloModule m
ENTRY %main (a: f32[3], b: f32[3]) -> (f32[3], f32[3], f32[3], f32[2]) {
  %a = f32[3] parameter(0)
  %b = f32[3] parameter(1)
  %s = f32[3] add(%a, %b)
  %c = f32[2] constant({7, 8})
  ROOT %t = (f32[3], f32[3], f32[3], f32[2]) tuple(%s, %b, %s, %c)
}";
    let module = hloscope_core::parse::parse_module(hlo).unwrap();
    let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
    let a = f32s(&[3], &[1.0, 2.0, 3.0]).to_le_bytes();
    let b = f32s(&[3], &[0.5, 0.25, -4.0]).to_le_bytes();
    // One input on an odd address: it is copied into the arena instead of read in place.
    let mut odd = vec![0u8; b.len() + 1];
    odd[1..].copy_from_slice(&b);
    let words = |n: usize| vec![0u64; n.div_ceil(8)];
    let mut outs: Vec<Vec<u64>> = vec![words(12), words(12), words(12), words(8)];
    let sizes = [12, 12, 12, 8];
    for _ in 0..2 {
        let mut views: Vec<&mut [u8]> = outs
            .iter_mut()
            .zip(sizes)
            .map(|(w, n)| unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr() as *mut u8, n) })
            .collect();
        exe.run_bytes(&[&a, &odd[1..]], &mut views, &mut |_, exec| exec()).unwrap();
        let lit =
            |i: usize, dims: &[i64]| Literal::from_le_bytes(Shape::new(ElementType::F32, dims), views[i]).unwrap();
        assert_eq!(lit(0, &[3]), f32s(&[3], &[1.5, 2.25, -1.0]));
        assert_eq!(lit(1, &[3]), f32s(&[3], &[0.5, 0.25, -4.0]));
        assert_eq!(lit(2, &[3]), f32s(&[3], &[1.5, 2.25, -1.0]));
        assert_eq!(lit(3, &[2]), f32s(&[2], &[7.0, 8.0]));
    }
    // Wrong sizes and counts are errors, not crashes.
    let mut one = [0u8; 12];
    assert!(exe.run_bytes(&[&a], &mut [&mut one[..]], &mut |_, exec| exec()).unwrap_err().contains("input buffers"));
    let short = [0u8; 8];
    let mut views: Vec<&mut [u8]> =
        outs.iter_mut().map(|w| unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr() as *mut u8, 8) }).collect();
    assert!(exe.run_bytes(&[&a, &short], &mut views, &mut |_, exec| exec()).unwrap_err().contains("holds 8 bytes"));
}

/// The module of the artifact tests: a while loop (cond and body are computations with
/// plans of their own), an opaque kernel (cholesky) and compiled loop kernels.
/// With x = 0.5 and m = [[2, 1], [1, 2.5]]: the loop gives i = 5, s = 0.5 + 0+1+4+9+16 =
/// 30.5, and m + m = [[4, 2], [2, 5]] has the lower Cholesky factor [[2, 0], [1, 2]].
fn artifact_hlo() -> String {
    format!(
        "HloModule m
{SQUARES_LOOP}ENTRY %main (x: f32[], m: f32[2,2]) -> (s32[], f32[], f32[2,2]) {{
  %x = f32[] parameter(0)
  %m = f32[2,2] parameter(1)
  %zero = s32[] constant(0)
  %w = (s32[], f32[]) while(%zero, %x), condition=%cond, body=%body
  %i = s32[] get-tuple-element(%w), index=0
  %s = f32[] get-tuple-element(%w), index=1
  %e = f32[2,2] add(%m, %m)
  %c = f32[2,2] cholesky(%e), cholesky_options={{lower=true}}
  ROOT %t = (s32[], f32[], f32[2,2]) tuple(%i, %s, %c)
}}"
    )
}

fn artifact_module(hlo: &str) -> hloscope_core::ir::Module {
    cpu::optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap()
}

/// Runs an executable of [`artifact_hlo`] and checks its hand-computed outputs.
fn check_artifact_outputs(exe: &cpu::CpuExecutable) {
    let args = [Value::Array(f32s(&[], &[0.5])), Value::Array(f32s(&[2, 2], &[2.0, 1.0, 1.0, 2.5]))];
    let out = exe.run(&args).unwrap().flatten();
    assert_eq!(out[0], s32(&[], &[5]));
    assert_eq!(out[1], f32s(&[], &[30.5]));
    let l = out[2].to_f64_vec();
    assert_eq!((l[0], l[2], l[3]), (2.0, 1.0, 2.0));
}

#[test]
fn artifacts_load_the_stored_module_and_plans() {
    let module = artifact_module(&artifact_hlo());
    let (exe, bytes) = cpu::compile_to_artifact(&module).unwrap();
    let loaded = cpu::load_artifact(&bytes).unwrap();
    // The very plan and module the compile made, not a re-derivation.
    assert_eq!(loaded.plan(), exe.plan());
    let print = hloscope_core::print::hlo::print_module;
    assert_eq!(print(loaded.module()), print(exe.module()));
    // One wrapper computation, for the interpreted cholesky.
    assert_eq!(loaded.module().comps.len(), module.comps.len() + 1);
    assert_eq!(loaded.module().comps.values().last().unwrap().name, exe.module().comps.values().last().unwrap().name);
    for i in 0..exe.plan().kernels.len() {
        assert_eq!((loaded.clif(i), loaded.asm(i)), (exe.clif(i), exe.asm(i)));
    }
    // The stored arena assignment is current: runs use it as is.
    assert!(matches!(loaded.arena_assignment(), std::borrow::Cow::Borrowed(_)));
    check_artifact_outputs(&exe);
    check_artifact_outputs(&loaded);
    // Loading twice from the same bytes gives the same executable again.
    check_artifact_outputs(&cpu::load_artifact(&bytes).unwrap());
}

#[test]
fn corrupt_or_foreign_binary_sections_are_refused() {
    use cpu::artifact::Artifact;
    let (_, bytes) = cpu::compile_to_artifact(&artifact_module(&artifact_hlo())).unwrap();
    let art = Artifact::from_bytes(&bytes).unwrap();
    assert_eq!(art.entry.children.len(), 2, "the while loop's cond and body");
    // A flipped byte anywhere in the module or a plan section breaks the checksum.
    let sections = [&art.module, &art.entry.plan, &art.entry.children[0].plan, &art.entry.children[1].plan];
    for section in sections {
        assert!(section.len() > 16, "a section of {} bytes", section.len());
        let at = bytes.windows(section.len()).position(|w| w == &section[..]).expect("the section is in the bytes");
        for i in (at..at + section.len()).step_by(5) {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            let err = cpu::load_artifact(&b).err().unwrap_or_else(|| panic!("a flipped byte at {i} was accepted"));
            assert!(err.contains("checksum mismatch"), "{err}");
        }
    }

    // Sections under a valid checksum that do not decode, or belong to another module
    // or computation: refused with the reason, never loaded.
    let (_, other) = cpu::compile_to_artifact(&artifact_module(
        "HloModule o\nENTRY %main (p: f32[4]) -> f32[4] {\n  %p = f32[4] parameter(0)\n  ROOT %e = f32[4] exponential(%p)\n}",
    ))
    .unwrap();
    let other = Artifact::from_bytes(&other).unwrap();
    let forged = |change: &dyn Fn(&mut Artifact)| -> String {
        let mut a = art.clone();
        change(&mut a);
        cpu::load_artifact(&a.to_bytes()).err().expect("a forged artifact was loaded")
    };
    type Forge<'a> = Box<dyn Fn(&mut Artifact) + 'a>;
    let cases: Vec<(&str, Forge, &str)> = vec![
        ("truncated module", Box::new(|a| a.module.truncate(a.module.len() / 2)), "module section does not decode"),
        ("module with a trailing byte", Box::new(|a| a.module.push(0)), "module section has 1 trailing bytes"),
        ("empty plan", Box::new(|a| a.entry.plan.clear()), "plan section does not decode"),
        ("truncated body plan", Box::new(|a| a.entry.children[1].plan.truncate(10)), "plan section does not decode"),
        ("plans swapped", Box::new(|a| a.entry.children[0].plan = art.entry.plan.clone()), "stale artifact"),
        ("another module's plan", Box::new(|a| a.entry.plan = other.entry.plan.clone()), "stale artifact"),
        ("another module", Box::new(|a| a.module = other.module.clone()), "stale artifact"),
        (
            "a computation missing",
            Box::new(|a| drop(a.entry.children.pop())),
            "stale artifact: a computation is missing",
        ),
    ];
    for (what, change, want) in cases {
        let err = forged(&*change);
        assert!(err.contains(want), "{what}: {err}");
    }
}

#[test]
fn outputs_written_in_place_match_the_interpreter() {
    // Unfused (compiled without the pipeline), so most kernels write over an operand
    // dying there: the two outputs of a multi-output loop over both of its operands,
    // then a subtract, a dynamic-update-slice, a scatter and a sort each over theirs.
    // f32[4,40000] is large enough for vector steps and several threads; every op is
    // exact, so results must equal the interpreter's bit for bit, on two runs.
    let hlo = "HloModule m
%mo (p: f32[4,40000], q: f32[4,40000]) -> (f32[4,40000], f32[4,40000]) {
  %p = f32[4,40000] parameter(0)
  %q = f32[4,40000] parameter(1)
  %a = f32[4,40000] add(%p, %q)
  %m = f32[4,40000] multiply(%p, %q)
  ROOT %t = (f32[4,40000], f32[4,40000]) tuple(%a, %m)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%lt (p: f32[], q: f32[]) -> pred[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %l = pred[] compare(%p, %q), direction=LT
}
ENTRY %main (x: f32[4,40000], y: f32[4,40000], u: f32[2,100], i: s32[], j: s32[], idx: s32[3,2], upd: f32[3], v: f32[64]) -> (f32[4,40000], f32[64]) {
  %x = f32[4,40000] parameter(0)
  %y = f32[4,40000] parameter(1)
  %u = f32[2,100] parameter(2)
  %i = s32[] parameter(3)
  %j = s32[] parameter(4)
  %idx = s32[3,2] parameter(5)
  %upd = f32[3] parameter(6)
  %v = f32[64] parameter(7)
  %n = f32[4,40000] negate(%x)
  %b = f32[4,40000] abs(%y)
  %f = (f32[4,40000], f32[4,40000]) fusion(%n, %b), kind=kLoop, calls=%mo
  %f0 = f32[4,40000] get-tuple-element(%f), index=0
  %f1 = f32[4,40000] get-tuple-element(%f), index=1
  %s = f32[4,40000] subtract(%f0, %f1)
  %d = f32[4,40000] dynamic-update-slice(%s, %u, %i, %j)
  %sc = f32[4,40000] scatter(%d, %idx, %upd), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=%add
  %r = f32[4,40000] maximum(%sc, %x)
  %vn = f32[64] negate(%v)
  %so = f32[64] sort(%vn), dimensions={0}, to_apply=%lt
  %vs = f32[64] abs(%so)
  ROOT %t = (f32[4,40000], f32[64]) tuple(%r, %vs)
}";
    let module = hloscope_core::parse::parse_module(hlo).unwrap();
    let n = 4 * 40000;
    let wave = |k: usize, f: f64| ((k as f64 * f).sin() * 100.0).round() / 8.0;
    let args: Vec<hloscope_core::ir::Value> = [
        f32s(&[4, 40000], &(0..n).map(|k| wave(k, 0.37)).collect::<Vec<_>>()),
        f32s(&[4, 40000], &(0..n).map(|k| wave(k, 0.11)).collect::<Vec<_>>()),
        f32s(&[2, 100], &(0..200).map(|k| k as f64).collect::<Vec<_>>()),
        s32(&[], &[1]),
        s32(&[], &[39950]),
        s32(&[3, 2], &[0, 5, 3, 39999, 0, 5]),
        f32s(&[3], &[1.5, -2.0, 4.0]),
        f32s(&[64], &(0..64).map(|k| wave(k, 1.3)).collect::<Vec<_>>()),
    ]
    .into_iter()
    .map(hloscope_core::ir::Value::Array)
    .collect();
    let want = hloscope_core::interp::Interpreter::new(&module).run(&args).unwrap();
    let exe = cpu::compile(&module).unwrap();
    let arena = exe.arena_assignment();
    let in_place: Vec<&str> = exe
        .plan()
        .buffers
        .iter()
        .filter(|(b, _)| arena.in_place_of[cranelift_entity::EntityRef::index(*b)].is_some())
        .map(|(_, buf)| buf.name.as_str())
        .collect();
    assert_eq!(in_place, ["f.0", "f.1", "s", "d", "sc", "so"], "{}", arena.summary());
    assert_eq!(exe.run(&args).unwrap(), want);
    assert_eq!(exe.run(&args).unwrap(), want);
}

#[test]
fn kernels_compiled_on_several_threads_give_the_same_code_every_time() {
    // The transformer block's kernels compile on every core, each thread taking the next
    // kernel: which thread compiles what varies from run to run, the code must not (nor
    // its order in the artifact, nor the results).
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus/transformer_block/module.mlir");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let module = cpu::optimize(&hloscope_core::parse::mlir::parse(&text).unwrap()).unwrap();
    let args = hloscope_core::interp::random_inputs(&module, 3);
    let (first, bytes) = cpu::compile_to_artifact(&module).unwrap();
    assert!(first.plan().kernels.len() >= 10, "{}", first.plan().summary());
    let want = first.run(&args).unwrap();
    for _ in 0..3 {
        let (exe, again) = cpu::compile_to_artifact(&module).unwrap();
        assert!(again == bytes, "a compile gave another artifact");
        assert_eq!(exe.run(&args).unwrap(), want);
    }
}

/// The JAX corpus's softmax (4x10) or layernorm (4x16, mean over 16 columns) with its
/// shapes scaled to `rows` x `cols`.
fn scaled_corpus(name: &str, rows: i64, cols: i64) -> hloscope_core::ir::Module {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../backend/tests/corpus/{name}/module.mlir"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let c = if name == "softmax" { 10 } else { 16 };
    let text = text
        .replace(&format!("tensor<4x{c}x"), &format!("tensor<{rows}x{cols}x"))
        .replace("tensor<4x1x", &format!("tensor<{rows}x1x"))
        .replace("tensor<4xf32>", &format!("tensor<{rows}xf32>"))
        .replace(&format!("tensor<{c}xf32>"), &format!("tensor<{cols}xf32>"))
        .replace(&format!("tensor<1x{c}x"), &format!("tensor<1x{cols}x"))
        .replace("1.600000e+01", &format!("{cols}.0"));
    hloscope_core::parse::mlir::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The bytes of every array of `v`, to compare runs bit for bit.
fn bits(v: &hloscope_core::ir::Value) -> Vec<Vec<u8>> {
    v.clone().flatten().iter().map(|l| l.to_le_bytes()).collect()
}

/// Every element of `got` within `rel` (relative, or absolute below 1) of the
/// interpreter's result of `module` on `args`.
fn assert_near_interpreter(
    module: &hloscope_core::ir::Module,
    args: &[hloscope_core::ir::Value],
    got: &hloscope_core::ir::Value,
    rel: f64,
    what: &str,
) {
    let want = hloscope_core::interp::Interpreter::new(module).run(args).unwrap().flatten();
    for (w, g) in want.iter().zip(&got.clone().flatten()) {
        for i in 0..w.num_elements() {
            let (a, b) = (w.get(i).as_f64(), g.get(i).as_f64());
            assert!((a - b).abs() <= rel * a.abs().max(1.0), "{what} [{i}]: {b} vs {a}");
        }
    }
}

/// Runs `exe` on `args`, returning its results and the longest run of kernels one
/// execution covered (a row chain's length, or 1).
fn run_counting_chains(
    exe: &cpu::CpuExecutable,
    args: &[hloscope_core::ir::Value],
) -> (hloscope_core::ir::Value, usize) {
    let mut longest = 0;
    let v = exe
        .run_with(args, &mut |k, exec| {
            longest = longest.max(k.chained.len());
            exec()
        })
        .unwrap();
    (v, longest)
}

#[test]
fn row_chains_give_the_same_bits_as_kernel_by_kernel() {
    // Softmax and layernorm from the JAX corpus at sizes that make one row chain of all
    // their kernels, split in many chunks over the pool threads (4096x1024: 16 MiB per
    // buffer; 1001x37: odd rows and columns, vector tails), plus the original 4x10 /
    // 4x16 (too small to chain). Interleaving must change no bit; against the
    // interpreter the results agree within the transcendental and summation bounds.
    for (name, rows, cols, check_interp) in [
        ("softmax", 4096, 1024, false),
        ("softmax", 1001, 37, true),
        ("layernorm", 4096, 1024, false),
        ("layernorm", 1001, 37, true),
        ("softmax", 4, 10, true),
    ] {
        let module = scaled_corpus(name, rows, cols);
        let args = hloscope_core::interp::random_inputs(&module, 7);
        // Through an artifact, as the cache stores it: the chains come with the plan.
        let (fresh, bytes) = cpu::compile_to_artifact(&cpu::optimize(&module).unwrap()).unwrap();
        let exe = cpu::load_artifact(&bytes).unwrap();
        assert_eq!(exe.plan().chains, fresh.plan().chains);
        let n = exe.plan().kernels.len();
        let expect_chain = rows * cols > 100;
        let every_kernel = 0..n; // one chain of them all: a vec of one range
        assert_eq!(
            exe.plan().chains,
            if expect_chain { vec![every_kernel] } else { vec![] },
            "{name} {rows}x{cols}:\n{}",
            exe.plan().summary()
        );
        exe.set_row_chains(None);
        let (plain, one) = run_counting_chains(&exe, &args);
        exe.set_row_chains(Some(cpu::default_chain_bytes()));
        let (chained, longest) = run_counting_chains(&exe, &args);
        // A small working set per chunk: many more chunks than threads.
        exe.set_row_chains(Some(4096));
        let (small_chunks, _) = run_counting_chains(&exe, &args);
        assert_eq!(one, 1);
        assert_eq!(longest, if expect_chain { n } else { 1 }, "{name} {rows}x{cols}");
        assert!(bits(&plain) == bits(&chained), "{name} {rows}x{cols}: chained run differs");
        assert!(bits(&plain) == bits(&small_chunks), "{name} {rows}x{cols}: small chunks differ");
        if check_interp {
            assert_near_interpreter(&module, &args, &chained, 1e-5, &format!("{name} {rows}x{cols}"));
        }
    }
}

#[test]
fn a_multi_output_fusion_reading_its_own_reduction_inside_another_is_not_miscompiled() {
    // As XLA dumps it: one fusion returning a row mean and the variance computed from
    // that mean. The variance's loop needs the finished mean, so the two reductions
    // cannot share one pass over the row; the planner must not read the mean's
    // accumulator while it is still summing.
    let hlo = r#"
HloModule mean_var
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  x = f32[8,64] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant(64)
  sum = f32[8] reduce(x, zero), dimensions={1}, to_apply=add
  nb = f32[8] broadcast(n), dimensions={}
  mean = f32[8] divide(sum, nb)
  mb = f32[8,64] broadcast(mean), dimensions={0}
  d = f32[8,64] subtract(x, mb)
  sq = f32[8,64] multiply(d, d)
  ss = f32[8] reduce(sq, zero), dimensions={1}, to_apply=add
  var = f32[8] divide(ss, nb)
  ROOT t = (f32[8], f32[8]) tuple(mean, var)
}
ENTRY main {
  p = f32[8,64] parameter(0)
  ROOT f = (f32[8], f32[8]) fusion(p), kind=kInput, calls=fused
}
"#;
    let module = hloscope_core::parse::parse_module(hlo).unwrap();
    let xs: Vec<f64> = (0..8 * 64).map(|i| 3.0 + ((i * 37) % 101) as f64 / 25.0).collect();
    let args = vec![hloscope_core::ir::Value::Array(f32s(&[8, 64], &xs))];
    let want = hloscope_core::interp::Interpreter::new(&module).run(&args).unwrap().flatten();
    // Straight to the planner, as a dump is: no pass splits the fusion first.
    let exe = cpu::compile(&module).unwrap();
    let got = exe.run(&args).unwrap().flatten();
    // The variance of each row, by hand: well away from the one a wrong mean gives.
    let row_var = |r: usize| {
        let row = &xs[r * 64..(r + 1) * 64];
        let mean = row.iter().sum::<f64>() / 64.0;
        row.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 64.0
    };
    for (r, v) in got[1].to_f64_vec().into_iter().enumerate() {
        assert!((v - row_var(r)).abs() < 1e-4 * row_var(r), "row {r}: {v} vs {}", row_var(r));
    }
    for (g, w) in got.iter().zip(&want) {
        assert!(close(g, w, 4), "{g:?} vs {w:?}; plan:\n{}", exe.plan().summary());
    }
}

#[test]
fn a_fusion_reading_its_reduction_transposed_is_not_miscompiled() {
    // A hand-written input fusion adds a reduction's result to its own transpose. The
    // result exists only at the element being computed, so the kernel cannot read it
    // at another: the planner refuses that description, and the kernel runs on the
    // interpreter instead of adding each element to itself (2.2 off on these inputs).
    let hlo = r#"
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  p0 = f32[4,4,8] parameter(0)
  z = f32[] constant(0)
  r = f32[4,4] reduce(p0, z), dimensions={2}, to_apply=add
  t = f32[4,4] transpose(r), dimensions={1,0}
  ROOT a = f32[4,4] add(r, t)
}
ENTRY main {
  x = f32[4,4,8] parameter(0)
  ROOT f = f32[4,4] fusion(x), kind=kInput, calls=fused
}
"#;
    let module = hloscope_core::parse::parse_module(hlo).unwrap();
    let xs: Vec<f64> = (0..4 * 4 * 8).map(|i| ((i * 29) % 53) as f64 / 7.0).collect();
    let args = vec![hloscope_core::ir::Value::Array(f32s(&[4, 4, 8], &xs))];
    let want = hloscope_core::interp::Interpreter::new(&module).run(&args).unwrap().flatten();
    let exe = cpu::compile(&module).unwrap();
    let got = exe.run(&args).unwrap().flatten();
    assert!(close(&got[0], &want[0], 4), "{:?} vs {:?}; plan:\n{}", got[0], want[0], exe.plan().summary());
    let sums: Vec<f64> = xs.chunks(8).map(|c| c.iter().sum()).collect();
    let by_hand: Vec<f64> = (0..16).map(|k| sums[k] + sums[(k % 4) * 4 + k / 4]).collect();
    for (g, w) in got[0].to_f64_vec().iter().zip(by_hand) {
        assert!((g - w).abs() < 1e-4, "{g} vs {w}");
    }
}

/// Three layers of `tanh(h · w)`: the first two layers' epilogues are the same code on
/// different buffers, so the second runs the first one's machine code and says so (the
/// third writes the program's result, a difference in its code); all agree with the
/// interpreter.
#[test]
fn kernels_that_differ_only_in_their_buffers_share_machine_code() {
    let hlo = "HloModule m
ENTRY %main (x: f32[8,8], w: f32[8,8]) -> f32[8,8] {
  %x = f32[8,8] parameter(0)
  %w = f32[8,8] parameter(1)
  %d1 = f32[8,8] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %h1 = f32[8,8] tanh(%d1)
  %d2 = f32[8,8] dot(%h1, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %h2 = f32[8,8] tanh(%d2)
  %d3 = f32[8,8] dot(%h2, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %h3 = f32[8,8] tanh(%d3)
}";
    let x: Vec<f64> = (0..64).map(|i| ((i * 7 % 13) as f64 - 6.0) / 8.0).collect();
    let w: Vec<f64> = (0..64).map(|i| ((i * 5 % 11) as f64 - 5.0) / 10.0).collect();
    let args = [f32s(&[8, 8], &x), f32s(&[8, 8], &w)];
    // GEMM's blocked sums and the kernels' tanh each differ from the interpreter by an ulp
    // or so, and three layers compound that (with cancellation in the sums): within 1e-6
    // of values of order 0.1 to 1. A kernel reading another's buffers would be off by far
    // more.
    run_against_interpreter(hlo, &args, |g, w| {
        let worst = g.to_f64_vec().iter().zip(w.to_f64_vec()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        if worst <= 1e-6 {
            Ok(())
        } else {
            Err(format!("off by {worst}: {g:?} vs {w:?}"))
        }
    });
    let module = hloscope_core::parse::parse_module(hlo).unwrap();
    let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
    let kernels = &exe.plan().kernels;
    let sharing: Vec<usize> = (0..kernels.len()).filter(|&i| exe.code_summary(i).contains(", code of ")).collect();
    assert_eq!(sharing.len(), 1, "{:?}", (0..kernels.len()).map(|i| exe.code_summary(i)).collect::<Vec<_>>());
    let i = sharing[0];
    // The two epilogues (each dot kernel is followed by its loop kernel): 1 and 3.
    assert_eq!(i, 3);
    assert!(!exe.code_summary(1).contains("code of"), "{}", exe.code_summary(1));
    let (j, first) = (1, format!("kernel 1 ({})", kernels[1].name));
    // The same function, so the same shape of code.
    assert_eq!(exe.code_summary(i), format!("{}, code of {first}", exe.code_summary(j)));
    // An artifact stores the shared code once: loaded, the kernel still runs (and names)
    // its first's code, and the results are the same.
    let (fresh, bytes) = cpu::compile_to_artifact(&cpu::optimize(&module).unwrap()).unwrap();
    let loaded = cpu::load_artifact(&bytes).unwrap();
    assert_eq!(loaded.code_summary(i), exe.code_summary(i));
    assert_eq!(loaded.asm(i), loaded.asm(j));
    let args = args.map(hloscope_core::ir::Value::Array);
    assert_eq!(loaded.run(&args).unwrap(), fresh.run(&args).unwrap());
    let code = loaded.asm(j).unwrap();
    assert!(!code.is_empty());
}

#[test]
fn dot_epilogues_run_tile_by_tile_with_the_same_bits() {
    // relu(dot + bias) as one output fusion: its epilogue runs inside the dot's tasks,
    // block of rows by block of rows. Small and large products (one thread and the
    // pool, also for a small dot with a large epilogue), the register tiles in blocks of
    // k (k > 512) and with rows of A copied apart first (k = 1024), `gemm`
    // (f64), free dims that make one epilogue row several result rows, and
    // batches that a task's block spans. Running
    // the epilogue after the whole dot must give the same bits, and both the
    // interpreter's values within the reassociated sums' rounding.
    let cases: [(&str, &str, &str, &str, &str); 8] = [
        ("f32", "[300,64]", "[64,96]", "[300,96]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        ("f32", "[64,1024]", "[1024,80]", "[64,80]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        // A dot too small to split whose epilogue is not: the pair runs on the pool.
        ("f32", "[2048,2]", "[2,48]", "[2048,48]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        ("f32", "[17,3]", "[3,7]", "[17,7]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        ("f32", "[256,600]", "[600,64]", "[256,64]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        ("f64", "[200,32]", "[32,48]", "[200,48]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        ("f32", "[20,8,16]", "[16,24]", "[20,8,24]", "lhs_contracting_dims={2}, rhs_contracting_dims={0}"),
        (
            "f32",
            "[16,20,16]",
            "[16,16,12]",
            "[16,20,12]",
            "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
        ),
    ];
    for (t, a, b, d, dims) in cases {
        let last: &str = d.trim_matches(['[', ']']).rsplit(',').next().unwrap();
        let rank = d.matches(',').count() + 1;
        let hlo = format!(
            "HloModule m
ENTRY %main (a: {t}{a}, b: {t}{b}, c: {t}[{last}]) -> {t}{d} {{
  %a = {t}{a} parameter(0)
  %b = {t}{b} parameter(1)
  %c = {t}[{last}] parameter(2)
  %d = {t}{d} dot(%a, %b), {dims}
  %cs = {t}{d} broadcast(%c), dimensions={{{}}}
  %s = {t}{d} add(%d, %cs)
  %z = {t}[] constant(0)
  %zs = {t}{d} broadcast(%z), dimensions={{}}
  ROOT %r = {t}{d} maximum(%s, %zs)
}}",
            rank - 1
        );
        let module = hloscope_core::parse::parse_module(&hlo).unwrap_or_else(|e| panic!("{e:?}\n{hlo}"));
        let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
        let kinds: Vec<&KernelKind> = exe.plan().kernels.iter().map(|k| &k.kind).collect();
        assert_eq!(kinds, [&KernelKind::Dot, &KernelKind::Loop], "{a} x {b}");
        let args = hloscope_core::interp::random_inputs(&module, 3);
        exe.set_tile_epilogues(false);
        let (after, one) = run_counting_chains(&exe, &args);
        exe.set_tile_epilogues(true);
        let (tiled, two) = run_counting_chains(&exe, &args);
        assert_eq!((one, two), (1, 2), "{a} x {b}: the epilogue ran inside the dot's tasks");
        assert!(bits(&after) == bits(&tiled), "{a} x {b}: tile by tile differs");
        let k = a.trim_matches(['[', ']']).rsplit(',').next().unwrap().parse::<f64>().unwrap();
        assert_near_interpreter(&module, &args, &tiled, 1e-6 * k, &format!("{a} x {b}"));
    }
}

#[test]
fn batched_dots_whose_rows_of_a_crowd_l1_sets_give_the_interpreters_values() {
    // Rows of 1024 and 3072 floats are 4 KiB apart (a multiple), so the tiles read A
    // from a copy with its rows spread out; the batches' offsets must carry over, and an
    // A read through strides (transposed) is not copied.
    let batched = "lhs_batch_dims={0}, rhs_batch_dims={0}";
    for (a, b, d, k, contracting) in [
        ("[3,40,1024]", "[3,1024,48]", "[3,40,48]", 1024.0, "lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
        ("[2,30,3072]", "[2,3072,20]", "[2,30,20]", 3072.0, "lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
        ("[2,1024,40]", "[2,1024,48]", "[2,40,48]", 1024.0, "lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
    ] {
        let hlo = format!(
            "HloModule m
ENTRY %main (a: f32{a}, b: f32{b}) -> f32{d} {{
  %a = f32{a} parameter(0)
  %b = f32{b} parameter(1)
  ROOT %d = f32{d} dot(%a, %b), {batched}, {contracting}
}}"
        );
        let module = hloscope_core::parse::parse_module(&hlo).unwrap_or_else(|e| panic!("{e:?}\n{hlo}"));
        let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
        let args = hloscope_core::interp::random_inputs(&module, 5);
        let out = exe.run(&args).unwrap();
        assert_near_interpreter(&module, &args, &out, 1e-6 * k, &format!("{a} x {b}"));
    }
}

#[test]
fn a_dot_epilogue_over_the_dots_own_operand_runs_after_the_dot() {
    // r = dot(x, w) + x, x a temporary that dies in the epilogue: the arena gives the
    // epilogue's output x's bytes (in place, x read at the element's own position). Run
    // inside the dot's tasks it would overwrite rows of x that other tasks still
    // multiply, so the runtime runs it after the whole dot.
    let hlo = "HloModule m
ENTRY %main (p: f32[256,64], w: f32[64,64]) -> f32[256,64] {
  %p = f32[256,64] parameter(0)
  %w = f32[64,64] parameter(1)
  %x = f32[256,64] sine(%p)
  %d = f32[256,64] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %r = f32[256,64] add(%x, %d)
  ROOT %o = f32[256,64] dot(%r, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}";
    let module = hloscope_core::parse::parse_module(hlo).unwrap();
    let exe = cpu::compile(&cpu::optimize(&module).unwrap()).unwrap();
    let summary = exe.arena_assignment().summary();
    assert!(summary.contains("1 outputs in place"), "{summary}");
    let args = hloscope_core::interp::random_inputs(&module, 5);
    let (got, longest) = run_counting_chains(&exe, &args);
    assert_eq!(longest, 1, "{summary}");
    assert_near_interpreter(&module, &args, &got, 1e-4, "dot(x, w) + x");
}
