//! The cost model: bytes moved, FLOPs and a roofline time for every kernel of a module.
//!
//! A *kernel* is a top-level instruction that a target launches: a fusion, a dot, a
//! convolution, a reduce, an unfused elementwise op... Parameters, constants, tuples,
//! get-tuple-element and bitcasts are not kernels (they move no data), and `while`,
//! `conditional` and `call` are control flow whose bodies' kernels are counted instead
//! (once each: trip counts are not known statically).
//!
//! A kernel reads each distinct operand once and writes its result once; inside a fusion
//! the intermediate values live in registers and cost nothing. This is XLA's
//! `HloCostAnalysis` view, and it is what the fusion pass optimizes: fewer kernels and
//! fewer bytes. FLOPs: one per element per elementwise op (transcendentals weighted by
//! [`TRANSCENDENTAL_FLOPS`]), `2*M*N*K` for a dot, the same for a convolution, one per
//! input element for a reduce. Time is the roofline `max(bytes/bandwidth, flops/peak)`
//! plus the launch overhead, for a [`Profile`] of the chosen chip.
//!
//! Sizes come from checked products and every sum and product saturates, so a shape past
//! 64 bits costs `u64::MAX` bytes rather than wrapping to a small number;
//! [`try_module_cost`] refuses such a module outright ([`crate::limits`]).

pub mod profiles;

use crate::ir::{CompId, Computation, ElementType, FusionKind, InstId, Module, Op, Type};
use std::borrow::Cow;
use std::collections::HashSet;

/// FLOPs charged per element for a transcendental op (exp, log, tanh, ...): range
/// reduction plus a short polynomial take several instructions. A modelling choice, not a
/// measured number.
pub const TRANSCENDENTAL_FLOPS: u64 = 4;

/// Which peak a kernel's arithmetic runs at.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DtypeClass {
    /// f32 and the integer types (CUDA cores / SIMD lanes).
    F32,
    /// A dot or convolution on f16/bf16 operands (tensor cores).
    F16Tensor,
    F64,
}

/// Peak rates of one chip.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub name: Cow<'static, str>,
    /// FLOP/s for f32 (and integer) arithmetic.
    pub peak_f32: f64,
    /// FLOP/s for f16/bf16 dots and convolutions on tensor cores (dense).
    pub peak_f16_tensor: f64,
    pub peak_f64: f64,
    /// Bytes per second between memory and the chip.
    pub mem_bandwidth: f64,
    /// Seconds added to every kernel: launch latency and synchronization.
    pub launch_overhead_s: f64,
    /// Whether the numbers were measured on the machine at run time.
    pub measured: bool,
}

impl Profile {
    /// A profile from numbers measured at run time (a bandwidth test, a GEMM benchmark,
    /// an empty-kernel launch), marked `measured`.
    pub fn measured(
        name: impl Into<String>,
        peak_f32: f64,
        peak_f16_tensor: f64,
        peak_f64: f64,
        mem_bandwidth: f64,
        launch_overhead_s: f64,
    ) -> Profile {
        Profile {
            name: Cow::Owned(name.into()),
            peak_f32,
            peak_f16_tensor,
            peak_f64,
            mem_bandwidth,
            launch_overhead_s,
            measured: true,
        }
    }

    /// Peak FLOP/s for a dtype class.
    pub fn peak(&self, class: DtypeClass) -> f64 {
        match class {
            DtypeClass::F32 => self.peak_f32,
            DtypeClass::F16Tensor => self.peak_f16_tensor,
            DtypeClass::F64 => self.peak_f64,
        }
    }

    /// Roofline time of a kernel: the slower of moving its bytes and doing its FLOPs,
    /// plus the launch overhead.
    pub fn roofline_s(&self, bytes: u64, flops: u64, class: DtypeClass) -> f64 {
        let memory = bytes as f64 / self.mem_bandwidth;
        let compute = flops as f64 / self.peak(class);
        memory.max(compute) + self.launch_overhead_s
    }

    /// Arithmetic intensity (FLOPs per byte) above which a kernel is compute bound.
    pub fn ridge_point(&self, class: DtypeClass) -> f64 {
        self.peak(class) / self.mem_bandwidth
    }
}

/// The cost of one kernel.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KernelCost {
    /// The instruction's name.
    pub name: String,
    /// Its op (`fusion`, `dot`, `add`, ...).
    pub op: &'static str,
    /// For a fusion, its kind.
    #[serde(serialize_with = "crate::api::serialize_fusion_kind")]
    pub fusion_kind: Option<FusionKind>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub flops: u64,
    pub class: DtypeClass,
    /// Roofline time including launch overhead.
    pub time_s: f64,
}

impl KernelCost {
    pub fn bytes(&self) -> u64 {
        self.bytes_read.saturating_add(self.bytes_written)
    }
    /// FLOPs per byte moved (0 for a kernel that moves nothing).
    pub fn intensity(&self) -> f64 {
        if self.bytes() == 0 {
            0.0
        } else {
            self.flops as f64 / self.bytes() as f64
        }
    }
    /// Whether memory traffic, not arithmetic, bounds this kernel on `profile`.
    pub fn memory_bound(&self, profile: &Profile) -> bool {
        self.intensity() < profile.ridge_point(self.class)
    }
}

/// The cost of a whole module: its kernels and their totals.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleCost {
    pub kernels: Vec<KernelCost>,
    pub bytes_moved: u64,
    pub flops: u64,
    pub time_s: f64,
}

impl ModuleCost {
    pub fn kernel_count(&self) -> usize {
        self.kernels.len()
    }
}

/// Instructions that launch nothing: they name values (parameters, tuples and their
/// elements), are data baked into the program (constants), reinterpret a buffer
/// (bitcast) or are control flow whose bodies hold the kernels.
pub fn is_trivial(op: &Op) -> bool {
    matches!(
        op,
        Op::Parameter(_)
            | Op::Constant(_)
            | Op::Tuple
            | Op::GetTupleElement { .. }
            | Op::Bitcast
            | Op::AfterAll
            | Op::OptimizationBarrier
            | Op::While { .. }
            | Op::Case { .. }
            | Op::Call { .. }
    )
}

/// The bytes of an instruction's value (saturating).
fn bytes_of(comp: &Computation, id: InstId) -> u64 {
    comp.inst(id).ty.checked_byte_size().unwrap_or(u64::MAX)
}

fn elems(ty: &Type) -> u64 {
    ty.leaves().fold(0u64, |n, s| n.saturating_add(s.checked_num_elements().unwrap_or(u64::MAX)))
}

/// The product of dimensions, saturating.
fn product(dims: impl IntoIterator<Item = i64>) -> u64 {
    dims.into_iter().fold(1u64, |n, d| n.saturating_mul(d.max(0) as u64))
}

/// FLOPs of one instruction of `comp` (fusions: the sum over their bodies).
pub fn inst_flops(module: &Module, comp: &Computation, id: InstId) -> u64 {
    let inst = comp.inst(id);
    let out = elems(&inst.ty);
    let operand_elems = |i: usize| inst.operands.get(i).map(|&o| elems(&comp.inst(o).ty)).unwrap_or(0);
    // Dimensions of operand `i` (empty when it is missing: a malformed op costs 0).
    let operand_dims = |i: usize| -> Vec<i64> {
        inst.operands.get(i).and_then(|&o| comp.inst(o).ty.as_array()).map(|s| s.dims.to_vec()).unwrap_or_default()
    };
    match &inst.op {
        Op::Unary(u) if u.is_transcendental() => out.saturating_mul(TRANSCENDENTAL_FLOPS),
        Op::Binary(crate::ir::BinaryOp::Pow | crate::ir::BinaryOp::Atan2) => out.saturating_mul(TRANSCENDENTAL_FLOPS),
        Op::Unary(_) | Op::Binary(_) | Op::Compare { .. } | Op::Select | Op::Convert | Op::ReducePrecision { .. } => {
            out
        }
        // min(max(x, lo), hi): two comparisons per element.
        Op::Clamp => out.saturating_mul(2),
        Op::Dot(d) => {
            let lhs = operand_dims(0);
            let k = product(d.lhs_contracting.iter().map(|&c| lhs.get(c as usize).copied().unwrap_or(1)));
            out.saturating_mul(k).saturating_mul(2)
        }
        Op::Convolution(c) => {
            // Each output element is a dot over (input features / groups) x window.
            let rhs = operand_dims(1);
            let rhs_elems = product(rhs.iter().copied());
            let out_features = rhs.get(c.dims.kernel_output_feature as usize).copied().unwrap_or(1).max(1) as u64;
            out.saturating_mul(rhs_elems / out_features).saturating_mul(2)
        }
        Op::Reduce { body, .. } => {
            let n_inputs = inst.operands.len() / 2;
            let input = (0..n_inputs).map(operand_elems).fold(0u64, u64::saturating_add) / n_inputs.max(1) as u64;
            input.saturating_mul(body_ops(module, *body))
        }
        Op::ReduceWindow(a) => {
            let window = product(a.window_dims.iter().copied());
            out.saturating_mul(window).saturating_mul(body_ops(module, a.body))
        }
        Op::Map { body, .. } => out.saturating_mul(body_ops(module, *body)),
        Op::Sort { .. } => {
            let n = operand_elems(0).max(2);
            n.saturating_mul(64 - (n - 1).leading_zeros() as u64)
        }
        Op::Fusion { body, .. } => {
            let b = module.comp(*body);
            b.order.iter().map(|&i| inst_flops(module, b, i)).fold(0u64, u64::saturating_add)
        }
        _ => 0,
    }
}

/// Non-parameter instructions of a scalar body (at least 1): FLOPs per application.
fn body_ops(module: &Module, body: CompId) -> u64 {
    let b = module.comp(body);
    (b.order.iter().filter(|&&i| !matches!(b.inst(i).op, Op::Parameter(_) | Op::Tuple)).count() as u64).max(1)
}

/// The dtype class of a kernel: tensor cores for an f16/bf16 dot or convolution (also
/// inside a fusion), f64 for f64 results, f32 otherwise.
fn dtype_class(module: &Module, comp: &Computation, id: InstId) -> DtypeClass {
    let inst = comp.inst(id);
    match &inst.op {
        Op::Dot(_) | Op::Convolution(_) => {
            let elem = inst.operands.first().and_then(|&o| comp.inst(o).ty.as_array()).map(|s| s.elem);
            match elem {
                Some(ElementType::F16 | ElementType::BF16) => DtypeClass::F16Tensor,
                Some(ElementType::F64) => DtypeClass::F64,
                _ => DtypeClass::F32,
            }
        }
        Op::Fusion { body, .. } => {
            let b = module.comp(*body);
            let hero = b.order.iter().find(|&&i| matches!(b.inst(i).op, Op::Dot(_) | Op::Convolution(_)));
            match hero {
                Some(&h) => dtype_class(module, b, h),
                None => dtype_class_of_type(&inst.ty),
            }
        }
        _ => dtype_class_of_type(&inst.ty),
    }
}

fn dtype_class_of_type(ty: &Type) -> DtypeClass {
    if ty.leaves().any(|s| s.elem == ElementType::F64) {
        DtypeClass::F64
    } else {
        DtypeClass::F32
    }
}

/// The cost of instruction `id` of `comp` as a kernel; `None` when it is not one.
pub fn instruction_cost(module: &Module, comp: &Computation, id: InstId, profile: &Profile) -> Option<KernelCost> {
    let inst = comp.inst(id);
    if is_trivial(&inst.op) {
        return None;
    }
    let mut seen = HashSet::new();
    let bytes_read =
        inst.operands.iter().filter(|o| seen.insert(**o)).map(|&o| bytes_of(comp, o)).fold(0u64, u64::saturating_add);
    let bytes_written = bytes_of(comp, id);
    let flops = inst_flops(module, comp, id);
    let class = dtype_class(module, comp, id);
    Some(KernelCost {
        name: inst.name.clone(),
        op: inst.op.hlo_name(),
        fusion_kind: match inst.op {
            Op::Fusion { kind, .. } => Some(kind),
            _ => None,
        },
        bytes_read,
        bytes_written,
        flops,
        class,
        time_s: profile.roofline_s(bytes_read.saturating_add(bytes_written), flops, class),
    })
}

/// The kernels of computation `comp` in program order, with those of the bodies of its
/// `while`, `conditional` and `call` instructions (each counted once).
pub fn computation_cost(module: &Module, comp: CompId, profile: &Profile) -> ModuleCost {
    let mut kernels = Vec::new();
    let mut visiting = HashSet::new();
    collect_kernels(module, comp, profile, &mut kernels, &mut visiting);
    let bytes_moved = kernels.iter().map(KernelCost::bytes).fold(0u64, u64::saturating_add);
    let flops = kernels.iter().map(|k| k.flops).fold(0u64, u64::saturating_add);
    let time_s = kernels.iter().map(|k| k.time_s).sum();
    ModuleCost { kernels, bytes_moved, flops, time_s }
}

fn collect_kernels(
    module: &Module,
    comp_id: CompId,
    profile: &Profile,
    out: &mut Vec<KernelCost>,
    visiting: &mut HashSet<CompId>,
) {
    // A computation that (malformed) calls itself is counted once.
    if !visiting.insert(comp_id) {
        return;
    }
    let comp = module.comp(comp_id);
    for &id in &comp.order {
        let op = &comp.inst(id).op;
        if matches!(op, Op::While { .. } | Op::Case { .. } | Op::Call { .. }) {
            for callee in op.called_computations() {
                collect_kernels(module, callee, profile, out, visiting);
            }
        } else if let Some(k) = instruction_cost(module, comp, id, profile) {
            out.push(k);
        }
    }
    visiting.remove(&comp_id);
}

/// The cost of the whole module (its entry computation and the control flow under it).
/// For a module within the limits; over them, sizes saturate ([`try_module_cost`]).
pub fn module_cost(module: &Module, profile: &Profile) -> ModuleCost {
    computation_cost(module, module.entry, profile)
}

/// [`module_cost`] of a module within the default limits ([`crate::limits`]), or the
/// limit it is over: for modules nobody has verified.
pub fn try_module_cost(module: &Module, profile: &Profile) -> Result<ModuleCost, crate::limits::LimitError> {
    crate::limits::check_module(module, &crate::limits::Limits::default())?;
    Ok(module_cost(module, profile))
}

/// Memory traffic of a would-be kernel made of `members` (instructions of `comp`, sorted
/// by id): the distinct values it reads from outside plus the members it must write
/// because someone outside (or the computation's root) uses them. A group of only
/// trivial instructions moves nothing. `users` is `comp`'s user lists.
pub fn group_traffic(comp: &Computation, members: &[InstId], users: &crate::ir::UserLists) -> u64 {
    if members.iter().all(|&m| is_trivial(&comp.inst(m).op)) {
        return 0;
    }
    let inside = |id: &InstId| members.binary_search(id).is_ok();
    // Operands read from outside, each counted once (a short list: a kernel reads few).
    let mut read: Vec<InstId> = Vec::new();
    let mut bytes = 0u64;
    for &m in members {
        for &o in &comp.inst(m).operands {
            if !inside(&o) && !read.contains(&o) {
                read.push(o);
                bytes = bytes.saturating_add(bytes_of(comp, o));
            }
        }
        let used_outside = comp.root == m || users.get(m).iter().any(|u| !inside(u));
        if used_outside {
            bytes = bytes.saturating_add(bytes_of(comp, m));
        }
    }
    bytes
}

/// `group_traffic(members)` minus `group_traffic(members + added)`: the bytes a would-be
/// kernel stops moving when `added` (not a member) joins it. Only `added`'s neighbours
/// change their part, so this looks at them instead of summing the group twice (fusion
/// asks it for every copy a group may take).
pub fn group_traffic_saved(comp: &Computation, members: &[InstId], users: &crate::ir::UserLists, added: InstId) -> i64 {
    let inside = |id: &InstId| members.binary_search(id).is_ok();
    let users_of = |id: InstId| users.get(id);
    // The group with `added`, sorted as `group_traffic` wants it (the slow way).
    let with_added = || {
        let mut with = members.to_vec();
        let at = with.binary_search(&added).unwrap_or_else(|at| at);
        with.insert(at, added);
        with
    };
    let saved = if members.iter().all(|&m| is_trivial(&comp.inst(m).op)) {
        // The group moved nothing; with `added` it may.
        -(group_traffic(comp, &with_added(), users) as i64)
    } else {
        let mut saved = 0i64;
        let bytes = |id: InstId| bytes_of(comp, id).min(i64::MAX as u64) as i64;
        // `added` was read from outside; now it is computed inside, and written only if
        // someone outside still needs it.
        if users_of(added).iter().any(&inside) {
            saved = saved.saturating_add(bytes(added));
        }
        if comp.root == added || users_of(added).iter().any(|u| !inside(u)) {
            saved = saved.saturating_sub(bytes(added));
        }
        let operands = &comp.inst(added).operands;
        for (i, &o) in operands.iter().enumerate() {
            if operands[..i].contains(&o) || o == added {
                continue;
            }
            if inside(&o) {
                // A member `added` read from outside: no longer written for it alone.
                let still_needed = comp.root == o || users_of(o).iter().any(|&u| u != added && !inside(&u));
                if !still_needed {
                    saved = saved.saturating_add(bytes(o));
                }
            } else if !users_of(o).iter().any(&inside) {
                // A value no member read before: the kernel reads it now.
                saved = saved.saturating_sub(bytes(o));
            }
        }
        saved
    };
    debug_assert_eq!(
        saved,
        group_traffic(comp, members, users) as i64 - group_traffic(comp, &with_added(), users) as i64
    );
    saved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::testutil::*;
    use crate::ir::{BinaryOp, DotDims, ElementType::*, UnaryOp};

    #[test]
    fn roofline_and_profiles() {
        let h100 = profiles::H100_SXM;
        // 3.35e9 bytes take 1 ms at 3.35 TB/s; 1e9 f32 FLOPs take 1/67 ms.
        let t = h100.roofline_s(3_350_000_000, 1_000_000_000, DtypeClass::F32);
        assert!((t - (1e-3 + 4e-6)).abs() < 1e-12, "{t}");
        assert_eq!(profiles::by_name("h100").unwrap().name, "H100 SXM");
        assert_eq!(profiles::by_name("RTX-4090").unwrap().mem_bandwidth, 1008e9);
        assert!(profiles::by_name("tpu").is_none());
        assert_eq!(profiles::all().len(), 6);
        let m = Profile::measured("my gpu", 1e12, 2e12, 5e11, 1e11, 5e-6);
        assert!(m.measured && !h100.measured);
        assert_eq!(m.peak(DtypeClass::F16Tensor), 2e12);
        assert_eq!(h100.ridge_point(DtypeClass::F32), 67e12 / 3350e9);
    }

    #[test]
    fn a_value_joining_a_group_changes_its_traffic_by_its_neighbours() {
        // x: f32[64] (256 B); e = exp(x); s = e + e; n = -s; b = f32[4,64] broadcast(e)
        // (1 KiB) is the root's operand with n.
        let module = TestModule::new().finish_with_entry(&[arr(F32, &[64])], |b, p| {
            let e = b.op(Op::Unary(UnaryOp::Exp), &[p[0]], arr(F32, &[64]));
            let s = b.op(Op::Binary(BinaryOp::Add), &[e, e], arr(F32, &[64]));
            let n = b.op(Op::Unary(UnaryOp::Neg), &[s], arr(F32, &[64]));
            let w = b.op(Op::BroadcastInDim { dims: vec![1] }, &[e], arr(F32, &[4, 64]));
            b.op(Op::Tuple, &[n, w], crate::ir::Type::Tuple(vec![arr(F32, &[64]), arr(F32, &[4, 64])]))
        });
        let comp = module.comp(module.entry);
        let users = comp.users();
        let [_, e, s, n, w, _] = comp.order[..] else { panic!("six instructions") };
        // {s, n} reads e and writes n: 512 B. With e: reads x, writes n and e (the
        // broadcast outside still needs it): 768 B, so 256 B more.
        assert_eq!(group_traffic_saved(comp, &[s, n], &users, e), -256);
        // {n} reads s and writes n; with s it reads e instead: the same 512 B.
        assert_eq!(group_traffic_saved(comp, &[n], &users, s), 0);
        // {e} reads x and writes e (for s and w); with w it still writes e for s, and
        // writes w (1 KiB) instead of nothing: 1 KiB more.
        assert_eq!(group_traffic_saved(comp, &[e], &users, w), -1024);
        // A group of trivial members moves nothing; with e, it writes e (x is inside).
        assert_eq!(group_traffic_saved(comp, &[comp.order[0]], &users, e), -256);
    }

    /// y = exp(x @ w) for x: f32[4,8], w: f32[8,16]; f16 variant runs on tensor cores.
    #[test]
    fn dot_and_elementwise_costs() {
        for (elem, size, class) in [(F32, 4u64, DtypeClass::F32), (BF16, 2, DtypeClass::F16Tensor)] {
            let module = TestModule::new().finish_with_entry(&[arr(elem, &[4, 8]), arr(elem, &[8, 16])], |b, p| {
                let dims = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
                let d = b.op(Op::Dot(dims), &[p[0], p[1]], arr(elem, &[4, 16]));
                b.op(Op::Unary(UnaryOp::Exp), &[d], arr(elem, &[4, 16]))
            });
            let cost = module_cost(&module, &profiles::A100);
            assert_eq!(cost.kernel_count(), 2);
            let dot = &cost.kernels[0];
            assert_eq!((dot.op, dot.flops, dot.class), ("dot", 2 * 4 * 16 * 8, class));
            assert_eq!(dot.bytes_read, (32 + 128) * size);
            assert_eq!(dot.bytes_written, 64 * size);
            let exp = &cost.kernels[1];
            assert_eq!(exp.flops, 64 * TRANSCENDENTAL_FLOPS);
            assert_eq!(exp.bytes(), 128 * size);
            assert_eq!(cost.bytes_moved, (32 + 128 + 64 + 128) * size);
            assert!(exp.memory_bound(&profiles::A100));
        }
    }

    #[test]
    fn reduce_counts_inputs_and_trivial_ops_are_free() {
        let mut m = TestModule::new();
        let add = m.binary_body(BinaryOp::Add, F32);
        let module = m.finish_with_entry(&[arr(F32, &[3, 5])], |b, p| {
            let zero = b.constant(f32s(&[], &[0.0]));
            let r = b.op(Op::Reduce { dims: vec![1], body: add }, &[p[0], zero], arr(F32, &[3]));
            let bc = b.op(Op::Bitcast, &[r], arr(F32, &[3, 1]));
            b.tuple(&[bc])
        });
        let cost = module_cost(&module, &profiles::GENERIC_CPU);
        assert_eq!(cost.kernel_count(), 1);
        assert_eq!(cost.kernels[0].flops, 15);
        assert_eq!(cost.bytes_moved, 15 * 4 + 4 + 3 * 4);
    }
}
