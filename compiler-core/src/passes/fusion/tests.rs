//! Tests of the fusion pass on the classic programs: for each, the number of kernels and
//! the bytes moved after fusion (hand-computed, all f32 so 4 bytes per element), the rules
//! of the decisions, and bit-identical interpreter outputs before and after on random
//! inputs.

use super::*;
use crate::cost::{module_cost, profiles};
use crate::interp::testutil::*;
use crate::ir::{BinaryOp, DotDims, ElementType::*, FusionKind, Type, UnaryOp};

fn unary(u: UnaryOp) -> Op {
    Op::Unary(u)
}
fn bin(b: BinaryOp) -> Op {
    Op::Binary(b)
}
fn bcast(dims: &[i64]) -> Op {
    Op::BroadcastInDim { dims: dims.to_vec() }
}
fn matmul() -> Op {
    Op::Dot(DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() })
}

/// Runs the pass with `cfg`; checks that the result passes the verifier, runs
/// bit-identically to the input on random inputs, and keeps names unique.
fn fuse(m: &Module, cfg: FusionConfig) -> (Module, Vec<Decision>) {
    let mut fused = m.clone();
    let mut log = PassLog::default();
    FusionPass::new(cfg).run(&mut fused, &mut log);
    crate::verify::verify(m).expect("the test module is valid");
    crate::verify::verify(&fused).unwrap_or_else(|e| panic!("the fused module is invalid: {e}"));
    for seed in 0..3 {
        let args = crate::interp::random_inputs(m, seed);
        let want = crate::interp::run(m, &args).expect("the original runs").flatten();
        let got = crate::interp::run(&fused, &args).expect("the fused module runs").flatten();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.shape, w.shape);
            assert_bits_eq(&g.to_f64_vec(), &w.to_f64_vec());
        }
    }
    let mut names = std::collections::HashSet::new();
    for c in fused.post_order() {
        for &i in &fused.comp(c).order {
            assert!(names.insert(fused.comp(c).inst(i).name.clone()), "duplicate name {}", fused.comp(c).inst(i).name);
        }
    }
    (fused, log.decisions)
}

/// (kernels, bytes moved) by the cost model.
fn cost(m: &Module) -> (usize, u64) {
    let c = module_cost(m, &profiles::H100_SXM);
    (c.kernel_count(), c.bytes_moved)
}

/// The fusions of the entry: kind and number of instructions in the body (parameters
/// and the output tuple excluded).
fn fusions(m: &Module) -> Vec<(FusionKind, usize)> {
    let e = m.entry_comp();
    e.order
        .iter()
        .filter_map(|&i| match e.inst(i).op {
            Op::Fusion { kind, body } => {
                let b = m.comp(body);
                let n = b.order.iter().filter(|&&j| !matches!(b.inst(j).op, Op::Parameter(_) | Op::Tuple)).count();
                Some((kind, n))
            }
            _ => None,
        })
        .collect()
}

fn taken_rules(d: &[Decision]) -> Vec<&'static str> {
    d.iter().filter(|d| d.taken).map(|d| d.rule).collect()
}

fn has(d: &[Decision], taken: bool, rule: &str) -> bool {
    d.iter().any(|d| d.taken == taken && d.rule == rule)
}

fn name(m: &Module, id: InstId) -> String {
    m.entry_comp().inst(id).name.clone()
}

fn no_epilogue() -> FusionConfig {
    FusionConfig { epilogue: false, ..FusionConfig::default() }
}

/// y = x @ W + b: x f32[4,8], W f32[8,16], b f32[16]; returns (dot, y).
fn linear(b: &mut CompBuilder, p: &[InstId]) -> (InstId, InstId) {
    let d = b.op(matmul(), &[p[0], p[1]], arr(F32, &[4, 16]));
    let bb = b.op(bcast(&[1]), &[p[2]], arr(F32, &[4, 16]));
    (d, b.op(bin(BinaryOp::Add), &[d, bb], arr(F32, &[4, 16])))
}

fn linear_params() -> [Type; 3] {
    [arr(F32, &[4, 8]), arr(F32, &[8, 16]), arr(F32, &[16])]
}

/// relu(x @ W + b).
fn relu_linear() -> Module {
    TestModule::new().finish_with_entry(&linear_params(), |b, p| {
        let (_, y) = linear(b, p);
        let zero = b.constant(f32s(&[], &[0.0]));
        let bz = b.op(bcast(&[]), &[zero], arr(F32, &[4, 16]));
        b.op(bin(BinaryOp::Max), &[y, bz], arr(F32, &[4, 16]))
    })
}

#[test]
fn relu_of_linear_is_one_output_fusion() {
    let m = relu_linear();
    // dot 128+512 read, 256 written; broadcast b 64+256; add 3*256; broadcast 0 4+256;
    // max 3*256.
    assert_eq!(cost(&m), (5, 896 + 320 + 768 + 260 + 768));
    let (fused, d) = fuse(&m, FusionConfig::default());
    // One kernel: reads x, W, b (128+512+64), writes the result (256).
    assert_eq!(cost(&fused), (1, 704 + 256));
    assert_eq!(fusions(&fused), vec![(FusionKind::Output, 6)]);
    assert_eq!(taken_rules(&d), vec!["loop-fusion", "loop-fusion", "loop-fusion", "loop-fusion", "epilogue-fusion"]);
    let dot = d.iter().find(|d| d.producer.contains("dot")).unwrap();
    // Fusing the dot saves its kernel and writing + reading its 256-byte result.
    assert_eq!((dot.bytes_saved, dot.kernels_saved), (512, 1));
    // On an H100 the kernel is memory bound: 960 bytes at 3.35 TB/s, plus one launch
    // (the 1152 FLOPs would take 0.02 ns), where unfused it paid five launches.
    let h100 = profiles::H100_SXM;
    let c = module_cost(&fused, &h100);
    assert_eq!(c.flops, 2 * 4 * 16 * 8 + 64 + 64);
    assert!((c.time_s - (960.0 / 3.35e12 + 4e-6)).abs() < 1e-15, "{}", c.time_s);
    assert!(c.kernels[0].memory_bound(&h100));
    assert!(module_cost(&m, &h100).time_s > 5.0 * 4e-6);
}

#[test]
fn relu_of_linear_without_epilogue_fusion_is_dot_plus_one_kernel() {
    let (fused, d) = fuse(&relu_linear(), no_epilogue());
    // The dot (896) and one loop fusion reading the dot's result and b, writing 256.
    assert_eq!(cost(&fused), (2, 896 + 256 + 64 + 256));
    assert_eq!(fusions(&fused), vec![(FusionKind::Loop, 5)]);
    let refusal = d.iter().find(|d| d.rule == "epilogue-disabled").unwrap();
    assert!(!refusal.taken && refusal.reason.contains("epilogue fusion is turned off"), "{refusal:?}");
}

/// gelu(x @ W + b), tanh form: 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))).
#[test]
fn gelu_of_linear_is_one_kernel() {
    let m = TestModule::new().finish_with_entry(&linear_params(), |b, p| {
        let (_, y) = linear(b, p);
        let t = arr(F32, &[4, 16]);
        let splat = |b: &mut CompBuilder, v: f64| {
            let c = b.constant(f32s(&[], &[v]));
            b.op(bcast(&[]), &[c], t.clone())
        };
        let yy = b.op(bin(BinaryOp::Mul), &[y, y], t.clone());
        let y3 = b.op(bin(BinaryOp::Mul), &[yy, y], t.clone());
        let k = splat(b, 0.044715);
        let t1 = b.op(bin(BinaryOp::Mul), &[k, y3], t.clone());
        let t2 = b.op(bin(BinaryOp::Add), &[y, t1], t.clone());
        let c = splat(b, (2.0 / std::f64::consts::PI).sqrt());
        let t3 = b.op(bin(BinaryOp::Mul), &[c, t2], t.clone());
        let th = b.op(unary(UnaryOp::Tanh), &[t3], t.clone());
        let one = splat(b, 1.0);
        let t4 = b.op(bin(BinaryOp::Add), &[one, th], t.clone());
        let t5 = b.op(bin(BinaryOp::Mul), &[y, t4], t.clone());
        let half = splat(b, 0.5);
        b.op(bin(BinaryOp::Mul), &[half, t5], t)
    });
    assert_eq!(cost(&m).0, 16);
    let (fused, d) = fuse(&m, FusionConfig::default());
    assert_eq!(cost(&fused), (1, 704 + 256));
    assert_eq!(fusions(&fused), vec![(FusionKind::Output, 20)]);
    assert!(d.iter().all(|d| d.taken), "{d:?}");
    assert!(has(&d, true, "epilogue-fusion"));
}

/// softmax over the rows of x: f32[4,8].
fn softmax() -> Module {
    let mut tm = TestModule::new();
    let max = tm.binary_body(BinaryOp::Max, F32);
    let add = tm.binary_body(BinaryOp::Add, F32);
    tm.finish_with_entry(&[arr(F32, &[4, 8])], |b, p| {
        let t = arr(F32, &[4, 8]);
        let ninf = b.constant(f32s(&[], &[f64::NEG_INFINITY]));
        let m = b.op(Op::Reduce { dims: vec![1], body: max }, &[p[0], ninf], arr(F32, &[4]));
        let bm = b.op(bcast(&[0]), &[m], t.clone());
        let s = b.op(bin(BinaryOp::Sub), &[p[0], bm], t.clone());
        let e = b.op(unary(UnaryOp::Exp), &[s], t.clone());
        let zero = b.constant(f32s(&[], &[0.0]));
        let z = b.op(Op::Reduce { dims: vec![1], body: add }, &[e, zero], arr(F32, &[4]));
        let bz = b.op(bcast(&[0]), &[z], t.clone());
        b.op(bin(BinaryOp::Div), &[e, bz], t)
    })
}

#[test]
fn softmax_is_three_kernels() {
    let m = softmax();
    // max 128+4+16, bcast 16+128, sub 3*128, exp 2*128, sum 128+4+16, bcast 16+128,
    // div 3*128.
    assert_eq!(cost(&m), (7, 148 + 144 + 384 + 256 + 148 + 144 + 384));
    let (fused, d) = fuse(&m, FusionConfig::default());
    // max(x): reads x, writes 16. exp(x - max) with sum: reads x and max, writes exp
    // (128) and sum (16). e / sum: reads 128 + 16, writes 128.
    assert_eq!(cost(&fused), (3, 144 + 288 + 272));
    assert_eq!(fusions(&fused), vec![(FusionKind::Input, 2), (FusionKind::Input, 5), (FusionKind::Loop, 2)]);
    // The reductions' results are broadcast back: each needs the next kernel.
    assert!(d.iter().filter(|d| !d.taken && d.rule == "refuse-reduce-epilogue-shape").count() >= 2);
    // exp has users in two kernels: not duplicated, but shared through a multi-output
    // fusion with the sum that reads it.
    assert!(has(&d, false, "refuse-expensive-duplication"));
    assert!(has(&d, true, "multi-output-fusion"));
    assert!(has(&d, true, "reduction-fusion"));
}

#[test]
fn softmax_without_multi_output_is_four_kernels() {
    let (fused, _) = fuse(&softmax(), FusionConfig { multi_output: false, ..FusionConfig::default() });
    // exp(x - max) is its own kernel: reads x and max (144), writes 128; the sum reads
    // it (128 + 16 written).
    assert_eq!(cost(&fused), (4, 144 + 272 + 144 + 272));
}

/// layernorm over the rows of x f32[4,8], with gamma, beta f32[8].
fn layernorm() -> Module {
    let mut tm = TestModule::new();
    let add = tm.binary_body(BinaryOp::Add, F32);
    tm.finish_with_entry(&[arr(F32, &[4, 8]), arr(F32, &[8]), arr(F32, &[8])], |b, p| {
        let t = arr(F32, &[4, 8]);
        let r = arr(F32, &[4]);
        let mean_of = |b: &mut CompBuilder, v: InstId| {
            let zero = b.constant(f32s(&[], &[0.0]));
            let s = b.op(Op::Reduce { dims: vec![1], body: add }, &[v, zero], r.clone());
            let n = b.constant(f32s(&[], &[8.0]));
            let bn = b.op(bcast(&[]), &[n], r.clone());
            b.op(bin(BinaryOp::Div), &[s, bn], r.clone())
        };
        let mean = mean_of(b, p[0]);
        let bm = b.op(bcast(&[0]), &[mean], t.clone());
        let xc = b.op(bin(BinaryOp::Sub), &[p[0], bm], t.clone());
        let sq = b.op(bin(BinaryOp::Mul), &[xc, xc], t.clone());
        let var = mean_of(b, sq);
        let eps = b.constant(f32s(&[], &[1e-5]));
        let beps = b.op(bcast(&[]), &[eps], r.clone());
        let ve = b.op(bin(BinaryOp::Add), &[var, beps], r.clone());
        let rs = b.op(unary(UnaryOp::Rsqrt), &[ve], r.clone());
        let brs = b.op(bcast(&[0]), &[rs], t.clone());
        let y0 = b.op(bin(BinaryOp::Mul), &[xc, brs], t.clone());
        let bg = b.op(bcast(&[1]), &[p[1]], t.clone());
        let y1 = b.op(bin(BinaryOp::Mul), &[y0, bg], t.clone());
        let bb = b.op(bcast(&[1]), &[p[2]], t.clone());
        b.op(bin(BinaryOp::Add), &[y1, bb], t)
    })
}

#[test]
fn layernorm_is_three_kernels() {
    let m = layernorm();
    assert_eq!(cost(&m), (18, 2932));
    let (fused, d) = fuse(&m, FusionConfig::default());
    // mean: reads x, writes 16. variance -> rsqrt: reads x and mean, writes 16.
    // normalize: reads x, mean, rsqrt, gamma, beta (128+16+16+32+32), writes 128.
    assert_eq!(cost(&fused), (3, 144 + 160 + 352));
    assert_eq!(fusions(&fused), vec![(FusionKind::Input, 5), (FusionKind::Input, 12), (FusionKind::Loop, 8)]);
    // x - mean feeds both the variance and the output: cheap, so each kernel gets a copy.
    assert!(d.iter().filter(|d| d.taken && d.rule == "duplicate-into-consumer").count() >= 4);
    // rsqrt under a broadcast would be recomputed per element; mean has users in two
    // kernels and a division is expensive.
    assert!(has(&d, false, "refuse-expensive-into-reuse"));
    assert!(has(&d, false, "refuse-expensive-duplication"));
    assert!(has(&d, true, "reduction-epilogue-fusion"));
}

/// a = -x; b = |a|; c = b + x; d = c * c; e = d - x; f = max(e, x) on x: f32[16].
fn chain(names: &mut Vec<InstId>) -> Module {
    TestModule::new().finish_with_entry(&[arr(F32, &[16])], |b, p| {
        let t = arr(F32, &[16]);
        let x = p[0];
        let a = b.op(unary(UnaryOp::Neg), &[x], t.clone());
        let bb = b.op(unary(UnaryOp::Abs), &[a], t.clone());
        let c = b.op(bin(BinaryOp::Add), &[bb, x], t.clone());
        let d = b.op(bin(BinaryOp::Mul), &[c, c], t.clone());
        let e = b.op(bin(BinaryOp::Sub), &[d, x], t.clone());
        let f = b.op(bin(BinaryOp::Max), &[e, x], t);
        names.extend([a, bb, c, d, e, f]);
        f
    })
}

#[test]
fn long_elementwise_chain_is_one_kernel() {
    let mut ids = Vec::new();
    let m = chain(&mut ids);
    assert_eq!(cost(&m), (6, 128 + 128 + 192 + 128 + 192 + 192));
    let (fused, d) = fuse(&m, FusionConfig::default());
    assert_eq!(cost(&fused), (1, 64 + 64));
    assert_eq!(fusions(&fused), vec![(FusionKind::Loop, 6)]);
    assert_eq!(taken_rules(&d), vec!["loop-fusion"; 5]);
    // Fusing c into {d, e, f}: c's kernel (reads b and x, writes c: 192) and the group
    // (reads c and x, writes f: 192) become one that reads b and x and writes f (192).
    let c_into_d = &d[2];
    assert_eq!(c_into_d.producer, name(&m, ids[2]));
    assert_eq!((c_into_d.bytes_saved, c_into_d.kernels_saved), (192, 1));
}

#[test]
fn max_fusion_size_splits_the_chain() {
    let m = chain(&mut Vec::new());
    let (fused, d) = fuse(&m, FusionConfig { max_fusion_size: 3, ..FusionConfig::default() });
    // {a, b, c}: reads x, writes c. {d, e, f}: reads c and x, writes f.
    assert_eq!(cost(&fused), (2, 128 + 192));
    assert_eq!(fusions(&fused), vec![(FusionKind::Loop, 3), (FusionKind::Loop, 3)]);
    let refused = d.iter().find(|d| !d.taken).unwrap();
    assert_eq!(refused.rule, "refuse-max-size");
    assert!(refused.reason.contains("max_fusion_size = 3"), "{}", refused.reason);
}

#[test]
fn never_fuse_override_is_obeyed() {
    let mut ids = Vec::new();
    let m = chain(&mut ids);
    let (c, dd) = (name(&m, ids[2]), name(&m, ids[3]));
    let cfg = FusionConfig { never_fuse: vec![(c.clone(), dd.clone())], ..FusionConfig::default() };
    let (fused, d) = fuse(&m, cfg);
    assert_eq!(cost(&fused), (2, 128 + 192));
    let refused: Vec<&Decision> = d.iter().filter(|d| !d.taken).collect();
    assert!(!refused.is_empty() && refused.iter().all(|d| d.rule == "override-never-fuse"), "{refused:?}");
    assert_eq!((refused[0].producer.as_str(), refused[0].consumer.as_str()), (c.as_str(), dd.as_str()));
}

/// e = exp(x) feeds two consumers; both results are returned.
fn shared_exp(ids: &mut Vec<InstId>) -> Module {
    TestModule::new().finish_with_entry(&[arr(F32, &[8])], |b, p| {
        let t = arr(F32, &[8]);
        let e = b.op(unary(UnaryOp::Exp), &[p[0]], t.clone());
        let a = b.op(unary(UnaryOp::Neg), &[e], t.clone());
        let c = b.op(unary(UnaryOp::Abs), &[e], t);
        ids.extend([e, a, c]);
        b.tuple(&[a, c])
    })
}

#[test]
fn shared_expensive_producer_is_not_duplicated() {
    let mut ids = Vec::new();
    let m = shared_exp(&mut ids);
    let (fused, d) = fuse(&m, FusionConfig { multi_output: false, ..FusionConfig::default() });
    assert_eq!(cost(&fused), (3, 64 * 3));
    assert!(fusions(&fused).is_empty());
    assert_eq!(d.len(), 2);
    for (dec, user) in d.iter().zip([ids[1], ids[2]]) {
        assert_eq!((dec.taken, dec.rule), (false, "refuse-expensive-duplication"));
        assert_eq!((dec.producer.clone(), dec.consumer.clone()), (name(&m, ids[0]), name(&m, user)));
        assert!(dec.reason.contains("compute it 2 times"), "{}", dec.reason);
    }
    // With multi-output fusion, one kernel computes exp once and writes both results.
    let (fused, d) = fuse(&m, FusionConfig::default());
    assert_eq!(cost(&fused), (1, 32 + 64));
    assert_eq!(fusions(&fused), vec![(FusionKind::Loop, 3)]);
    assert_eq!(d.iter().filter(|d| d.taken && d.rule == "multi-output-fusion").count(), 2);
}

#[test]
fn force_fuse_lifts_a_soft_refusal() {
    let mut ids = Vec::new();
    let m = shared_exp(&mut ids);
    let (e, a, c) = (name(&m, ids[0]), name(&m, ids[1]), name(&m, ids[2]));
    let cfg = FusionConfig { multi_output: false, force_fuse: vec![(e.clone(), a), (e, c)], ..FusionConfig::default() };
    let (fused, d) = fuse(&m, cfg);
    // exp is computed in both kernels; each reads x and writes its result.
    assert_eq!(cost(&fused), (2, 64 * 2));
    assert_eq!(taken_rules(&d), vec!["force-fuse", "force-fuse"]);
    assert!(d[0].reason.contains("refuse-expensive-duplication"));
}

/// n = -x feeds a dot whose transposed result is added to x: putting n with the add
/// would make the kernel wait on the dot, which waits on the kernel.
#[test]
fn cycle_creating_merge_is_refused() {
    let m = TestModule::new().finish_with_entry(&[arr(F32, &[4, 4]), arr(F32, &[4, 4])], |b, p| {
        let t = arr(F32, &[4, 4]);
        let n = b.op(unary(UnaryOp::Neg), &[p[0]], t.clone());
        let d = b.op(matmul(), &[n, p[1]], t.clone());
        let tr = b.op(Op::Transpose { perm: vec![1, 0] }, &[d], t.clone());
        b.op(bin(BinaryOp::Add), &[p[0], tr], t)
    });
    let (fused, d) = fuse(&m, FusionConfig::default());
    // neg (128), dot (64+64 read, 64 written), transpose + add (128 read, 64 written).
    assert_eq!(cost(&fused), (3, 128 + 192 + 192));
    assert!(has(&d, false, "refuse-library-operand"));
    assert!(has(&d, false, "refuse-epilogue-shape"));
    let cycle = d.iter().find(|d| d.rule == "refuse-cycle").expect("a cycle refusal");
    assert_eq!((cycle.taken, cycle.producer.as_str()), (false, name(&m, m.entry_comp().params[0]).as_str()));
}

/// Column reductions of x: f32[8,4]: sum(x*x) and sum(x) over dimension 0.
#[test]
fn column_reductions_fuse_and_share_their_input() {
    let mut tm = TestModule::new();
    let add = tm.binary_body(BinaryOp::Add, F32);
    let m = tm.finish_with_entry(&[arr(F32, &[8, 4])], |b, p| {
        let sq = b.op(bin(BinaryOp::Mul), &[p[0], p[0]], arr(F32, &[8, 4]));
        let zero = b.constant(f32s(&[], &[0.0]));
        let r = b.op(Op::Reduce { dims: vec![0], body: add }, &[sq, zero], arr(F32, &[4]));
        let zero2 = b.constant(f32s(&[], &[0.0]));
        let s = b.op(Op::Reduce { dims: vec![0], body: add }, &[p[0], zero2], arr(F32, &[4]));
        b.tuple(&[r, s])
    });
    // x*x (256), sum (128+4+16), sum (128+4+16).
    assert_eq!(cost(&m), (3, 256 + 148 + 148));
    let (fused, d) = fuse(&m, FusionConfig::default());
    // One kernel reads x once and writes both sums.
    assert_eq!(cost(&fused), (1, 128 + 32));
    assert_eq!(fusions(&fused), vec![(FusionKind::Input, 5)]);
    assert!(has(&d, true, "reduction-fusion"));
    let sib = d.iter().find(|d| d.rule == "sibling-multi-output-fusion").unwrap();
    assert!(sib.taken);
    // Reading x once instead of twice, and one kernel fewer.
    assert_eq!((sib.bytes_saved, sib.kernels_saved), (128, 1));
    // Without multi-output fusion: two kernels, x read twice.
    let (fused, _) = fuse(&m, FusionConfig { multi_output: false, ..FusionConfig::default() });
    assert_eq!(cost(&fused), (2, 2 * (128 + 16)));
}

/// A dynamic-update-slice whose buffer is computed by an elementwise op: that op stays
/// outside the in-place kernel.
#[test]
fn in_place_buffer_is_not_fused() {
    let m = TestModule::new().finish_with_entry(&[arr(F32, &[8]), arr(F32, &[2])], |b, p| {
        let buf = b.op(unary(UnaryOp::Neg), &[p[0]], arr(F32, &[8]));
        let upd = b.op(unary(UnaryOp::Abs), &[p[1]], arr(F32, &[2]));
        let i = b.constant(ints(S32, &[], &[3]));
        b.op(Op::DynamicUpdateSlice, &[buf, upd, i], arr(F32, &[8]))
    });
    let (fused, d) = fuse(&m, FusionConfig::default());
    assert!(has(&d, false, "refuse-in-place-operand"));
    // neg (32 + 32), and the update fused with abs: reads buf, p1, writes 32.
    assert_eq!(cost(&fused), (2, 64 + 32 + 8 + 32));
}

#[test]
fn disabled_pass_changes_nothing() {
    let mut m = relu_linear();
    let mut log = PassLog::default();
    let pass = FusionPass::new(FusionConfig { enabled: false, ..FusionConfig::default() });
    assert_eq!(pass.name(), "fusion");
    assert!(!pass.run(&mut m, &mut log));
    assert!(log.decisions.is_empty());
    assert_eq!(cost(&m).0, 5);
    // A second run of the enabled pass on its own output finds nothing new to fuse.
    let mut fused = relu_linear();
    assert!(FusionPass::default().run(&mut fused, &mut PassLog::default()));
    assert!(!FusionPass::default().run(&mut fused, &mut PassLog::default()));
}

/// A while loop whose body runs v = exp(-v) * 0.5 three times: the body is fused too.
#[test]
fn while_bodies_are_fused() {
    let mut tm = TestModule::new();
    let (i, v) = (arr(S32, &[]), arr(F32, &[4]));
    let cond = tm.comp("cond", &[i.clone(), v.clone()], |b, p| {
        let three = b.constant(ints(S32, &[], &[3]));
        b.op(Op::Compare { dir: crate::ir::CmpDir::Lt, kind: None }, &[p[0], three], arr(Pred, &[]))
    });
    let body = tm.comp("body", &[i.clone(), v.clone()], |b, p| {
        let one = b.constant(ints(S32, &[], &[1]));
        let i1 = b.op(bin(BinaryOp::Add), &[p[0], one], arr(S32, &[]));
        let n = b.op(unary(UnaryOp::Neg), &[p[1]], v.clone());
        let e = b.op(unary(UnaryOp::Exp), &[n], v.clone());
        let half = b.constant(f32s(&[], &[0.5]));
        let bh = b.op(bcast(&[]), &[half], v.clone());
        let m = b.op(bin(BinaryOp::Mul), &[e, bh], v.clone());
        b.tuple(&[i1, m])
    });
    let m = tm.finish_with_entry(std::slice::from_ref(&v), |b, p| {
        let zero = b.constant(ints(S32, &[], &[0]));
        let w = b.op(Op::While { cond, body }, &[zero, p[0]], Type::Tuple(vec![i.clone(), v.clone()]));
        b.op(Op::GetTupleElement { index: 1 }, &[w], v.clone())
    });
    // cond: compare (4+4 read, 1 written); body: add 12, neg 32, exp 32, broadcast 20,
    // multiply 48. The loop's kernels are counted once.
    assert_eq!(cost(&m), (6, 9 + 12 + 32 + 32 + 20 + 48));
    let (fused, d) = fuse(&m, FusionConfig::default());
    // cond: one fusion (reads i, writes the pred); body: i + 1 (8) and the vector (32).
    assert_eq!(cost(&fused), (3, 5 + 8 + 32));
    let body_fusions =
        fused.comp(body).order.iter().filter(|&&x| matches!(fused.comp(body).inst(x).op, Op::Fusion { .. })).count();
    assert_eq!(body_fusions, 2);
    assert!(fusions(&fused).is_empty(), "the entry has only the loop");
    assert!(d.iter().all(|d| d.taken));
}

/// Data movement fuses like elementwise work: transpose, slices, concatenate, iota,
/// convert, compare, select and pad become one loop kernel.
#[test]
fn data_movement_fuses_into_one_loop_kernel() {
    let m = TestModule::new().finish_with_entry(&[arr(F32, &[4, 8])], |b, p| {
        let x = p[0];
        let t = b.op(Op::Transpose { perm: vec![1, 0] }, &[x], arr(F32, &[8, 4]));
        let slice = |start: i64| Op::Slice { start: vec![start, 0], limit: vec![start + 4, 4], stride: vec![1, 1] };
        let s1 = b.op(slice(0), &[t], arr(F32, &[4, 4]));
        let s2 = b.op(slice(4), &[t], arr(F32, &[4, 4]));
        let n2 = b.op(unary(UnaryOp::Neg), &[s2], arr(F32, &[4, 4]));
        let c = b.op(Op::Concatenate { dim: 1 }, &[s1, n2], arr(F32, &[4, 8]));
        let io = b.op(Op::Iota { dim: 1 }, &[], arr(S32, &[4, 8]));
        let cv = b.op(Op::Convert, &[io], arr(F32, &[4, 8]));
        let three = b.constant(f32s(&[], &[3.0]));
        let b3 = b.op(bcast(&[]), &[three], arr(F32, &[4, 8]));
        let g = b.op(Op::Compare { dir: crate::ir::CmpDir::Lt, kind: None }, &[cv, b3], arr(Pred, &[4, 8]));
        let sel = b.op(Op::Select, &[g, c, x], arr(F32, &[4, 8]));
        let zero = b.constant(f32s(&[], &[0.0]));
        let pad = Op::Pad { low: vec![0, 1], high: vec![0, 1], interior: vec![0, 0] };
        b.op(pad, &[sel, zero], arr(F32, &[4, 10]))
    });
    assert_eq!(cost(&m).0, 11);
    let (fused, d) = fuse(&m, FusionConfig::default());
    // Reads x once (128), writes the padded result (160).
    assert_eq!(cost(&fused), (1, 128 + 160));
    assert_eq!(fusions(&fused), vec![(FusionKind::Loop, 13)]);
    assert!(d.iter().all(|d| d.taken && d.rule == "loop-fusion"), "{d:?}");
}

/// A small slice of a big array, used by two kernels: copying the slice into each would
/// make each read the big array.
#[test]
fn slice_of_big_input_is_not_duplicated() {
    let m = TestModule::new().finish_with_entry(&[arr(F32, &[64])], |b, p| {
        let s = b.op(Op::Slice { start: vec![8], limit: vec![12], stride: vec![1] }, &[p[0]], arr(F32, &[4]));
        let a = b.op(unary(UnaryOp::Neg), &[s], arr(F32, &[4]));
        let c = b.op(unary(UnaryOp::Abs), &[s], arr(F32, &[4]));
        b.tuple(&[a, c])
    });
    let (fused, d) = fuse(&m, FusionConfig { multi_output: false, ..FusionConfig::default() });
    // slice (256 + 16), neg (32), abs (32).
    assert_eq!(cost(&fused), (3, 272 + 32 + 32));
    assert_eq!(d.iter().filter(|d| !d.taken && d.rule == "refuse-operand-much-larger").count(), 2);
    assert!(d[0].reason.contains("reads 256 bytes to produce 16"), "{}", d[0].reason);
    // Multi-output fusion computes the slice once, in one kernel with both users.
    let (fused, _) = fuse(&m, FusionConfig::default());
    assert_eq!(cost(&fused), (1, 256 + 32));
}

/// relu(conv(x, k) + b), NHWC: x f32[1,6,6,3], k f32[3,3,3,4] (HWIO), b f32[4].
#[test]
fn convolution_epilogue_is_one_output_fusion() {
    use crate::ir::{ConvAttrs, ConvDims};
    let dims = ConvDims {
        input_batch: 0,
        input_feature: 3,
        input_spatial: vec![1, 2],
        kernel_input_feature: 2,
        kernel_output_feature: 3,
        kernel_spatial: vec![0, 1],
        output_batch: 0,
        output_feature: 3,
        output_spatial: vec![1, 2],
    };
    let conv = Op::Convolution(Box::new(ConvAttrs {
        dims,
        window_strides: vec![1, 1],
        padding: vec![(0, 0), (0, 0)],
        lhs_dilation: vec![1, 1],
        rhs_dilation: vec![1, 1],
        window_reversal: vec![false, false],
        feature_group_count: 1,
        batch_group_count: 1,
    }));
    let m = TestModule::new().finish_with_entry(
        &[arr(F32, &[1, 6, 6, 3]), arr(F32, &[3, 3, 3, 4]), arr(F32, &[4])],
        |b, p| {
            let t = arr(F32, &[1, 4, 4, 4]);
            let c = b.op(conv, &[p[0], p[1]], t.clone());
            let bb = b.op(bcast(&[3]), &[p[2]], t.clone());
            let a = b.op(bin(BinaryOp::Add), &[c, bb], t.clone());
            let zero = b.constant(f32s(&[], &[0.0]));
            let bz = b.op(bcast(&[]), &[zero], t.clone());
            b.op(bin(BinaryOp::Max), &[a, bz], t)
        },
    );
    // conv: reads 432 + 432, writes 256; broadcast 16+256; add 768; broadcast 4+256;
    // max 768.
    assert_eq!(cost(&m), (5, 1120 + 272 + 768 + 260 + 768));
    let (fused, d) = fuse(&m, FusionConfig::default());
    assert_eq!(cost(&fused), (1, 432 + 432 + 16 + 256));
    assert_eq!(fusions(&fused), vec![(FusionKind::Output, 6)]);
    assert!(has(&d, true, "epilogue-fusion"));
    // 64 outputs, each a dot of 3x3x3 = 27 products (2 FLOPs each), then add and max.
    assert_eq!(module_cost(&fused, &profiles::L4).flops, 2 * 64 * 27 + 64 + 64);
}

/// Sixty chained layernorm-like layers (x <- tanh(y) + y, y = normalized x * gamma):
/// 1203 instructions. Checks the pass scales, and that duplication does not cascade.
#[test]
fn sixty_chained_layers() {
    let mut tm = TestModule::new();
    let add = tm.binary_body(BinaryOp::Add, F32);
    let m = tm.finish_with_entry(&[arr(F32, &[4, 8]), arr(F32, &[8]), arr(F32, &[8])], |b, p| {
        let t = arr(F32, &[4, 8]);
        let r = arr(F32, &[4]);
        let mut x = p[0];
        for _ in 0..60 {
            let mean_of = |b: &mut CompBuilder, v: InstId| {
                let zero = b.constant(f32s(&[], &[0.0]));
                let s = b.op(Op::Reduce { dims: vec![1], body: add }, &[v, zero], r.clone());
                let n = b.constant(f32s(&[], &[8.0]));
                let bn = b.op(bcast(&[]), &[n], r.clone());
                b.op(bin(BinaryOp::Div), &[s, bn], r.clone())
            };
            let mean = mean_of(b, x);
            let bm = b.op(bcast(&[0]), &[mean], t.clone());
            let xc = b.op(bin(BinaryOp::Sub), &[x, bm], t.clone());
            let sq = b.op(bin(BinaryOp::Mul), &[xc, xc], t.clone());
            let var = mean_of(b, sq);
            let rs = b.op(unary(UnaryOp::Rsqrt), &[var], r.clone());
            let brs = b.op(bcast(&[0]), &[rs], t.clone());
            let y0 = b.op(bin(BinaryOp::Mul), &[xc, brs], t.clone());
            let bg = b.op(bcast(&[1]), &[p[1]], t.clone());
            let y1 = b.op(bin(BinaryOp::Mul), &[y0, bg], t.clone());
            let e = b.op(unary(UnaryOp::Tanh), &[y1], t.clone());
            x = b.op(bin(BinaryOp::Add), &[e, y1], t.clone());
        }
        x
    });
    assert_eq!(m.entry_comp().order.len(), 1203);
    assert_eq!(cost(&m), (960, 177_600));
    let (fused, _) = fuse(&m, FusionConfig::default());
    // Per layer i: the variance kernel reads x_i and mean_i, writes rsqrt (160 bytes);
    // the normalize kernel, which also computes the next layer's mean (multi-output),
    // reads x_i, mean_i, rsqrt_i, gamma and writes x_{i+1} and mean_{i+1} (336 bytes).
    // The first mean (144) and the last normalize (320, no next mean) stand alone.
    assert_eq!(cost(&fused), (1 + 60 + 60, 144 + 60 * 160 + 59 * 336 + 320));
}

/// sort(x) feeding an elementwise op: the sort stays its own kernel.
#[test]
fn opaque_producer_is_refused_with_its_reason() {
    let mut tm = TestModule::new();
    let lt = tm.comp("lt", &[arr(F32, &[]), arr(F32, &[])], |b, p| {
        b.op(Op::Compare { dir: crate::ir::CmpDir::Lt, kind: None }, &[p[0], p[1]], arr(Pred, &[]))
    });
    let m = tm.finish_with_entry(&[arr(F32, &[8])], |b, p| {
        let s = b.op(Op::Sort { dim: 0, stable: true, comparator: lt }, &[p[0]], arr(F32, &[8]));
        let n = b.op(unary(UnaryOp::Neg), &[s], arr(F32, &[8]));
        b.op(unary(UnaryOp::Abs), &[n], arr(F32, &[8]))
    });
    let (fused, d) = fuse(&m, FusionConfig::default());
    // sort (32 + 32), then neg and abs in one kernel (32 + 32).
    assert_eq!(cost(&fused), (2, 128));
    let refusal = d.iter().find(|d| !d.taken).unwrap();
    assert_eq!(refusal.rule, "refuse-opaque-producer");
    assert!(refusal.reason.contains("sort needs the whole array"), "{}", refusal.reason);
}

/// Found by the randomized pipeline test: sibling fusion gives a group two outputs, one
/// fed by kernel A and one feeding kernel B, with no instruction path from A to B. A
/// later merge of A and B must see the path through that group (it would wait on the
/// group, which waits on it) instead of building a module with a cycle.
#[test]
fn merges_see_paths_through_multi_output_groups() {
    let text = "func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %v0 = stablehlo.negate %arg1 : tensor<4x8xf32>
  %i1 = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %r1 = stablehlo.reduce(%arg0 init: %i1) applies stablehlo.minimum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %v1 = stablehlo.broadcast_in_dim %r1, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %r2 = stablehlo.reduce(%v0 init: %i1) applies stablehlo.minimum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %v2 = stablehlo.broadcast_in_dim %r2, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %i3 = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %r3 = stablehlo.reduce(%v1 init: %i3) applies stablehlo.maximum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %v3 = stablehlo.broadcast_in_dim %r3, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %v4 = stablehlo.multiply %v3, %v0 : tensor<4x8xf32>
  %v8 = stablehlo.exponential %v4 : tensor<4x8xf32>
  %i9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %r9 = stablehlo.reduce(%v8 init: %i9) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %v9 = stablehlo.broadcast_in_dim %r9, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %v10 = stablehlo.multiply %arg0, %v2 : tensor<4x8xf32>
  return %v10, %v4 : tensor<4x8xf32>, tensor<4x8xf32>
}";
    let mut m = crate::parse::mlir::parse(text).expect("the program parses");
    crate::passes::dce::Dce.run(&mut m, &mut PassLog::default());
    let (fused, d) = fuse(&m, FusionConfig::default());
    assert!(has(&d, false, "refuse-cycle"), "the cyclic merge is refused: {d:#?}");
    assert!(has(&d, true, "sibling-multi-output-fusion"));
    // min(-arg1); min(arg0) with arg0 * v2 (siblings reading arg0); max of r1's
    // broadcast; v3 * -arg1.
    assert_eq!(cost(&fused).0, 4);
}
