//! The WebGPU target: WGSL from the shared kernel plan ([`wgsl`]), run through wgpu
//! (feature `webgpu`, [`runtime`]) natively (Vulkan, Metal, DX12; lavapipe in CI) and,
//! later, in the browser on `navigator.gpu`.
//!
//! Planning for WebGPU ([`caps`]): no GEMM library (dots are reduction kernels), buffers
//! at 256-byte offsets (storage binding alignment), no row chains (a GPU runs a kernel's
//! rows at once), and f64 refused with an error naming the instruction. Each elemental
//! kernel the emitter takes becomes one compute shader, a scatter with a commutative
//! combiner two (its operand's copy, its atomic updates: `kernel::atomic_scatter`), a
//! replacing one three (the copy, claims in a scratch buffer, the winning stores); the
//! others (sorts, other scatters, control flow, ops not emitted yet) are demoted to
//! opaque kernels, which the runtime runs on the host in the reference interpreter
//! between dispatches. s64 and u64 run on the device as pairs of 32-bit words
//! ([`wide`]).
//!
//! [`compile`] needs no GPU: it makes the plan and the shaders (`hloscope compile --target
//! webgpu --emit wgsl`, and the tests that validate every shader with naga).

pub mod approx;
pub mod wgsl;
pub mod wide;

#[cfg(feature = "webgpu")]
pub mod runtime;

use crate::ir::{ElementType, Module};
use crate::kernel::atomic_scatter::atomic_scatter;
use crate::kernel::{self, KernelBody, KernelPlan, TargetCaps};
use std::collections::HashMap;

/// What the planner is told about WebGPU.
pub fn caps() -> TargetCaps {
    TargetCaps {
        name: "webgpu".into(),
        library_dot: false,
        arena_alignment: 256,
        row_chains: false,
        refused_elems: vec![ElementType::F64],
    }
}

/// A module planned and translated to WGSL, ready for a device.
#[derive(Clone, Debug)]
pub struct WebGpuProgram {
    pub plan: KernelPlan,
    /// Per kernel: its shader, or `None` for a kernel the host runs (opaque).
    pub shaders: Vec<Option<wgsl::WgslKernel>>,
}

impl WebGpuProgram {
    /// (kernels on the GPU, kernels on the host).
    pub fn counts(&self) -> (usize, usize) {
        let gpu = self.shaders.iter().filter(|s| s.is_some()).count();
        (gpu, self.shaders.len() - gpu)
    }

    /// Every shader with its kernel's index and name, for `--emit wgsl`; host kernels
    /// say why they are not on the GPU.
    pub fn listing(&self) -> String {
        let mut s = String::new();
        for (i, (k, sh)) in self.plan.kernels.iter().zip(&self.shaders).enumerate() {
            match sh {
                Some(sh) => {
                    s += &format!("// ---- kernel {i} %{} ----\n", k.name);
                    for pass in sh.passes() {
                        s += &format!("{}\n", pass.source);
                    }
                }
                None => s += &format!("// ---- kernel {i} %{}: on the host: {} ----\n\n", k.name, k.kind),
            }
        }
        s
    }
}

/// Plans `module`'s entry computation for WebGPU and emits a shader per elemental
/// kernel, with the emitter's default options (no workgroup staging); a kernel the
/// emitter refuses runs on the host (its reason in the plan).
pub fn compile(module: &Module) -> Result<WebGpuProgram, String> {
    compile_with(module, wgsl::Options::default())
}

/// [`compile`] with the emitter's `options`.
pub fn compile_with(module: &Module, options: wgsl::Options) -> Result<WebGpuProgram, String> {
    let mut plan = kernel::plan_computation_with(module, module.entry, &caps())?;
    let mut refused: HashMap<crate::ir::InstId, String> = HashMap::new();
    for k in &plan.kernels {
        let why = match &k.body {
            KernelBody::Elemental(e) => match emit_kernel(&plan, k, e, options) {
                Ok(_) => continue,
                Err(why) => why,
            },
            KernelBody::Opaque { .. } => continue,
            KernelBody::Dot(_) => "dots run as reductions on webgpu".into(),
            KernelBody::Sort(_) => "sorts are not compiled for webgpu yet".into(),
            KernelBody::Scatter(spec) => match emit_scatter(module, &plan, k, spec) {
                Ok(_) => continue,
                Err(why) => why,
            },
            KernelBody::While { .. } | KernelBody::Case { .. } => {
                "control flow runs on the host for webgpu (the interpreter, whole)".into()
            }
        };
        refused.entry(k.source).or_insert(why);
    }
    if !refused.is_empty() {
        plan.demote_to_opaque(module, &refused)?;
    }
    let shaders = plan
        .kernels
        .iter()
        .map(|k| match &k.body {
            KernelBody::Elemental(e) => emit_kernel(&plan, k, e, options).map(Some),
            KernelBody::Scatter(spec) => emit_scatter(module, &plan, k, spec).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    Ok(WebGpuProgram { plan, shaders })
}

/// A scatter on the device ([`atomic_scatter`]): the updates' shader, after the copy of
/// the operand into the output where the two do not share their bytes and, for a
/// replacing scatter, after the claims (both share a scratch word per output element).
fn emit_scatter(
    module: &Module,
    plan: &KernelPlan,
    k: &kernel::Kernel,
    spec: &kernel::ScatterSpec,
) -> Result<wgsl::WgslKernel, String> {
    let s = atomic_scatter(spec, module.comp(module.entry))?;
    let word = |b: kernel::BufferId| plan.arena.offset(b) / 4;
    let (operand, output) = (word(k.inputs[0]), word(k.outputs[0]));
    let title = format!("%{} ({})", k.name, k.kind);
    // Inputs: the index array, the updates, and the output itself (its current elements).
    let place = wgsl::Placement { inputs: &[word(k.inputs[1]), word(k.inputs[2]), output], outputs: &[output] };
    let mut updates = wgsl::emit_scatter_updates(&s, &format!("{title}: its updates"), &place)?;
    if operand != output {
        let place = wgsl::Placement { inputs: &[operand], outputs: &[output] };
        let copy = wgsl::emit(&s.copy, &format!("{title}: its operand copied"), &place, wgsl::Options::default())?;
        updates.before.push(copy);
    }
    if s.last_wins {
        // One claim word per output element.
        let words = spec.operand_dims.iter().product::<i64>().max(0) as u64;
        let mut claims = wgsl::emit_scatter_claims(&s, &format!("{title}: its claims"), &place)?;
        claims.scratch_words = words;
        updates.scratch_words = words;
        updates.before.push(claims);
    }
    Ok(updates)
}

fn emit_kernel(
    plan: &KernelPlan,
    k: &kernel::Kernel,
    e: &kernel::Elemental,
    options: wgsl::Options,
) -> Result<wgsl::WgslKernel, String> {
    let words = |bs: &[kernel::BufferId]| bs.iter().map(|&b| plan.arena.offset(b) / 4).collect::<Vec<_>>();
    let (inputs, outputs) = (words(&k.inputs), words(&k.outputs));
    let place = wgsl::Placement { inputs: &inputs, outputs: &outputs };
    wgsl::emit(e, &format!("%{} ({})", k.name, k.kind), &place, options)
}
