//! The CPU target's data-dependent and library kernels against the interpreter:
//! dynamic slices, dynamic update slices and gathers (elemental, start indices read from
//! data and clamped), on hand-checked values and on random inputs. Needs the `cpu` feature.

#![cfg(feature = "cpu")]

use crate::common;

use common::{f32s, lit, run_against_interpreter, s32, Rng};
use hloscope_core::ir::{ElementType, Literal, Shape};
use hloscope_core::kernel::KernelKind;

/// Runs `hlo` on the CPU and in the interpreter; outputs must agree bit for bit.
fn run(hlo: &str, args: &[Literal]) -> (Vec<Literal>, Vec<KernelKind>) {
    run_against_interpreter(hlo, args, |g, w| if g == w { Ok(()) } else { Err(format!("{g:?} vs {w:?}")) })
}

fn iota_f32(dims: &[i64]) -> Literal {
    let n: i64 = dims.iter().product();
    f32s(dims, &(0..n).map(|i| i as f64).collect::<Vec<_>>())
}

/// Random inputs on top of the shared generator.
trait RandomLiterals {
    fn f32s(&mut self, dims: &[i64]) -> Literal;
    fn ints(&mut self, elem: ElementType, dims: &[i64], lo: i64, hi: i64) -> Literal;
}

impl RandomLiterals for Rng {
    fn f32s(&mut self, dims: &[i64]) -> Literal {
        let n: i64 = dims.iter().product();
        f32s(dims, &(0..n).map(|_| self.int(-1000, 1000) as f64 / 8.0).collect::<Vec<_>>())
    }
    fn ints(&mut self, elem: ElementType, dims: &[i64], lo: i64, hi: i64) -> Literal {
        let n: i64 = dims.iter().product();
        lit(elem, dims, &(0..n).map(|_| self.int(lo, hi)).collect::<Vec<_>>())
    }
}

#[test]
fn dynamic_slice_clamps_its_starts() {
    let hlo = "HloModule m
ENTRY %main (x: f32[4,5], i: s32[], j: s32[]) -> f32[2,3] {
  %x = f32[4,5] parameter(0)
  %i = s32[] parameter(1)
  %j = s32[] parameter(2)
  ROOT %d = f32[2,3] dynamic-slice(%x, %i, %j), dynamic_slice_sizes={2,3}
}";
    let x = iota_f32(&[4, 5]);
    // Starts (1, 1): rows 1..3, columns 1..4.
    let (out, kinds) = run(hlo, &[x.clone(), s32(&[], &[1]), s32(&[], &[1])]);
    assert_eq!(out[0], f32s(&[2, 3], &[6.0, 7.0, 8.0, 11.0, 12.0, 13.0]));
    assert_eq!(kinds, vec![KernelKind::Loop]);
    // Starts (7, -3) clamp to (2, 0).
    let (out, _) = run(hlo, &[x, s32(&[], &[7]), s32(&[], &[-3])]);
    assert_eq!(out[0], f32s(&[2, 3], &[10.0, 11.0, 12.0, 15.0, 16.0, 17.0]));
}

#[test]
fn dynamic_slice_with_unsigned_and_narrow_starts() {
    let hlo = "HloModule m
ENTRY %main (x: f32[6], i: u32[]) -> f32[2] {
  %x = f32[6] parameter(0)
  %i = u32[] parameter(1)
  ROOT %d = f32[2] dynamic-slice(%x, %i), dynamic_slice_sizes={2}
}";
    let x = iota_f32(&[6]);
    // u32 4294967295 is a huge start: clamped to 4.
    let (out, _) = run(hlo, &[x.clone(), lit(ElementType::U32, &[], &[4294967295])]);
    assert_eq!(out[0], f32s(&[2], &[4.0, 5.0]));
    let (out, _) = run(hlo, &[x, lit(ElementType::U32, &[], &[3])]);
    assert_eq!(out[0], f32s(&[2], &[3.0, 4.0]));
    let hlo8 = "HloModule m
ENTRY %main (x: f32[6], i: s8[]) -> f32[3] {
  %x = f32[6] parameter(0)
  %i = s8[] parameter(1)
  ROOT %d = f32[3] dynamic-slice(%x, %i), dynamic_slice_sizes={3}
}";
    let (out, _) = run(hlo8, &[iota_f32(&[6]), lit(ElementType::S8, &[], &[-100])]);
    assert_eq!(out[0], f32s(&[3], &[0.0, 1.0, 2.0]));
}

#[test]
fn dynamic_update_slice_writes_a_clamped_window() {
    let hlo = "HloModule m
ENTRY %main (x: f32[3,4], u: f32[2,2], i: s32[], j: s32[]) -> f32[3,4] {
  %x = f32[3,4] parameter(0)
  %u = f32[2,2] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %d = f32[3,4] dynamic-update-slice(%x, %u, %i, %j)
}";
    let x = f32s(&[3, 4], &[0.0; 12]);
    let u = f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    // Starts (5, 1) clamp to (1, 1).
    let (out, kinds) = run(hlo, &[x, u, s32(&[], &[5]), s32(&[], &[1])]);
    assert_eq!(out[0], f32s(&[3, 4], &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 4.0, 0.0]));
    assert_eq!(kinds, vec![KernelKind::Loop]);
}

#[test]
fn gather_rows_like_an_embedding_lookup() {
    // jnp.take(table, ids, axis=0): each id selects a row; 9 clamps to the last row.
    let hlo = "HloModule m
ENTRY %main (t: f32[4,3], ids: s32[3,1]) -> f32[3,3] {
  %t = f32[4,3] parameter(0)
  %ids = s32[3,1] parameter(1)
  ROOT %g = f32[3,3] gather(%t, %ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
}";
    let (out, kinds) = run(hlo, &[iota_f32(&[4, 3]), s32(&[3, 1], &[2, 0, 9])]);
    assert_eq!(out[0], f32s(&[3, 3], &[6.0, 7.0, 8.0, 0.0, 1.0, 2.0, 9.0, 10.0, 11.0]));
    assert_eq!(kinds, vec![KernelKind::Loop]);
}

#[test]
fn gather_with_batching_dims_and_implicit_index_vector() {
    // Operand [2 batches, 5]; indices [3, 2] (implicit vector dim 2), batch dim 1 of the
    // indices pairs with operand dim 0. Output [3, 2, 2]: slices of 2 starting at the index.
    let hlo = "HloModule m
ENTRY %main (x: f32[2,5], i: s32[3,2]) -> f32[3,2,2] {
  %x = f32[2,5] parameter(0)
  %i = s32[3,2] parameter(1)
  ROOT %g = f32[3,2,2] gather(%x, %i), offset_dims={2}, collapsed_slice_dims={}, operand_batching_dims={0}, start_indices_batching_dims={1}, start_index_map={1}, index_vector_dim=2, slice_sizes={1,2}
}";
    let (out, kinds) = run(hlo, &[iota_f32(&[2, 5]), s32(&[3, 2], &[0, 1, 3, 4, -1, 2])]);
    // (r, b): start clamp(i[r,b], 0, 3) in batch row b (values 5b + start ..).
    assert_eq!(out[0], f32s(&[3, 2, 2], &[0.0, 1.0, 6.0, 7.0, 3.0, 4.0, 8.0, 9.0, 0.0, 1.0, 7.0, 8.0]));
    assert_eq!(kinds, vec![KernelKind::Loop]);
}

#[test]
fn random_dynamic_slices_updates_and_gathers_match_the_interpreter() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let ds = "HloModule m
ENTRY %main (x: f32[5,6,7], i: s64[], j: s64[], k: s64[]) -> f32[6,3,4] {
  %x = f32[5,6,7] parameter(0)
  %i = s64[] parameter(1)
  %j = s64[] parameter(2)
  %k = s64[] parameter(3)
  %d = f32[2,3,4] dynamic-slice(%x, %i, %j, %k), dynamic_slice_sizes={2,3,4}
  %t = f32[3,2,4] transpose(%d), dimensions={1,0,2}
  %r = f32[6,4] reshape(%t)
  %b = f32[6,3,4] broadcast(%r), dimensions={0,2}
  ROOT %n = f32[6,3,4] negate(%b)
}";
    let dus = "HloModule m
ENTRY %main (x: s32[5,6], u: s32[2,4], i: u32[], j: u32[]) -> s32[5,6] {
  %x = s32[5,6] parameter(0)
  %u = s32[2,4] parameter(1)
  %i = u32[] parameter(2)
  %j = u32[] parameter(3)
  ROOT %d = s32[5,6] dynamic-update-slice(%x, %u, %i, %j)
}";
    let gather = "HloModule m
ENTRY %main (x: f32[4,5,6], i: s32[2,3,2]) -> f32[2,3,2,6] {
  %x = f32[4,5,6] parameter(0)
  %i = s32[2,3,2] parameter(1)
  ROOT %g = f32[2,3,2,6] gather(%x, %i), offset_dims={2,3}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=2, slice_sizes={1,2,6}
}";
    for _ in 0..20 {
        let (_, kinds) = run(
            ds,
            &[
                rng.f32s(&[5, 6, 7]),
                rng.ints(ElementType::S64, &[], -3, 8),
                rng.ints(ElementType::S64, &[], -3, 8),
                rng.ints(ElementType::S64, &[], -3, 8),
            ],
        );
        assert!(kinds.iter().all(|k| !matches!(k, KernelKind::Opaque { .. })), "{kinds:?}");
        run(
            dus,
            &[
                rng.ints(ElementType::S32, &[5, 6], -50, 50),
                rng.ints(ElementType::S32, &[2, 4], 100, 200),
                rng.ints(ElementType::U32, &[], 0, 7),
                rng.ints(ElementType::U32, &[], 0, 4294967295),
            ],
        );
        let (_, kinds) = run(gather, &[rng.f32s(&[4, 5, 6]), rng.ints(ElementType::S32, &[2, 3, 2], -2, 6)]);
        assert_eq!(kinds, vec![KernelKind::Loop]);
    }
}

/// Runs `hlo` on the CPU and in the interpreter, for results that agree to rounding
/// only (GEMM sums in another order than the interpreter's step-by-step f32 sum).
fn run_close(hlo: &str, args: &[Literal], tol: f64) -> (Vec<Literal>, Vec<KernelKind>) {
    run_against_interpreter(hlo, args, |g, w| {
        if g.shape != w.shape {
            return Err(format!("shapes {} vs {}", g.shape, w.shape));
        }
        for (i, (a, b)) in g.to_f64_vec().iter().zip(w.to_f64_vec()).enumerate() {
            if (a - b).abs() > tol * (1.0 + b.abs()) {
                return Err(format!("element {i}: cpu {a} vs interpreter {b}"));
            }
        }
        Ok(())
    })
}

#[test]
fn convolution_nhwc_same_padding_is_one_gemm() {
    // 1x3x3x1 input 0..8, 2x2 kernel of ones, pad 0_1x0_1: each output sums a 2x2 block
    // (the bottom/right ones run into padding).
    let hlo = "HloModule m
ENTRY %main (x: f32[1,3,3,1], k: f32[2,2,1,1]) -> f32[1,3,3,1] {
  %x = f32[1,3,3,1] parameter(0)
  %k = f32[2,2,1,1] parameter(1)
  ROOT %c = f32[1,3,3,1] convolution(%x, %k), window={size=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
}";
    let ones = f32s(&[2, 2, 1, 1], &[1.0; 4]);
    let (out, kinds) = run_close(hlo, &[iota_f32(&[1, 3, 3, 1]), ones], 0.0);
    assert_eq!(out[0], f32s(&[1, 3, 3, 1], &[8.0, 12.0, 7.0, 20.0, 24.0, 13.0, 13.0, 15.0, 8.0]));
    // im2col, then the GEMM writes the output directly.
    assert_eq!(kinds, vec![KernelKind::Loop, KernelKind::Dot]);
}

#[test]
fn convolution_with_groups_dilations_strides_and_reversal() {
    let hlo = "HloModule m
ENTRY %main (x: f32[2,4,7,6], k: f32[6,2,3,2]) -> f32[2,6,7,2] {
  %x = f32[2,4,7,6] parameter(0)
  %k = f32[6,2,3,2] parameter(1)
  ROOT %c = f32[2,6,7,2] convolution(%x, %k), window={size=3x2 stride=2x3 pad=1_2x2_-1 lhs_dilate=2x1 rhs_dilate=1x2 rhs_reversal=1x0}, dim_labels=bf01_oi01->bf01, feature_group_count=2
}";
    let mut rng = Rng(12345);
    for _ in 0..5 {
        let (_, kinds) = run_close(hlo, &[rng.f32s(&[2, 4, 7, 6]), rng.f32s(&[6, 2, 3, 2])], 1e-5);
        assert_eq!(kinds, vec![KernelKind::Loop, KernelKind::Loop, KernelKind::Dot, KernelKind::Loop]);
    }
    // Batch groups (f64): the input batch splits into 2 groups, one per output feature half.
    let hlo = "HloModule m
ENTRY %main (x: f64[4,5,3], k: f64[3,3,4]) -> f64[2,4,5] {
  %x = f64[4,5,3] parameter(0)
  %k = f64[3,3,4] parameter(1)
  ROOT %c = f64[2,4,5] convolution(%x, %k), window={size=3 pad=1_1}, dim_labels=b0f_0io->bf0, batch_group_count=2
}";
    let conv = |rng: &mut Rng| {
        let f64s = |l: Literal| Literal::from_f64s(Shape::new(ElementType::F64, l.shape.dims.clone()), &l.to_f64_vec());
        let x = f64s(rng.f32s(&[4, 5, 3]));
        let k = f64s(rng.f32s(&[3, 3, 4]));
        run_close(hlo, &[x, k], 1e-12)
    };
    let (_, kinds) = conv(&mut rng);
    assert!(kinds.iter().all(|k| !matches!(k, KernelKind::Opaque { .. })), "{kinds:?}");
}

#[test]
fn reduce_window_max_pool_and_padded_sum() {
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
ENTRY %main (x: f32[4,4]) -> (f32[2,2], f32[4,4]) {
  %x = f32[4,4] parameter(0)
  %ninf = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %p = f32[2,2] reduce-window(%x, %ninf), window={size=2x2 stride=2x2}, to_apply=%max
  %s = f32[4,4] reduce-window(%x, %zero), window={size=3x3 pad=1_1x1_1}, to_apply=%add
  ROOT %t = (f32[2,2], f32[4,4]) tuple(%p, %s)
}";
    let (out, kinds) = run(hlo, &[iota_f32(&[4, 4])]);
    assert_eq!(out[0], f32s(&[2, 2], &[5.0, 7.0, 13.0, 15.0]));
    // Corner (0,0): 0+1+4+5 = 10; (1,1): 0+1+2+4+5+6+8+9+10 = 45.
    assert_eq!(out[1].to_f64_vec()[0], 10.0);
    assert_eq!(out[1].to_f64_vec()[5], 45.0);
    assert!(kinds.iter().all(|k| matches!(k, KernelKind::Reduction(_))), "{kinds:?}");
}

#[test]
fn random_reduce_windows_with_dilations_match_the_interpreter() {
    let hlo = "HloModule m
%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
ENTRY %main (x: s32[5,6], i: s32[]) -> s32[5,3] {
  %x = s32[5,6] parameter(0)
  %i = s32[] parameter(1)
  ROOT %r = s32[5,3] reduce-window(%x, %i), window={size=2x3 stride=2x1 pad=1_0x2_-1 lhs_dilate=2x1 rhs_dilate=1x2}, to_apply=%add
}";
    let mut rng = Rng(777);
    for _ in 0..10 {
        let (_, kinds) =
            run(hlo, &[rng.ints(ElementType::S32, &[5, 6], -100, 100), rng.ints(ElementType::S32, &[], -5, 5)]);
        assert!(matches!(kinds[..], [KernelKind::Reduction(_)]), "{kinds:?}");
    }
}

#[test]
fn sort_with_a_compiled_comparator_carries_values_along() {
    // Sort rows of keys descending (GT), carrying s32 values; ties keep their order.
    let hlo = "HloModule m
%gt (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %g = pred[] compare(%a, %b), direction=GT
}
ENTRY %main (k: f32[2,4], v: s32[2,4]) -> (f32[2,4], s32[2,4]) {
  %k = f32[2,4] parameter(0)
  %v = s32[2,4] parameter(1)
  ROOT %s = (f32[2,4], s32[2,4]) sort(%k, %v), dimensions={1}, is_stable=true, to_apply=%gt
}";
    let keys = f32s(&[2, 4], &[1.0, 3.0, 2.0, 3.0, 0.5, -1.0, 4.0, 0.5]);
    let (out, kinds) = run(hlo, &[keys, s32(&[2, 4], &[0, 1, 2, 3, 4, 5, 6, 7])]);
    assert_eq!(out[0], f32s(&[2, 4], &[3.0, 3.0, 2.0, 1.0, 4.0, 0.5, 0.5, -1.0]));
    assert_eq!(out[1], s32(&[2, 4], &[1, 3, 2, 0, 6, 4, 7, 5]));
    assert_eq!(kinds, vec![KernelKind::Sort]);
}

#[test]
fn random_sorts_along_inner_and_outer_dims_match_the_interpreter() {
    // JAX's float comparator: NaNs canonicalized, total order through the bits.
    let hlo = "HloModule m
%lt (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  %ba = s32[] bitcast-convert(%a)
  %bb = s32[] bitcast-convert(%b)
  %zero = s32[] constant(0)
  %max = s32[] constant(2147483647)
  %fa = s32[] xor(%ba, %max)
  %fb = s32[] xor(%bb, %max)
  %na = pred[] compare(%ba, %zero), direction=LT
  %nb = pred[] compare(%bb, %zero), direction=LT
  %ka = s32[] select(%na, %fa, %ba)
  %kb = s32[] select(%nb, %fb, %bb)
  ROOT %r = pred[] compare(%ka, %kb), direction=LT
}
ENTRY %main (k: f32[5,7,3], v: s32[5,7,3]) -> (f32[5,7,3], s32[5,7,3]) {
  %k = f32[5,7,3] parameter(0)
  %v = s32[5,7,3] parameter(1)
  ROOT %s = (f32[5,7,3], s32[5,7,3]) sort(%k, %v), dimensions={1}, to_apply=%lt
}";
    let mut rng = Rng(4242);
    for _ in 0..10 {
        let keys = rng.ints(ElementType::S32, &[5, 7, 3], -4, 4);
        let keys = f32s(&[5, 7, 3], &keys.to_f64_vec().iter().map(|v| v / 2.0).collect::<Vec<_>>());
        let (_, kinds) = run(hlo, &[keys, rng.ints(ElementType::S32, &[5, 7, 3], 0, 1000)]);
        assert_eq!(kinds, vec![KernelKind::Sort]);
    }
}

#[test]
fn scatter_add_combines_repeats_and_skips_out_of_bounds() {
    // x.at[ids].add(u) on rows: id 1 twice (both added), id 5 outside (skipped).
    let hlo = "HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[3,2], i: s32[3,1], u: f32[3,2]) -> f32[3,2] {
  %x = f32[3,2] parameter(0)
  %i = s32[3,1] parameter(1)
  %u = f32[3,2] parameter(2)
  ROOT %s = f32[3,2] scatter(%x, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
}";
    let x = f32s(&[3, 2], &[1.0; 6]);
    let u = f32s(&[3, 2], &[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
    let (out, kinds) = run(hlo, &[x, s32(&[3, 1], &[1, 1, 5]), u]);
    assert_eq!(out[0], f32s(&[3, 2], &[1.0, 1.0, 41.0, 61.0, 1.0, 1.0]));
    assert_eq!(kinds, vec![KernelKind::Scatter]);
}

#[test]
fn random_scatters_match_the_interpreter() {
    // Variadic (a (min, argmin)-like combiner over two arrays) with batching dims, and a
    // replacing scatter with partly out-of-bounds windows.
    let variadic = "HloModule m
%pick (a: s32[], b: f32[], c: s32[], d: f32[]) -> (s32[], f32[]) {
  %a = s32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = f32[] parameter(3)
  %lt = pred[] compare(%c, %a), direction=LT
  %m = s32[] select(%lt, %c, %a)
  %s = f32[] add(%b, %d)
  ROOT %t = (s32[], f32[]) tuple(%m, %s)
}
ENTRY %main (x: s32[2,5,3], y: f32[2,5,3], i: s32[4,2,1], u: s32[4,2,3], v: f32[4,2,3]) -> (s32[2,5,3], f32[2,5,3]) {
  %x = s32[2,5,3] parameter(0)
  %y = f32[2,5,3] parameter(1)
  %i = s32[4,2,1] parameter(2)
  %u = s32[4,2,3] parameter(3)
  %v = f32[4,2,3] parameter(4)
  ROOT %s = (s32[2,5,3], f32[2,5,3]) scatter(%x, %y, %i, %u, %v), update_window_dims={2}, inserted_window_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=2, to_apply=%pick
}";
    let replace = "HloModule m
%second (a: s8[], b: s8[]) -> s8[] {
  %a = s8[] parameter(0)
  ROOT %b = s8[] parameter(1)
}
ENTRY %main (x: s8[6,4], i: u32[3,2], u: s8[3,2,3]) -> s8[6,4] {
  %x = s8[6,4] parameter(0)
  %i = u32[3,2] parameter(1)
  %u = s8[3,2,3] parameter(2)
  ROOT %s = s8[6,4] scatter(%x, %i, %u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=%second
}";
    let mut rng = Rng(99);
    for _ in 0..10 {
        let (_, kinds) = run(
            variadic,
            &[
                rng.ints(ElementType::S32, &[2, 5, 3], -50, 50),
                rng.f32s(&[2, 5, 3]),
                rng.ints(ElementType::S32, &[4, 2, 1], -1, 5),
                rng.ints(ElementType::S32, &[4, 2, 3], -50, 50),
                rng.f32s(&[4, 2, 3]),
            ],
        );
        assert_eq!(kinds, vec![KernelKind::Scatter]);
        run(
            replace,
            &[
                rng.ints(ElementType::S8, &[6, 4], -100, 100),
                rng.ints(ElementType::U32, &[3, 2], 0, 6),
                rng.ints(ElementType::S8, &[3, 2, 3], -100, 100),
            ],
        );
    }
}

#[test]
fn convolution_with_an_epilogue_and_a_max_pool() {
    // conv -> relu -> 2x2 max pool, as a small CNN layer; nothing is interpreted.
    let hlo = "HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[2,6,6,3], k: f32[3,3,3,4], b: f32[4]) -> f32[2,3,3,4] {
  %x = f32[2,6,6,3] parameter(0)
  %k = f32[3,3,3,4] parameter(1)
  %b = f32[4] parameter(2)
  %c = f32[2,6,6,4] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %bb = f32[2,6,6,4] broadcast(%b), dimensions={3}
  %s = f32[2,6,6,4] add(%c, %bb)
  %z = f32[] constant(0)
  %zb = f32[2,6,6,4] broadcast(%z), dimensions={}
  %r = f32[2,6,6,4] maximum(%s, %zb)
  %ninf = f32[] constant(-inf)
  ROOT %p = f32[2,3,3,4] reduce-window(%r, %ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%max
}";
    let mut rng = Rng(31337);
    for _ in 0..3 {
        let (_, kinds) = run_close(hlo, &[rng.f32s(&[2, 6, 6, 3]), rng.f32s(&[3, 3, 3, 4]), rng.f32s(&[4])], 1e-5);
        assert!(kinds.iter().all(|k| !matches!(k, KernelKind::Opaque { .. })), "{kinds:?}");
    }
}
