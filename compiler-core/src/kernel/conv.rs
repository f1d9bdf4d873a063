//! Convolution as GEMM: an im2col loop kernel, a (batched) dot, and a loop kernel that
//! puts the product in the output's dimension order when it is not already.
//!
//! With `G` groups (feature groups, or batch groups; at most one kind is > 1), the
//! im2col kernel writes `patches[g, (b, o...), (k..., ci)]`: the input element window
//! position `k` of output position `o` reads, for group `g`, or 0 where that position
//! falls in padding or between lhs-dilated elements (the interpreter's rule: position
//! `q = o * stride + k * rhs_dilation - pad_low` is an input element when
//! `q % lhs_dilation == 0` and `q / lhs_dilation` is in range; window reversal reads
//! kernel position `K-1-k` instead). The kernel becomes `[g, (k..., ci), co]` (a
//! permutation the dot does itself when `G == 1`, a loop kernel otherwise), the dot
//! computes `[g, (b, o...), co]`, and output feature `f` is `g * Cout_g + co`.
//!
//! Everything is described with the plan's own kernels (elemental loops and a
//! [`DotSpec`]), so every target that runs those runs convolutions. Only f32 and f64 go
//! this way: the GEMM sums in a different order than the interpreter (which adds step by
//! step), so results agree to rounding, not bit for bit.

use super::elemental::{Builder, Elemental, Idx, IdxId, Node, Output};
use super::{BufferId, DotSpec, Kernel, KernelBody, KernelKind, Planner};
use crate::ir::{Computation, ConvAttrs, ElementType, InstId, Op, Scalar, Shape};
use rustc_hash::FxHashMap as HashMap;

/// The sizes a convolution's kernels need, after checking the attributes fit.
struct Geometry {
    elem: ElementType,
    /// Spatial rank.
    ns: usize,
    groups: i64,
    /// Output batch, and input batch per group.
    batch: i64,
    /// Input features per group (the kernel's input features).
    cin: i64,
    /// Output features per group.
    cout: i64,
    out_sp: Vec<i64>,
    k_sp: Vec<i64>,
}

fn geometry(c: &ConvAttrs, lhs: &Shape, rhs: &Shape, out: &Shape) -> Result<Geometry, String> {
    let dn = &c.dims;
    let rank = lhs.rank();
    let elem = out.elem;
    if !matches!(elem, ElementType::F32 | ElementType::F64) || lhs.elem != elem || rhs.elem != elem {
        return Err(format!("convolution of {} x {} -> {elem} is not an f32/f64 GEMM", lhs.elem, rhs.elem));
    }
    if rank < 2 || rhs.rank() != rank || out.rank() != rank {
        return Err("malformed convolution".into());
    }
    let ns = rank - 2;
    let lens = [
        dn.input_spatial.len(),
        dn.kernel_spatial.len(),
        dn.output_spatial.len(),
        c.window_strides.len(),
        c.padding.len(),
        c.lhs_dilation.len(),
        c.rhs_dilation.len(),
        c.window_reversal.len(),
    ];
    let perm = |dims: Vec<i64>| {
        let mut seen = vec![false; rank];
        dims.iter().all(|&d| d >= 0 && (d as usize) < rank && !std::mem::replace(&mut seen[d as usize], true))
    };
    if lens.iter().any(|&l| l != ns)
        || !perm([vec![dn.input_batch, dn.input_feature], dn.input_spatial.clone()].concat())
        || !perm([vec![dn.kernel_input_feature, dn.kernel_output_feature], dn.kernel_spatial.clone()].concat())
        || !perm([vec![dn.output_batch, dn.output_feature], dn.output_spatial.clone()].concat())
        || c.window_strides.iter().chain(&c.lhs_dilation).chain(&c.rhs_dilation).any(|&x| x <= 0)
    {
        return Err("malformed convolution".into());
    }
    let (fgc, bgc) = (c.feature_group_count, c.batch_group_count);
    if fgc <= 0 || bgc <= 0 || (fgc > 1 && bgc > 1) {
        return Err("malformed convolution group counts".into());
    }
    let (ld, rd, od) = (&lhs.dims, &rhs.dims, &out.dims);
    let in_batch = ld[dn.input_batch as usize];
    let in_feat = ld[dn.input_feature as usize];
    let k_in = rd[dn.kernel_input_feature as usize];
    let k_out = rd[dn.kernel_output_feature as usize];
    let groups = fgc.max(bgc);
    if in_batch % bgc != 0 || k_out % groups != 0 || k_in * fgc != in_feat {
        return Err("convolution features do not fit its groups".into());
    }
    if od[dn.output_batch as usize] != in_batch / bgc || od[dn.output_feature as usize] != k_out {
        return Err("convolution result batch/features do not match".into());
    }
    for s in 0..ns {
        let n = ld[dn.input_spatial[s] as usize];
        let k = rd[dn.kernel_spatial[s] as usize];
        let count = crate::verify::infer::num_windows(
            n,
            c.lhs_dilation[s],
            c.padding[s],
            k,
            c.rhs_dilation[s],
            c.window_strides[s],
        )?;
        if od[dn.output_spatial[s] as usize] != count {
            return Err("convolution result spatial size does not match".into());
        }
    }
    Ok(Geometry {
        elem,
        ns,
        groups,
        batch: in_batch / bgc,
        cin: k_in,
        cout: k_out / groups,
        out_sp: dn.output_spatial.iter().map(|&d| od[d as usize]).collect(),
        k_sp: dn.kernel_spatial.iter().map(|&d| rd[d as usize]).collect(),
    })
}

impl<'m> Planner<'m> {
    /// Plans convolution `id` of `comp` (operands in `lhs`, `rhs`) writing `output`, as
    /// kernels named `name` coming from entry instruction `source` (the convolution, or
    /// the fusion holding it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn convolution(
        &mut self,
        name: &str,
        source: InstId,
        comp: &Computation,
        id: InstId,
        lhs: BufferId,
        rhs: BufferId,
        output: BufferId,
    ) -> Result<(), String> {
        let inst = comp.inst(id);
        let Op::Convolution(c) = &inst.op else { return Err("not a convolution".into()) };
        let ls = self.plan.buffers[lhs].shape.clone();
        let rs = self.plan.buffers[rhs].shape.clone();
        let os = self.plan.buffers[output].shape.clone();
        let g = geometry(c, &ls, &rs, &os)?;
        let dn = &c.dims;
        let (ns, elem) = (g.ns, g.elem);
        let m = g.batch * g.out_sp.iter().product::<i64>();
        let kc = g.k_sp.iter().product::<i64>() * g.cin;
        // The patches repeat every input element once per window position it is in: an
        // array of its own, which may be over the limits where the operands are not
        // (the interpreter then runs the convolution, without it).
        let patches_shape = Shape::new(elem, vec![g.groups, m, kc]);
        crate::limits::Limits::default().check_shape(&patches_shape).map_err(|m| format!("im2col patches: {m}"))?;

        // im2col: space [g, b, o..., k..., ci].
        let mut space = vec![g.groups, g.batch];
        space.extend(&g.out_sp);
        space.extend(&g.k_sp);
        space.push(g.cin);
        let mut b = Builder::new(comp, HashMap::default());
        b.e.space = space.clone();
        b.e.reduced = vec![false; space.len()];
        let var = |b: &mut Builder, v: usize| b.idx(Idx::Var(v as u32));
        let (vg, vb, vci) = (var(&mut b, 0), var(&mut b, 1), var(&mut b, space.len() - 1));
        let mut src = vec![IdxId(0); ls.rank()];
        // Batch groups split the input batch, feature groups the input features.
        src[dn.input_batch as usize] = if c.batch_group_count > 1 { b.idx(Idx::Mul(vg, g.batch)) } else { b.konst(0) };
        src[dn.input_batch as usize] = b.add(src[dn.input_batch as usize], vb);
        src[dn.input_feature as usize] =
            if c.feature_group_count > 1 { b.idx(Idx::Mul(vg, g.cin)) } else { b.konst(0) };
        src[dn.input_feature as usize] = b.add(src[dn.input_feature as usize], vci);
        let mut cond: Option<super::elemental::ExprId> = None;
        for s in 0..ns {
            let o = var(&mut b, 2 + s);
            let mut k = var(&mut b, 2 + ns + s);
            if c.window_reversal[s] {
                let neg = b.idx(Idx::Mul(k, -1));
                k = b.add_const(neg, g.k_sp[s] - 1);
            }
            let os_ = b.idx(Idx::Mul(o, c.window_strides[s]));
            let ks = b.idx(Idx::Mul(k, c.rhs_dilation[s]));
            let q0 = b.add(os_, ks);
            let q = b.add_const(q0, -c.padding[s].0);
            let n = ls.dims[dn.input_spatial[s] as usize];
            let (i, hit) = b.dilated_read(q, n, c.lhs_dilation[s]);
            cond = Some(match cond {
                None => hit,
                Some(p) => b.node(Node::Binary(crate::ir::BinaryOp::And, p, hit), ElementType::Pred),
            });
            src[dn.input_spatial[s] as usize] = i;
        }
        let linear = b.linearize(&src, &ls.dims);
        let load = b.node(Node::Load { input: 0, linear }, elem);
        let value = match cond {
            None => load,
            Some(p) => {
                let zero = b.node(Node::Const(Scalar::F(0.0)), elem);
                b.node(Node::Select { pred: p, on_true: load, on_false: zero }, elem)
            }
        };
        b.e.outputs.push(Output { expr: value, inner: false, elem });
        b.e.input_elems = vec![elem];
        let patches = self.buffer(patches_shape, format!("{}.patches", inst.name));
        self.push_loop(name.to_string(), source, b.e, vec![lhs], patches);

        // The kernel as [g, (k..., ci), co]: the dot permutes it itself when G == 1.
        let mut rhs_perm: Vec<usize> = dn.kernel_spatial.iter().map(|&d| d as usize).collect();
        rhs_perm.push(dn.kernel_input_feature as usize);
        rhs_perm.push(dn.kernel_output_feature as usize);
        let (weights, rhs_perm) = if g.groups == 1 {
            (rhs, rhs_perm)
        } else {
            let mut space = vec![g.groups];
            space.extend(&g.k_sp);
            space.extend([g.cin, g.cout]);
            let mut b = Builder::new(comp, HashMap::default());
            b.e.space = space.clone();
            b.e.reduced = vec![false; space.len()];
            let mut src = vec![IdxId(0); rs.rank()];
            for s in 0..ns {
                src[dn.kernel_spatial[s] as usize] = var(&mut b, 1 + s);
            }
            src[dn.kernel_input_feature as usize] = var(&mut b, 1 + ns);
            let (vg, vco) = (var(&mut b, 0), var(&mut b, 2 + ns));
            let base = b.idx(Idx::Mul(vg, g.cout));
            src[dn.kernel_output_feature as usize] = b.add(base, vco);
            let linear = b.linearize(&src, &rs.dims);
            let load = b.node(Node::Load { input: 0, linear }, elem);
            b.e.outputs.push(Output { expr: load, inner: false, elem });
            b.e.input_elems = vec![elem];
            let w = self.buffer(Shape::new(elem, vec![g.groups, kc, g.cout]), format!("{}.weights", inst.name));
            self.push_loop(name.to_string(), source, b.e, vec![rhs], w);
            (w, vec![0, 1, 2])
        };

        // The dot straight into the output when that is already [b, o..., f].
        let direct = g.groups == 1
            && dn.output_batch == 0
            && dn.output_feature as usize == ns + 1
            && dn.output_spatial.iter().enumerate().all(|(s, &d)| d as usize == s + 1);
        let product = if direct {
            output
        } else {
            self.buffer(Shape::new(elem, vec![g.groups, m, g.cout]), format!("{}.product", inst.name))
        };
        let spec = DotSpec {
            batch: g.groups as usize,
            m: m as usize,
            n: g.cout as usize,
            k: kc as usize,
            lhs_perm: vec![0, 1, 2],
            rhs_perm,
            elem,
        };
        if self.plan.caps.library_dot {
            self.plan.kernels.push(Kernel {
                name: name.to_string(),
                source,
                kind: KernelKind::Dot,
                inputs: vec![patches, weights],
                outputs: vec![product],
                body: KernelBody::Dot(spec),
            });
        } else {
            let dims = |b: BufferId| self.plan.buffers[b].shape.dims.clone();
            let e = gemm_as_reduction(comp, &spec, &dims(patches), &dims(weights));
            self.plan.kernels.push(Kernel {
                name: name.to_string(),
                source,
                kind: super::elemental_kind(&e),
                inputs: vec![patches, weights],
                outputs: vec![product],
                body: KernelBody::Elemental(e),
            });
        }
        if direct {
            return Ok(());
        }
        // out[..b.., ..o.., ..f..] = product[f / Cout_g, (b, o...), f % Cout_g].
        let mut b = Builder::new(comp, HashMap::default());
        b.e.space = os.dims.to_vec();
        b.e.reduced = vec![false; os.rank()];
        let f = var(&mut b, dn.output_feature as usize);
        let gi = b.idx(Idx::Div(f, g.cout.max(1)));
        let co = b.idx(Idx::Rem(f, g.cout.max(1)));
        let mut row_idx = vec![var(&mut b, dn.output_batch as usize)];
        row_idx.extend(dn.output_spatial.iter().map(|&d| var(&mut b, d as usize)));
        let mut row_dims = vec![g.batch];
        row_dims.extend(&g.out_sp);
        let row = b.linearize(&row_idx, &row_dims);
        let linear = b.linearize(&[gi, row, co], &[g.groups, m, g.cout]);
        let load = b.node(Node::Load { input: 0, linear }, elem);
        b.e.outputs.push(Output { expr: load, inner: false, elem });
        b.e.input_elems = vec![elem];
        self.push_loop(name.to_string(), source, b.e, vec![product], output);
        Ok(())
    }

    fn push_loop(&mut self, name: String, source: InstId, e: Elemental, inputs: Vec<BufferId>, output: BufferId) {
        self.plan.kernels.push(Kernel {
            name,
            source,
            kind: KernelKind::Loop,
            inputs,
            outputs: vec![output],
            body: KernelBody::Elemental(e),
        });
    }
}

/// The batched GEMM `spec` as a reduction kernel, for targets without a GEMM library:
/// space `[batch, m, n, k]`, `k` reduced, each operand read through its permutation
/// (`lhs_dims`, `rhs_dims`: the operands' own dimensions). f16 and bf16 products are
/// summed in f32 and rounded once, as a dot is (the interpreter, XLA's GEMMs), not
/// rounded at every step as a `reduce` in that type would be.
fn gemm_as_reduction(comp: &Computation, spec: &DotSpec, lhs_dims: &[i64], rhs_dims: &[i64]) -> Elemental {
    let (nb, m, n, k) = (spec.batch as i64, spec.m as i64, spec.n as i64, spec.k as i64);
    let stored = spec.elem;
    let elem = if matches!(stored, ElementType::F16 | ElementType::BF16) { ElementType::F32 } else { stored };
    let mut b = Builder::new(comp, HashMap::default());
    b.e.space = vec![nb, m, n, k];
    b.e.reduced = vec![false, false, false, true];
    let v: Vec<IdxId> = (0..4).map(|i| b.idx(Idx::Var(i))).collect();
    // Element (x, y, z) of an operand's permuted [batch, rows, cols] form, read from
    // the operand itself: its row-major position in that form, unravelled over the
    // permuted dimensions and put back in place.
    let read = |b: &mut Builder, input: u32, dims: &[i64], perm: &[usize], at: [IdxId; 3], rows: i64, cols: i64| {
        let flat = b.linearize(&at, &[nb, rows, cols]);
        let pdims: Vec<i64> = perm.iter().map(|&d| dims[d]).collect();
        let parts = b.delinearize(flat, &pdims);
        let mut src = vec![IdxId(0); dims.len()];
        for (i, &d) in perm.iter().enumerate() {
            src[d] = parts[i];
        }
        let linear = b.linearize(&src, dims);
        let loaded = b.node(Node::Load { input, linear }, stored);
        if elem == stored {
            loaded
        } else {
            b.node(Node::Convert(loaded), elem)
        }
    };
    let x = read(&mut b, 0, lhs_dims, &spec.lhs_perm, [v[0], v[1], v[3]], m, k);
    let y = read(&mut b, 1, rhs_dims, &spec.rhs_perm, [v[0], v[3], v[2]], k, n);
    let (mul, add) = if elem.is_pred() {
        (crate::ir::BinaryOp::And, crate::ir::BinaryOp::Or)
    } else {
        (crate::ir::BinaryOp::Mul, crate::ir::BinaryOp::Add)
    };
    let product = b.node(Node::Binary(mul, x, y), elem);
    let zero = match elem {
        ElementType::Pred => Scalar::Pred(false),
        e if e.is_float() => Scalar::F(0.0),
        e if e.is_signed_int() => Scalar::S(0),
        _ => Scalar::U(0),
    };
    let zero = b.node(Node::Const(zero), elem);
    let acc = b.node(Node::Acc { red: 0, i: 0 }, elem);
    let arg = b.node(Node::Arg { red: 0, i: 0 }, elem);
    let sum = b.node(Node::Binary(add, acc, arg), elem);
    b.e.reductions.push(super::elemental::Reduction { inits: vec![zero], values: vec![product], combiner: vec![sum] });
    let mut result = b.node(Node::Reduced { red: 0, i: 0 }, elem);
    if elem != stored {
        result = b.node(Node::Convert(result), stored);
    }
    b.e.outputs.push(Output { expr: result, inner: false, elem: stored });
    b.e.input_elems = vec![stored, stored];
    b.e
}
