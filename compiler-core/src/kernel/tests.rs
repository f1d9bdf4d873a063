//! Tests of the kernel plan: kernel kinds, buffers, and the elemental indexing.

use super::elemental::{Idx, Node};
use super::*;
use crate::passes::{fusion::FusionPass, Pass, PassLog};

fn planned(hlo: &str) -> KernelPlan {
    let mut m = crate::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"));
    FusionPass::default().run(&mut m, &mut PassLog::default());
    plan(&m).unwrap()
}

fn elemental(k: &Kernel) -> &Elemental {
    match &k.body {
        KernelBody::Elemental(e) => e,
        other => panic!("not elemental: {other:?}"),
    }
}

/// The index expression each load of `e` reads, in node order.
fn loads(e: &Elemental) -> Vec<Idx> {
    e.nodes
        .iter()
        .filter_map(|n| match n.node {
            Node::Load { linear, .. } => Some(e.idx_node(linear).clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn reshapes_that_split_or_merge_dimensions_cost_no_division() {
    // Flatten then unflatten: the load reads element v0*3 + v1, no div or rem.
    let p = planned(
        "HloModule m
ENTRY %main (x: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3] parameter(0)
  %f = f32[6] reshape(%x)
  %n = f32[6] negate(%f)
  %u = f32[2,3] reshape(%n)
  ROOT %e = f32[2,3] exponential(%u)
}",
    );
    assert_eq!(p.kernels.len(), 1);
    assert_eq!(p.kernels[0].kind, KernelKind::Loop);
    let e = elemental(&p.kernels[0]);
    assert_eq!(e.space, vec![2, 3]);
    let l = loads(e);
    assert_eq!(l.len(), 1);
    let Idx::Add(a, b) = &l[0] else { panic!("{l:?}") };
    let mut parts = vec![e.idx_node(*a).clone(), e.idx_node(*b).clone()];
    parts.sort_by_key(|i| format!("{i:?}"));
    assert!(matches!(parts[0], Idx::Mul(_, 3)) && parts[1] == Idx::Var(1), "{parts:?}");
    assert!(!e.idx.iter().any(|i| matches!(i, Idx::Div(..) | Idx::Rem(..))), "{:?}", e.idx);
}

#[test]
fn reductions_are_row_or_column_by_their_reduced_dimensions() {
    let p = planned(
        "HloModule m
%add (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %s = f32[] add(%p, %q)
}
ENTRY %main (x: f32[4,8]) -> (f32[4], f32[8]) {
  %x = f32[4,8] parameter(0)
  %z = f32[] constant(0)
  %rows = f32[4] reduce(%x, %z), dimensions={1}, to_apply=%add
  %cols = f32[8] reduce(%x, %z), dimensions={0}, to_apply=%add
  ROOT %t = (f32[4], f32[8]) tuple(%rows, %cols)
}",
    );
    let kinds: Vec<&KernelKind> = p.kernels.iter().map(|k| &k.kind).collect();
    assert!(kinds.contains(&&KernelKind::Reduction(ReductionKind::Row)), "{kinds:?}");
    assert!(kinds.contains(&&KernelKind::Reduction(ReductionKind::Column)), "{kinds:?}");
    for k in &p.kernels {
        let e = elemental(k);
        assert_eq!(e.space, vec![4, 8]);
        assert_eq!(e.reductions.len(), 1);
        assert_eq!(e.outer_elements(), if k.kind == KernelKind::Reduction(ReductionKind::Row) { 4 } else { 8 });
    }
}

#[test]
fn a_dot_epilogue_reads_the_gemm_result_from_a_temporary() {
    let p = planned(
        "HloModule m
ENTRY %main (a: f32[2,3], b: f32[3,4]) -> f32[2,4] {
  %a = f32[2,3] parameter(0)
  %b = f32[3,4] parameter(1)
  %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %z = f32[] constant(0)
  %zs = f32[2,4] broadcast(%z), dimensions={}
  ROOT %r = f32[2,4] maximum(%d, %zs)
}",
    );
    let kinds: Vec<&KernelKind> = p.kernels.iter().map(|k| &k.kind).collect();
    assert_eq!(kinds, vec![&KernelKind::Dot, &KernelKind::Loop]);
    let KernelBody::Dot(spec) = &p.kernels[0].body else { panic!() };
    assert_eq!((spec.batch, spec.m, spec.n, spec.k), (1, 2, 4, 3));
    let tmp = p.kernels[0].outputs[0];
    assert!(p.kernels[1].inputs.contains(&tmp));
    assert!(p.buffers[tmp].name.ends_with(".dot"));
}

#[test]
fn ops_without_an_elemental_form_are_opaque_with_a_reason() {
    // A Cholesky factorization, and an integer convolution (only f32/f64 go to GEMM).
    let p = planned(
        "HloModule m
ENTRY %main (x: f32[2,2], a: s32[1,4,1], k: s32[2,1,1]) -> (f32[2,2], s32[1,3,1]) {
  %x = f32[2,2] parameter(0)
  %a = s32[1,4,1] parameter(1)
  %k = s32[2,1,1] parameter(2)
  %c = f32[2,2] cholesky(%x), cholesky_options={lower=true}
  %v = s32[1,3,1] convolution(%a, %k), window={size=2}, dim_labels=b0f_0io->b0f
  ROOT %t = (f32[2,2], s32[1,3,1]) tuple(%c, %v)
}",
    );
    assert_eq!(p.counts(), (0, 2));
    assert!(p.summary().contains("cholesky is not compiled"), "{}", p.summary());
    assert!(p.summary().contains("is not an f32/f64 GEMM"), "{}", p.summary());
}

#[test]
fn dynamic_slice_reads_a_clamped_data_index() {
    // x[i : i + 2] of f32[5]: the load reads v0 + clamp(data(i), 0, 3).
    let p = planned(
        "HloModule m
ENTRY %main (x: f32[5], i: s32[]) -> f32[2] {
  %x = f32[5] parameter(0)
  %i = s32[] parameter(1)
  ROOT %d = f32[2] dynamic-slice(%x, %i), dynamic_slice_sizes={2}
}",
    );
    assert_eq!(p.kernels[0].kind, KernelKind::Loop);
    let e = elemental(&p.kernels[0]);
    let l = loads(e);
    // The start index itself (element 0 of input 1), then x.
    assert_eq!(l[0], Idx::Const(0));
    let Idx::Add(a, b) = &l[1] else { panic!("{l:?}") };
    let parts = [e.idx_node(*a).clone(), e.idx_node(*b).clone()];
    let clamp = parts.iter().find(|i| matches!(i, Idx::Clamp(..))).expect("a clamped start");
    let Idx::Clamp(inner, 0, 3) = clamp else { panic!("{clamp:?}") };
    assert!(matches!(e.idx_node(*inner), Idx::Data(_)), "{:?}", e.idx_node(*inner));
    assert!(parts.contains(&Idx::Var(0)), "{parts:?}");
}

#[test]
fn convolution_plans_im2col_and_a_gemm() {
    // NCHW / OIHW with 2 feature groups: im2col, the weights regrouped, the GEMM
    // (batch = groups), and the product reordered into the output.
    let p = planned(
        "HloModule m
ENTRY %main (x: f32[1,4,5,5], k: f32[6,2,3,3]) -> f32[1,6,3,3] {
  %x = f32[1,4,5,5] parameter(0)
  %k = f32[6,2,3,3] parameter(1)
  ROOT %c = f32[1,6,3,3] convolution(%x, %k), window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=2
}",
    );
    let kinds: Vec<&KernelKind> = p.kernels.iter().map(|k| &k.kind).collect();
    assert_eq!(kinds, vec![&KernelKind::Loop, &KernelKind::Loop, &KernelKind::Dot, &KernelKind::Loop]);
    let KernelBody::Dot(spec) = &p.kernels[2].body else { panic!() };
    // Per group: 9 output positions x (3*3 window * 2 input features) x 3 output features.
    assert_eq!((spec.batch, spec.m, spec.k, spec.n), (2, 9, 18, 3));
    assert_eq!(p.buffers[p.kernels[0].outputs[0]].shape.dims, vec![2, 9, 18]);
}

/// Checks the arena's one rule: two buffers live at the same kernel never share bytes.
fn assert_no_overlap(p: &KernelPlan) {
    let a = &p.arena;
    assert!(a.is_current(p));
    let n = p.buffers.len();
    for x in 0..n {
        for y in x + 1..n {
            let (lx, ly) = (a.live[x], a.live[y]);
            let (sx, sy) = (p.buffers[BufferId::new(x)].shape.byte_size() as u64, p.buffers[BufferId::new(y)].shape.byte_size() as u64);
            let (ox, oy) = (a.offsets[x], a.offsets[y]);
            let live_together = lx.0 <= ly.1 && ly.0 <= lx.1;
            let share_bytes = ox < oy + sy && oy < ox + sx;
            assert!(!(live_together && share_bytes), "buf{x} {lx:?} @{ox}+{sx} and buf{y} {ly:?} @{oy}+{sy}");
            assert_eq!(ox % ARENA_ALIGNMENT, 0);
        }
    }
}

use cranelift_entity::EntityRef;
use crate::kernel::arena::ARENA_ALIGNMENT;

#[test]
fn arena_reuses_dead_buffers_on_a_chain() {
    // Unfused: four loop kernels over f32[16] (64 B each). The parameter and the result
    // are pinned (offsets 0 and 64); e1 takes a new region at 128, n2 one at 192; e1
    // dies at kernel 1, so e3 best-fits into its region (128). Arena 256 B for 320 B.
    let m = crate::parse::parse_module(
        "HloModule m
ENTRY %main (x: f32[16]) -> f32[16] {
  %x = f32[16] parameter(0)
  %e1 = f32[16] exponential(%x)
  %n2 = f32[16] negate(%e1)
  %e3 = f32[16] exponential(%n2)
  ROOT %a4 = f32[16] abs(%e3)
}",
    )
    .unwrap();
    let p = plan(&m).unwrap();
    assert_eq!(p.kernels.len(), 4);
    let names: Vec<&str> = p.buffers.values().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["x", "e1", "n2", "e3", "a4"]);
    assert_eq!(p.arena.offsets, vec![0, 128, 192, 128, 64]);
    assert_eq!(p.arena.pinned, vec![true, false, false, false, true]);
    assert_eq!(p.arena.live[1], (0, 1));
    assert_eq!(p.arena.live[3], (2, 3));
    assert_eq!((p.arena.arena_bytes, p.arena.buffer_bytes), (256, 320));
    assert_eq!(p.arena.region_sizes, vec![64, 64, 64, 64]);
    assert_no_overlap(&p);
}

#[test]
fn arena_never_shares_a_kernels_inputs_and_outputs() {
    // A diamond with a fused reduction, an odd size (f32[3] = 12 B: padded to 64) and a
    // tuple result holding the parameter itself.
    let p = planned(
        "HloModule m
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
ENTRY %main (x: f32[3,5], c: f32[3]) -> (f32[3,5], f32[3], f32[3]) {
  %x = f32[3,5] parameter(0)
  %c = f32[3] parameter(1)
  %e = f32[3,5] exponential(%x)
  %z = f32[] constant(0)
  %r = f32[3] reduce(%e, %z), dimensions={1}, to_apply=%add
  %s = f32[3] sort(%r), dimensions={0}, to_apply=%lt
  %m = f32[3] multiply(%s, %c)
  ROOT %t = (f32[3,5], f32[3], f32[3]) tuple(%e, %m, %c)
}",
    );
    assert_no_overlap(&p);
    // Every offset is aligned, and the arena holds at least the largest live set.
    assert!(p.arena.arena_bytes.is_multiple_of(ARENA_ALIGNMENT));
    assert!(p.arena.arena_bytes >= p.buffers.values().map(|b| b.shape.byte_size() as u64).max().unwrap());
    for k in &p.kernels {
        for o in &k.outputs {
            for i in &k.inputs {
                assert_ne!(p.arena.offset(*o), p.arena.offset(*i), "{}", k.name);
            }
        }
    }
}

#[test]
fn a_rewritten_plan_is_no_longer_current() {
    let m = crate::parse::parse_module(
        "HloModule m
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %e = f32[4] exponential(%x)
  ROOT %n = f32[4] negate(%e)
}",
    )
    .unwrap();
    let mut p = plan(&m).unwrap();
    assert!(p.arena.is_current(&p));
    p.kernels.pop();
    assert!(!p.arena.is_current(&p));
    p.assign_arena();
    assert!(p.arena.is_current(&p));
}
