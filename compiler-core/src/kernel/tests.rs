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

/// HLO text of the scalar f32 `%add` region, for fixtures (`concat!`).
macro_rules! add_region {
    () => {
        "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n"
    };
}

/// [`add_region`] and the f32 less-than comparator `%lt`.
macro_rules! add_lt_regions {
    () => {
        concat!(
            add_region!(),
            "%lt (p: f32[], q: f32[]) -> pred[] {\n  %p = f32[] parameter(0)\n  %q = f32[] parameter(1)\n  ROOT %l = pred[] compare(%p, %q), direction=LT\n}\n"
        )
    };
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
fn a_transpose_read_through_a_reshape_splits_the_last_variable_instead_of_dividing() {
    // Attention's heads merged back: [b, h, s, d] -> [b, s, h, d] -> [b, s, h*d]. Over the
    // output's own space the load is at `(v2 / 64) * 1024 + v1 * 64 + v2 % 64`, a division
    // and a remainder per element; split as [4, 16, 4, 64] it is affine.
    let p = planned(
        "HloModule m
ENTRY %main (x: f32[2,4,16,64]) -> f32[2,16,256] {
  %x = f32[2,4,16,64] parameter(0)
  %t = f32[2,16,4,64] transpose(%x), dimensions={0,2,1,3}
  ROOT %r = f32[2,16,256] reshape(%t)
}",
    );
    assert_eq!(p.kernels.len(), 1);
    let e = elemental(&p.kernels[0]);
    assert_eq!(e.space, vec![2, 16, 4, 64]);
    assert!(!e.idx.iter().any(|i| matches!(i, Idx::Div(..) | Idx::Rem(..))), "{:?}", e.idx);
    let a = index::IndexAnalysis::new(e);
    let linear = e.nodes.iter().find_map(|n| match n.node {
        Node::Load { linear, .. } => Some(linear),
        _ => None,
    });
    let form = a.affine(linear.unwrap()).unwrap();
    assert_eq!((form.coeffs.clone(), form.atoms.len()), (vec![4096, 64, 1024, 1], 0));
    // Stored at the output's row-major position: v1*256 + (v2*64 + v3).
    let strides: Vec<i64> = index::store_strides(e, &e.outputs[0]).iter().map(|&(_, s)| s).collect();
    assert_eq!(strides, vec![4096, 256, 64, 1]);
}

#[test]
fn sums_of_strided_terms_divide_term_by_term() {
    // A slice of the last dimension read through a reshape that splits it: the divisor
    // (64) divides the outer strides, so only the innermost variable is divided.
    let p = planned(
        "HloModule m
ENTRY %main (x: f32[2,8,768]) -> f32[2,8,4,64] {
  %x = f32[2,8,768] parameter(0)
  %s = f32[2,8,256] slice(%x), slice={[0:2], [0:8], [256:512]}
  ROOT %r = f32[2,8,4,64] reshape(%s)
}",
    );
    let e = elemental(&p.kernels[0]);
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
    assert_eq!(p.buffers[p.kernels[0].outputs[0]].shape.dims[..], [2, 9, 18]);
}

/// Checks the arena's one rule: two buffers live at the same kernel never share bytes,
/// except an output written in place over an input dying at that kernel.
fn assert_no_overlap(p: &KernelPlan) {
    let a = &p.arena;
    assert!(a.is_current(p));
    let n = p.buffers.len();
    for x in 0..n {
        for y in x + 1..n {
            let (lx, ly) = (a.live[x], a.live[y]);
            let (sx, sy) = (
                p.buffers[BufferId::new(x)].shape.byte_size() as u64,
                p.buffers[BufferId::new(y)].shape.byte_size() as u64,
            );
            let (ox, oy) = (a.offsets[x], a.offsets[y]);
            let handed_over = (a.in_place_of[y] == Some(BufferId::new(x)) && lx.1 == ly.0)
                || (a.in_place_of[x] == Some(BufferId::new(y)) && ly.1 == lx.0);
            let live_together = (lx.0 <= ly.1 && ly.0 <= lx.1) && !handed_over;
            let share_bytes = ox < oy + sy && oy < ox + sx;
            assert!(!(live_together && share_bytes), "buf{x} {lx:?} @{ox}+{sx} and buf{y} {ly:?} @{oy}+{sy}");
            assert_eq!(ox % ARENA_ALIGNMENT, 0);
        }
    }
}

use crate::kernel::arena::ARENA_ALIGNMENT;
use cranelift_entity::EntityRef;

#[test]
fn arena_reuses_dead_buffers_on_a_chain() {
    // Unfused: four loop kernels over f32[16] (64 B each). The parameter and the result
    // are pinned (offsets 0 and 64); e1 takes a new region at 128; n2 and e3 each read
    // their operand at their own position as it dies, so they write in place over it
    // (128 too). Arena 192 B for 320 B. Without in-place updates: n2 takes a new region
    // at 192 while e1 is read, e3 best-fits into e1's (128): 256 B.
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
    assert_eq!(p.arena.offsets, vec![0, 128, 128, 128, 64]);
    assert_eq!(p.arena.pinned, vec![true, false, false, false, true]);
    assert_eq!(p.arena.in_place_of, vec![None, None, Some(BufferId::new(1)), Some(BufferId::new(2)), None]);
    assert_eq!(p.arena.live[1], (0, 1));
    assert_eq!(p.arena.live[3], (2, 3));
    assert_eq!((p.arena.arena_bytes, p.arena.buffer_bytes), (192, 320));
    assert_eq!(p.arena.region_sizes, vec![64, 64, 64]);
    assert_no_overlap(&p);
    let before = arena::assign_arena_with(&p, false);
    assert_eq!(before.offsets, vec![0, 128, 192, 128, 64]);
    assert_eq!((before.arena_bytes, before.region_sizes.len()), (256, 4));
    assert!(before.in_place_of.iter().all(Option::is_none));
}

#[test]
fn arena_never_shares_a_kernels_inputs_and_outputs() {
    // A diamond with a fused reduction, an odd size (f32[3] = 12 B: padded to 64) and a
    // tuple result holding the parameter itself.
    let p = planned(concat!(
        "HloModule m\n",
        add_lt_regions!(),
        "ENTRY %main (x: f32[3,5], c: f32[3]) -> (f32[3,5], f32[3], f32[3]) {
  %x = f32[3,5] parameter(0)
  %c = f32[3] parameter(1)
  %e = f32[3,5] exponential(%x)
  %z = f32[] constant(0)
  %r = f32[3] reduce(%e, %z), dimensions={1}, to_apply=%add
  %s = f32[3] sort(%r), dimensions={0}, to_apply=%lt
  %m = f32[3] multiply(%s, %c)
  ROOT %t = (f32[3,5], f32[3], f32[3]) tuple(%e, %m, %c)
}"
    ));
    assert_no_overlap(&p);
    // Every offset is aligned, and the arena holds at least the largest live set.
    assert!(p.arena.arena_bytes.is_multiple_of(ARENA_ALIGNMENT));
    assert!(p.arena.arena_bytes >= p.buffers.values().map(|b| b.shape.byte_size() as u64).max().unwrap());
    // Only the sort writes in place, over the reduce's result (fusion.5.1, dying there):
    // the exponential and the reduce are one reduction kernel (no loop) reading a
    // parameter, and the multiply writes the (pinned) result.
    let buf = |name: &str| p.buffers.iter().find(|(_, b)| b.name == name).unwrap().0;
    for k in &p.kernels {
        for o in &k.outputs {
            for i in &k.inputs {
                let in_place = p.arena.in_place_of[o.index()] == Some(*i);
                assert_eq!(p.arena.offset(*o) == p.arena.offset(*i), in_place, "{}", k.name);
            }
        }
    }
    let placed: Vec<(BufferId, BufferId)> =
        p.buffers.keys().filter_map(|b| p.arena.in_place_of[b.index()].map(|i| (i, b))).collect();
    assert_eq!(placed, vec![(buf("fusion.5.1"), buf("s"))]);
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
    p.derive_layout();
    assert!(p.arena.is_current(&p));
}

/// The plan of unfused HLO text (one kernel per instruction).
fn unfused(hlo: &str) -> KernelPlan {
    plan(&crate::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"))).unwrap()
}

fn buffer(p: &KernelPlan, name: &str) -> BufferId {
    p.buffers.iter().find(|(_, b)| b.name == name).unwrap_or_else(|| panic!("no buffer {name}")).0
}

#[test]
fn an_elementwise_chain_needs_one_intermediate_buffer() {
    // exp(neg(abs(x))) over f32[1024] (4096 B each): the parameter and the result are
    // pinned; abs takes a region, neg writes over it as it dies. 3 x 4096 B instead of
    // 4 x 4096 B (abs still read while neg is written, without in place).
    let p = unfused(
        "HloModule m
ENTRY %main (x: f32[1024]) -> f32[1024] {
  %x = f32[1024] parameter(0)
  %a = f32[1024] abs(%x)
  %n = f32[1024] negate(%a)
  ROOT %e = f32[1024] exponential(%n)
}",
    );
    assert_eq!(p.arena.arena_bytes, 3 * 4096);
    assert_eq!(p.arena.in_place_of[buffer(&p, "n").index()], Some(buffer(&p, "a")));
    assert_eq!(p.arena.offset(buffer(&p, "n")), p.arena.offset(buffer(&p, "a")));
    assert_eq!(arena::assign_arena_with(&p, false).arena_bytes, 4 * 4096);
    assert_no_overlap(&p);
}

#[test]
fn in_place_needs_the_same_position_and_a_dying_temporary() {
    // f32[4,4] = 64 B each. Refused: a and c1 (their operand is the parameter), u (a is
    // read later), t (a transpose: element (i,j) reads (j,i), as a dies), r (a fusion
    // reading c1 at its own position and reversed), b (a broadcast of a smaller value)
    // and c (the result is pinned). Taken: w over u (its first operand read at its own
    // position, dying there), m over t (r dies there too; one input is enough) and mm
    // over m.
    let p = unfused(
        "HloModule m
%rev_add (p: f32[4,4]) -> f32[4,4] {
  %p = f32[4,4] parameter(0)
  %rv = f32[4,4] reverse(%p), dimensions={1}
  ROOT %s = f32[4,4] add(%p, %rv)
}
ENTRY %main (x: f32[4,4], v: f32[4]) -> s32[4,4] {
  %x = f32[4,4] parameter(0)
  %v = f32[4] parameter(1)
  %a = f32[4,4] sine(%x)
  %c1 = f32[4,4] cosine(%x)
  %u = f32[4,4] negate(%a)
  %t = f32[4,4] transpose(%a), dimensions={1,0}
  %r = f32[4,4] fusion(%c1), kind=kLoop, calls=%rev_add
  %b = f32[4,4] broadcast(%v), dimensions={0}
  %w = f32[4,4] add(%u, %b)
  %m = f32[4,4] multiply(%t, %r)
  %mm = f32[4,4] multiply(%m, %w)
  ROOT %c = s32[4,4] convert(%mm)
}",
    );
    let of = |name: &str| p.arena.in_place_of[buffer(&p, name).index()].map(|b| p.buffers[b].name.clone());
    assert_eq!(of("a"), None, "reads the parameter");
    assert_eq!(of("c1"), None, "reads the parameter");
    assert_eq!(of("u"), None, "a is read later");
    assert_eq!(of("t"), None, "a transpose");
    assert_eq!(of("r"), None, "c1 is read at another position too");
    assert_eq!(of("b"), None, "a broadcast");
    assert_eq!(of("w"), Some("u".into()));
    assert_eq!(of("m"), Some("t".into()));
    assert_eq!(of("mm"), Some("m".into()));
    assert_eq!(of("c"), None, "the result is pinned");
    assert_no_overlap(&p);
}

#[test]
fn dynamic_update_slice_scatter_and_sort_update_their_operand_in_place() {
    // e (f32[8], 64 B with padding) dies at the dynamic-update-slice, which reads it at
    // its own position outside the window: in place. The scatter then adds into d in
    // place (d dies there), and the sort permutes the scatter's result in place. Only
    // e's region holds temporaries: x, u, i, idx, upd and the result are pinned.
    let p = unfused(
        concat!("HloModule m\n", add_lt_regions!(), "ENTRY %main (x: f32[8], u: f32[2], i: s32[], idx: s32[3,1], upd: f32[3]) -> f32[8] {
  %x = f32[8] parameter(0)
  %u = f32[2] parameter(1)
  %i = s32[] parameter(2)
  %idx = s32[3,1] parameter(3)
  %upd = f32[3] parameter(4)
  %e = f32[8] exponential(%x)
  %d = f32[8] dynamic-update-slice(%e, %u, %i)
  %sc = f32[8] scatter(%d, %idx, %upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  %so = f32[8] sort(%sc), dimensions={0}, to_apply=%lt
  ROOT %n = f32[8] negate(%so)
}"),
    );
    let kinds: Vec<&KernelKind> = p.kernels.iter().map(|k| &k.kind).collect();
    assert_eq!(
        kinds,
        [&KernelKind::Loop, &KernelKind::Loop, &KernelKind::Scatter, &KernelKind::Sort, &KernelKind::Loop]
    );
    assert_eq!(p.arena.in_place_of[buffer(&p, "d").index()], Some(buffer(&p, "e")));
    assert_eq!(p.arena.in_place_of[buffer(&p, "sc").index()], Some(buffer(&p, "d")));
    assert_eq!(p.arena.in_place_of[buffer(&p, "so").index()], Some(buffer(&p, "sc")));
    // Six pinned 64-byte regions and one for e, d, sc and so. Without in place, each of
    // d, sc and so is placed while its operand is still live: two regions alternate.
    assert_eq!(p.arena.arena_bytes, 7 * 64);
    assert_eq!(arena::assign_arena_with(&p, false).arena_bytes, 8 * 64);
    assert_no_overlap(&p);
}

#[test]
fn a_scatter_whose_updates_are_its_operand_is_not_in_place() {
    // Operand and updates are the same buffer: writing the operand would change the
    // updates the scatter still reads.
    let p = unfused(
        concat!("HloModule m\n", add_region!(), "ENTRY %main (x: f32[4], idx: s32[4,1]) -> f32[4] {
  %x = f32[4] parameter(0)
  %idx = s32[4,1] parameter(1)
  %e = f32[4] exponential(%x)
  %sc = f32[4] scatter(%e, %idx, %e), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  ROOT %n = f32[4] negate(%sc)
}"),
    );
    assert_eq!(p.kernels[1].kind, KernelKind::Scatter);
    assert_eq!(p.arena.in_place_of[buffer(&p, "sc").index()], None);
    assert_no_overlap(&p);
}

// ---- Row chains (chains.rs) ----

const SCALAR_BODIES: &str = "HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
";

fn with_bodies(entry: &str) -> String {
    format!("{SCALAR_BODIES}{entry}")
}

fn kinds(p: &KernelPlan) -> Vec<String> {
    p.kernels.iter().map(|k| k.kind.to_string()).collect()
}

#[test]
fn softmax_rows_form_one_chain() {
    // Row max; exp(x - max) with its row sum (one multi-output kernel); divide. Every
    // later read of max, exp and sum is at the row being computed.
    let p = planned(&with_bodies(
        "ENTRY %main (x: f32[4096,1024]) -> f32[4096,1024] {
  %x = f32[4096,1024] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[4096] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[4096,1024] broadcast(%mx), dimensions={0}
  %d = f32[4096,1024] subtract(%x, %mb)
  %e = f32[4096,1024] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[4096] reduce(%e, %zero), dimensions={1}, to_apply=%sum
  %sb = f32[4096,1024] broadcast(%s), dimensions={0}
  ROOT %r = f32[4096,1024] divide(%e, %sb)
}",
    ));
    assert_eq!(kinds(&p), ["reduction(row)", "reduction(row)", "loop"], "{}", p.summary());
    assert_eq!(p.chains, vec![0..3]);
    // x (pinned), max, exp, sum, result (pinned): max, exp and sum live over the whole
    // chain, none in place.
    let exp = p.kernels[1].outputs.iter().find(|&&b| p.buffers[b].shape.dims[..] == [4096, 1024]).copied().unwrap();
    assert_eq!(p.arena.live[exp.index()], (0, 2));
    assert_eq!(p.arena.live[p.kernels[0].outputs[0].index()], (0, 2));
    assert!(p.arena.in_place_of.iter().all(Option::is_none));
    // One row: x, result and exp 4096 B each, max and sum 4 B each.
    assert_eq!(chains::bytes_per_row(&p, 0..3, 4096), 3 * 4096 + 2 * 4);
}

#[test]
fn layernorm_rows_form_one_chain() {
    let p = planned(&with_bodies(
        "ENTRY %main (x: f32[4096,1024], g: f32[1024]) -> f32[4096,1024] {
  %x = f32[4096,1024] parameter(0)
  %g = f32[1024] parameter(1)
  %zero = f32[] constant(0)
  %n = f32[] constant(1024)
  %sx = f32[4096] reduce(%x, %zero), dimensions={1}, to_apply=%sum
  %nb = f32[4096] broadcast(%n), dimensions={}
  %mean = f32[4096] divide(%sx, %nb)
  %mb = f32[4096,1024] broadcast(%mean), dimensions={0}
  %c = f32[4096,1024] subtract(%x, %mb)
  %c2 = f32[4096,1024] multiply(%c, %c)
  %sc = f32[4096] reduce(%c2, %zero), dimensions={1}, to_apply=%sum
  %var = f32[4096] divide(%sc, %nb)
  %eps = f32[] constant(1e-05)
  %eb = f32[4096] broadcast(%eps), dimensions={}
  %ve = f32[4096] add(%var, %eb)
  %rs = f32[4096] rsqrt(%ve)
  %rb = f32[4096,1024] broadcast(%rs), dimensions={0}
  %y = f32[4096,1024] multiply(%c, %rb)
  %gb = f32[4096,1024] broadcast(%g), dimensions={1}
  ROOT %o = f32[4096,1024] multiply(%y, %gb)
}",
    ));
    // The gamma broadcast along rows reads a parameter, which no member writes: fine.
    assert_eq!(p.chains, vec![0..p.kernels.len()], "{}", p.summary());
    assert!(p.kernels.len() >= 2);
    let names: Vec<&str> = p.kernels.iter().map(|k| k.name.as_str()).collect();
    assert!(p.summary().ends_with(&format!("row chain: {}\n", names.join(", "))), "{}", p.summary());
}

#[test]
fn a_transposed_read_breaks_the_chain() {
    // exp(0), transpose(1) reads exp at [v1, v0]: no chain there; add(2) reads the
    // transpose at its own element: transpose and add chain.
    let p = unfused(
        "HloModule m
ENTRY %main (x: f32[512,512]) -> f32[512,512] {
  %x = f32[512,512] parameter(0)
  %e = f32[512,512] exponential(%x)
  %t = f32[512,512] transpose(%e), dimensions={1,0}
  ROOT %a = f32[512,512] add(%t, %x)
}",
    );
    assert_eq!(kinds(&p), ["loop", "loop", "loop"]);
    assert_eq!(p.chains, vec![1..3]);
}

#[test]
fn a_column_reduction_is_no_member() {
    let p = unfused(&with_bodies(
        "ENTRY %main (x: f32[512,512]) -> f32[512] {
  %x = f32[512,512] parameter(0)
  %e = f32[512,512] exponential(%x)
  %zero = f32[] constant(0)
  ROOT %c = f32[512] reduce(%e, %zero), dimensions={0}, to_apply=%sum
}",
    ));
    assert_eq!(kinds(&p), ["loop", "reduction(column)"]);
    assert!(p.chains.is_empty());
}

#[test]
fn a_broadcast_along_rows_of_a_chain_value_breaks_the_chain() {
    // The row max broadcast along dimension 1 makes element [i, j] read max[j]: another
    // row's value. Broadcast along dimension 0 reads max[i]: the same row.
    let text = |dim: u32| {
        with_bodies(&format!(
            "ENTRY %main (x: f32[512,512]) -> f32[512,512] {{
  %x = f32[512,512] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[512] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %b = f32[512,512] broadcast(%m), dimensions={{{dim}}}
  ROOT %a = f32[512,512] add(%b, %x)
}}"
        ))
    };
    let across = unfused(&text(1));
    assert_eq!(kinds(&across), ["reduction(row)", "loop", "loop"]);
    assert_eq!(across.chains, vec![1..3]);
    let along = unfused(&text(0));
    assert_eq!(along.chains, vec![0..3]);
}

#[test]
fn a_read_at_another_row_breaks_the_chain() {
    // reverse along dimension 0 reads exp at row 511 - i; along dimension 1 it stays in
    // row i (index i*512 + 511 - j).
    let text = |dim: u32| {
        format!(
            "HloModule m
ENTRY %main (x: f32[512,512]) -> f32[512,512] {{
  %x = f32[512,512] parameter(0)
  %e = f32[512,512] exponential(%x)
  ROOT %r = f32[512,512] reverse(%e), dimensions={{{dim}}}
}}"
        )
    };
    assert!(unfused(&text(0)).chains.is_empty());
    assert_eq!(unfused(&text(1)).chains, vec![0..2]);
}

#[test]
fn small_chains_are_not_worth_it() {
    // 64x64 f32: 16 KiB per buffer, far below MIN_CHAIN_BYTES; with no minimum the same
    // kernels chain.
    let p = unfused(
        "HloModule m
ENTRY %main (x: f32[64,64]) -> f32[64,64] {
  %x = f32[64,64] parameter(0)
  %e = f32[64,64] exponential(%x)
  ROOT %n = f32[64,64] negate(%e)
}",
    );
    assert!(p.chains.is_empty());
    assert_eq!(chains::find_chains_with(&p, 0), vec![0..2]);
}

#[test]
fn chains_whose_rows_do_not_fit_a_cache_are_not_worth_it() {
    // 4 rows of 40000 f32: x, e and n take 3 x 160000 B per row, over MAX_ROW_BYTES.
    let p = unfused(
        "HloModule m
ENTRY %main (x: f32[4,40000]) -> f32[4,40000] {
  %x = f32[4,40000] parameter(0)
  %e = f32[4,40000] exponential(%x)
  ROOT %n = f32[4,40000] negate(%e)
}",
    );
    assert_eq!(chains::bytes_per_row(&p, 0..2, 4), 3 * 160_000);
    assert!(p.chains.is_empty());
    assert!(chains::find_chains_with(&p, 0).is_empty());
}

#[test]
fn demoting_a_chain_member_to_opaque_derives_the_chains_and_the_arena_again() {
    // Three row-wise kernels of 256 x 1024 f32 chain together; when a target refuses the
    // middle one, the positions move and the opaque kernel joins no chain.
    let m = crate::parse::parse_module(
        "HloModule m
ENTRY %main (x: f32[256,1024]) -> f32[256,1024] {
  %x = f32[256,1024] parameter(0)
  %e = f32[256,1024] exponential(%x)
  %n = f32[256,1024] negate(%e)
  ROOT %a = f32[256,1024] abs(%n)
}",
    )
    .unwrap();
    let mut p = plan(&m).unwrap();
    assert_eq!(p.chains, vec![0..3]);
    let n = p.kernels[1].source;
    let moved = p.demote_to_opaque(&m, &std::collections::HashMap::from([(n, "refused".to_string())]));
    let moved = moved.unwrap();
    assert_eq!(moved, vec![Some(0), None, Some(2)]);
    assert!(matches!(p.kernels[1].kind, KernelKind::Opaque { ref reason } if reason == "refused"));
    assert!(p.chains.is_empty(), "{:?}", p.chains);
    assert_eq!(p.arena, arena::assign_arena(&p));
}

#[test]
fn a_dot_epilogue_reading_its_own_rows_may_run_tile_by_tile() {
    use super::chains::{tile_epilogue, TileEpilogue};
    // relu(a x b): epilogue row r reads result row r.
    let p = planned(
        "HloModule m
ENTRY %main (a: f32[32,3], b: f32[3,8]) -> f32[32,8] {
  %a = f32[32,3] parameter(0)
  %b = f32[3,8] parameter(1)
  %d = f32[32,8] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %z = f32[] constant(0)
  %zs = f32[32,8] broadcast(%z), dimensions={}
  ROOT %r = f32[32,8] maximum(%d, %zs)
}",
    );
    assert_eq!(tile_epilogue(&p, 0), Some(TileEpilogue { rows: 32, dot_rows: 1 }));
    assert_eq!(tile_epilogue(&p, 1), None, "a loop kernel is no dot");
    // Free dims [2, 16] of a: epilogue row r (of 2) reads the 16 result rows of r.
    let p = planned(
        "HloModule m
ENTRY %main (a: f32[2,16,3], b: f32[3,8], c: f32[8]) -> f32[2,16,8] {
  %a = f32[2,16,3] parameter(0)
  %b = f32[3,8] parameter(1)
  %c = f32[8] parameter(2)
  %d = f32[2,16,8] dot(%a, %b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  %cs = f32[2,16,8] broadcast(%c), dimensions={2}
  ROOT %r = f32[2,16,8] add(%d, %cs)
}",
    );
    assert_eq!(tile_epilogue(&p, 0), Some(TileEpilogue { rows: 2, dot_rows: 16 }));
}

#[test]
fn a_dot_read_at_other_rows_runs_before_its_reader() {
    // The reverse reads row 31 - r at row r: the whole result must exist first.
    let p = planned(
        "HloModule m
ENTRY %main (a: f32[32,3], b: f32[3,8]) -> f32[32,8] {
  %a = f32[32,3] parameter(0)
  %b = f32[3,8] parameter(1)
  %d = f32[32,8] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %v = f32[32,8] reverse(%d), dimensions={0}
  ROOT %r = f32[32,8] exponential(%v)
}",
    );
    assert_eq!(p.kernels[0].kind, KernelKind::Dot);
    assert_eq!(super::chains::tile_epilogue(&p, 0), None, "{}", p.summary());
}

/// Two softmax layers, scaling their inputs by `c1` and `c2` before the exponential;
/// both results are outputs and fusion makes no multi-output kernel, so that each layer
/// keeps kernels of its own.
fn two_softmax_layers(c1: &str, c2: &str) -> KernelPlan {
    let text = with_bodies(&format!(
        "ENTRY %main (x: f32[8,16]) -> (f32[8,16], f32[8,16]) {{
  %x = f32[8,16] parameter(0)
  %zero = f32[] constant(0)
  %c1 = f32[] constant({c1})
  %b1 = f32[8,16] broadcast(%c1), dimensions={{}}
  %m1 = f32[8,16] multiply(%x, %b1)
  %e1 = f32[8,16] exponential(%m1)
  %s1 = f32[8] reduce(%e1, %zero), dimensions={{1}}, to_apply=%sum
  %sb1 = f32[8,16] broadcast(%s1), dimensions={{0}}
  %y1 = f32[8,16] divide(%e1, %sb1)
  %c2 = f32[] constant({c2})
  %b2 = f32[8,16] broadcast(%c2), dimensions={{}}
  %m2 = f32[8,16] multiply(%y1, %b2)
  %e2 = f32[8,16] exponential(%m2)
  %s2 = f32[8] reduce(%e2, %zero), dimensions={{1}}, to_apply=%sum
  %sb2 = f32[8,16] broadcast(%s2), dimensions={{0}}
  %y2 = f32[8,16] divide(%e2, %sb2)
  ROOT %t = (f32[8,16], f32[8,16]) tuple(%y1, %y2)
}}"
    ));
    let mut m = crate::parse::parse_module(&text).unwrap_or_else(|e| panic!("{e:?}"));
    let config = crate::passes::fusion::FusionConfig { multi_output: false, ..Default::default() };
    FusionPass::new(config).run(&mut m, &mut PassLog::default());
    plan(&m).unwrap()
}

/// Kernels `a` and `b` of `p` have one description, but for the names of their origins.
fn same_but_names(p: &KernelPlan, a: usize, b: usize) -> bool {
    let unnamed = |k: usize| Elemental { origin_names: Vec::new(), ..elemental(&p.kernels[k]).clone() };
    unnamed(a) == unnamed(b)
}

#[test]
fn fusions_with_the_same_code_share_one_description_under_their_own_names() {
    let p = two_softmax_layers("2", "2");
    // exp(x * 2); its row sum; the division.
    assert_eq!(kinds(&p), ["loop", "reduction(row)", "loop", "loop", "reduction(row)", "loop"], "{}", p.summary());
    for (first, second) in [(0, 3), (1, 4), (2, 5)] {
        assert!(same_but_names(&p, first, second), "{}", p.summary());
        // Each layer's nodes name its own instructions (`m1`, `e1` against `m2`, `e2`;
        // the parameters and copies the passes named are numbered apart).
        let names = |k: usize| elemental(&p.kernels[k]).origin_names.clone();
        let written = |k: usize, layer: &str| -> Vec<String> {
            names(k).into_iter().filter(|n| !n.contains('.')).map(|n| n.replace(layer, "")).collect()
        };
        assert!(!written(first, "1").is_empty());
        assert_eq!(written(first, "1"), written(second, "2"), "{:?} {:?}", names(first), names(second));
        assert!(names(second).iter().all(|n| !n.ends_with('1') || n.contains('.')), "{:?}", names(second));
        assert_ne!(names(first), names(second));
    }
}

#[test]
fn fusions_that_differ_in_a_constant_keep_their_own_descriptions() {
    // The same ops, operands and types, but the second layer scales by 3: its first
    // kernel must compute with 3 (a copy of the first layer's would use 2). The sum and
    // the division are still the same code.
    let p = two_softmax_layers("2", "3");
    assert_ne!(constants(&p, 0), constants(&p, 3), "{}", p.summary());
    assert!(constants(&p, 3).iter().any(|c| c.contains('3')), "{:?}", constants(&p, 3));
    assert!(!same_but_names(&p, 0, 3));
    assert!(same_but_names(&p, 1, 4) && same_but_names(&p, 2, 5));
    // Zeros of both signs are equal floats but other constants: x * -0 is -0 for a
    // positive x.
    let p = two_softmax_layers("0", "-0");
    assert_eq!(constants(&p, 0).iter().filter(|c| c.contains("-0")).count(), 0, "{:?}", constants(&p, 0));
    assert!(constants(&p, 3).iter().any(|c| c.contains("-0")), "{:?}", constants(&p, 3));
}

/// The constants kernel `k` of `p` computes with, in node order.
fn constants(p: &KernelPlan, k: usize) -> Vec<String> {
    elemental(&p.kernels[k])
        .nodes
        .iter()
        .filter_map(|n| match &n.node {
            Node::Const(v) => Some(format!("{v:?}")),
            _ => None,
        })
        .collect()
}
