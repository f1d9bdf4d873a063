//! The kernel plan as text for small programs: HLO text in, plan text out
//! ([`hloscope_core::kernel::print`]). A change to the planner shows up here as a diff a
//! person can read; when it is intended, `UPDATE_EXPECT=1 cargo test --test
//! plan_snapshots` rewrites the expectations in place (expect-test).
//!
//! Each program runs through the default pipeline first, as the targets get it.

use expect_test::{expect, Expect};
use hloscope_core::kernel::{self, TargetCaps};
use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig};

fn check(hlo: &str, caps: &TargetCaps, want: Expect) {
    let mut m = hloscope_core::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"));
    run_pipeline(&mut m, &PipelineConfig::default()).unwrap();
    let plan = kernel::plan_computation_with(&m, m.entry, caps).unwrap();
    kernel::verify::verify(&m, &plan).unwrap();
    want.assert_eq(&plan.to_string());
}

#[test]
fn broadcast_then_elementwise_is_one_loop_kernel() {
    check(
        "HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  b = f32[3] parameter(1)
  bb = f32[2,3] broadcast(b), dimensions={1}
  s = f32[2,3] add(x, bb)
  ROOT t = f32[2,3] tanh(s)
}",
        &TargetCaps::cpu(),
        expect![[r#"
            plan for cpu (library dot, row chains, arena aligned to 64 B)
            buffers:
              buf0 f32[2,3]{1,0} %x: param 0 @0
              buf1 f32[3]{0} %b: param 1 @64
              buf2 f32[2,3]{1,0} %fusion.3: result @128
            kernels:
              0 %fusion.3: loop (buf0, buf1) -> (buf2)
                space: v0 < 2, v1 < 3
                i3 = v0 * 3  [0, 3]
                i4 = v1 + i3  [0, 5]
                e0: f32 = load in0[i4]  ; %param_1.2
                e1: f32 = load in1[v1]  ; %param_0.1
                e2: f32 = add e0, e1  ; %s
                e3: f32 = tanh e2  ; %t
                out0 <- e3
            arena 192 B for 60 B of buffers (3 regions, 0 outputs in place)
        "#]],
    );
}

#[test]
fn softmax_rows_form_a_chain() {
    check(
        "HloModule m
max { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b) }
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
ENTRY main {
  x = f32[512,1024] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[512] reduce(x, ninf), dimensions={1}, to_apply=max
  b = f32[512,1024] broadcast(mx), dimensions={0}
  s = f32[512,1024] subtract(x, b)
  e = f32[512,1024] exponential(s)
  z = f32[] constant(0)
  sum = f32[512] reduce(e, z), dimensions={1}, to_apply=add
  bs = f32[512,1024] broadcast(sum), dimensions={0}
  ROOT d = f32[512,1024] divide(e, bs)
}",
        &TargetCaps::cpu(),
        expect![[r#"
            plan for cpu (library dot, row chains, arena aligned to 64 B)
            buffers:
              buf0 f32[512,1024]{1,0} %x: param 0 @0
              buf1 f32[512]{0} %fusion.8 @4194304
              buf2 f32[512,1024]{1,0} %fusion.13.0 @4196352
              buf3 f32[512]{0} %fusion.13.1 @6293504
              buf4 f32[512,1024]{1,0} %fusion.19: result @2097152
            kernels:
              0 %fusion.8: reduction(row) (buf0) -> (buf1)
                space: v0 < 512, v1 < 1024 reduced
                i3 = v0 * 1024  [0, 523264]
                i4 = v1 + i3  [0, 524287]
                e0: f32 = load in0[i4]  ; %param_0.7
                e1: f32 = -inf  ; %ninf
                e2: f32 = reduced0.0  ; %mx
                e3: f32 = acc0.0  ; %mx
                e4: f32 = arg0.0  ; %mx
                e5: f32 = maximum e3, e4  ; %mx
                red0: init e1; value e0; combine e5
                out0 <- e2
              1 %fusion.13: reduction(row) (buf0, buf1) -> (buf2, buf3)
                space: v0 < 512, v1 < 1024 reduced
                i3 = v0 * 1024  [0, 523264]
                i4 = v1 + i3  [0, 524287]
                e0: f32 = load in0[i4]  ; %param_1.11
                e1: f32 = load in1[v0]  ; %param_0.10
                e2: f32 = subtract e0, e1  ; %s
                e3: f32 = exponential e2  ; %e
                e4: f32 = 0  ; %z
                e5: f32 = reduced0.0  ; %sum
                e6: f32 = acc0.0  ; %sum
                e7: f32 = arg0.0  ; %sum
                e8: f32 = add e6, e7  ; %sum
                red0: init e4; value e3; combine e8
                out0 <- e3 (inside the reduced loop)
                out1 <- e5
              2 %fusion.19: loop (buf2, buf3) -> (buf4)
                space: v0 < 512, v1 < 1024
                i3 = v0 * 1024  [0, 523264]
                i4 = v1 + i3  [0, 524287]
                e0: f32 = load in0[i4]  ; %param_1.18
                e1: f32 = load in1[v0]  ; %param_0.17
                e2: f32 = divide e0, e1  ; %d
                out0 <- e2
            row chain 0..3: %fusion.8, %fusion.13, %fusion.19
            arena 6295552 B for 6295552 B of buffers (5 regions, 0 outputs in place)
        "#]],
    );
}

const DENSE_RELU: &str = "HloModule m
ENTRY main {
  x = f32[4,8] parameter(0)
  w = f32[8,16] parameter(1)
  d = f32[4,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  zb = f32[4,16] broadcast(z), dimensions={}
  ROOT r = f32[4,16] maximum(d, zb)
}";

#[test]
fn a_dot_is_a_gemm_call_then_its_epilogue() {
    check(
        DENSE_RELU,
        &TargetCaps::cpu(),
        expect![[r#"
            plan for cpu (library dot, row chains, arena aligned to 64 B)
            buffers:
              buf0 f32[4,8]{1,0} %x: param 0 @0
              buf1 f32[8,16]{1,0} %w: param 1 @128
              buf2 f32[4,16]{1,0} %fusion.3: result @640
              buf3 f32[4,16]{1,0} %fusion.3.dot @896
            kernels:
              0 %fusion.3: library(dot) (buf0, buf1) -> (buf3)
                gemm 1 x [4x8] * [8x16], lhs order [0, 1], rhs order [0, 1], f32
              1 %fusion.3: loop (buf3, buf0, buf1) -> (buf2)
                space: v0 < 4, v1 < 16
                i3 = v0 * 16  [0, 48]
                i4 = v1 + i3  [0, 63]
                e0: f32 = load in0[i4]  ; %d
                e1: f32 = 0  ; %z
                e2: f32 = maximum e0, e1  ; %r
                out0 <- e2
            arena 1152 B for 1152 B of buffers (4 regions, 0 outputs in place)
        "#]],
    );
}

#[test]
fn without_a_gemm_library_a_dot_is_a_reduction() {
    let caps = TargetCaps {
        name: "no-gemm".into(),
        library_dot: false,
        arena_alignment: 256,
        row_chains: false,
        refused_elems: vec![],
    };
    check(
        DENSE_RELU,
        &caps,
        expect![[r#"
            plan for no-gemm (dots as reductions, arena aligned to 256 B)
            buffers:
              buf0 f32[4,8]{1,0} %x: param 0 @0
              buf1 f32[8,16]{1,0} %w: param 1 @256
              buf2 f32[4,16]{1,0} %fusion.3: result @768
            kernels:
              0 %fusion.3: reduction(row) (buf0, buf1) -> (buf2)
                space: v0 < 4, v1 < 16, v2 < 8 reduced
                i4 = v0 * 8  [0, 24]
                i5 = v2 + i4  [0, 31]
                e0: f32 = load in0[i5]  ; %param_0.1
                i6 = v2 * 16  [0, 112]
                i7 = v1 + i6  [0, 127]
                e1: f32 = load in1[i7]  ; %param_1.2
                e2: f32 = multiply e0, e1  ; %d.part
                e3: f32 = 0  ; %d.part
                e4: f32 = reduced0.0  ; %d.part
                e5: f32 = 0  ; %z
                e6: f32 = maximum e4, e5  ; %r
                e7: f32 = acc0.0  ; %d.part
                e8: f32 = arg0.0  ; %d.part
                e9: f32 = add e7, e8  ; %d.part
                red0: init e3; value e2; combine e9
                out0 <- e6
            arena 1024 B for 896 B of buffers (3 regions, 0 outputs in place)
        "#]],
    );
}

#[test]
fn a_dynamic_slice_reads_its_start_from_data() {
    check(
        "HloModule m
ENTRY main {
  x = f32[8] parameter(0)
  i = s32[] parameter(1)
  ROOT d = f32[3] dynamic-slice(x, i), dynamic_slice_sizes={3}
}",
        &TargetCaps::cpu(),
        expect![[r#"
            plan for cpu (library dot, row chains, arena aligned to 64 B)
            buffers:
              buf0 f32[8]{0} %x: param 0 @0
              buf1 s32[]{} %i: param 1 @64
              buf2 f32[3]{0} %d: result @128
            kernels:
              0 %d: loop (buf1, buf0) -> (buf2)
                space: v0 < 3
                e0: s32 = load in0[0]  ; %i
                i2 = data(e0)  [-2147483648, 2147483647]
                i3 = clamp(i2, 0, 5)  [0, 5]
                i4 = v0 + i3  [0, 7]
                e1: f32 = load in1[i4]  ; %x
                out0 <- e1
            arena 192 B for 48 B of buffers (3 regions, 0 outputs in place)
        "#]],
    );
}

#[test]
fn a_sort_calls_its_compiled_comparator() {
    check(
        "HloModule m
lt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT }
ENTRY main {
  x = f32[2,5] parameter(0)
  ROOT s = f32[2,5] sort(x), dimensions={1}, to_apply=lt
}",
        &TargetCaps::cpu(),
        expect![[r#"
            plan for cpu (library dot, row chains, arena aligned to 64 B)
            buffers:
              buf0 f32[2,5]{1,0} %x: param 0 @0
              buf1 f32[2,5]{1,0} %s: result @64
            kernels:
              0 %s: library(sort, compiled comparator) (buf0) -> (buf1)
                sort along dimension 1 of [2, 5], comparator:
                  e0: f32 = load in0[0]  ; %a
                  e1: f32 = load in1[0]  ; %b
                  e2: pred = compare LT e0, e1  ; %c
                  out0 <- e2
            arena 128 B for 80 B of buffers (2 regions, 0 outputs in place)
        "#]],
    );
}
