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
use crate::targets::control;
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
    /// Per kernel: its shader, or `None` for a kernel the host runs (opaque) or drives
    /// (control flow).
    pub shaders: Vec<Option<wgsl::WgslKernel>>,
    /// Per kernel: a while loop's condition and body, or a conditional's branches, as
    /// programs of their own, which the host drives (empty for other kernels).
    pub nested: Vec<Vec<WebGpuProgram>>,
}

impl WebGpuProgram {
    /// (kernels on the GPU, kernels on the host), those inside control flow included
    /// (the control flow itself, which the host drives, is neither).
    pub fn counts(&self) -> (usize, usize) {
        let (mut gpu, mut host) = (0, 0);
        for (sh, nested) in self.shaders.iter().zip(&self.nested) {
            match (sh, nested.is_empty()) {
                (Some(_), _) => gpu += 1,
                (None, true) => host += 1,
                (None, false) => {
                    for (g, h) in nested.iter().map(WebGpuProgram::counts) {
                        (gpu, host) = (gpu + g, host + h);
                    }
                }
            }
        }
        (gpu, host)
    }

    /// The kernels that dispatch work on the device (of this program, not of its control
    /// flow's, which are timed with their control flow).
    pub fn dispatched(&self) -> usize {
        self.shaders.iter().flatten().filter(|s| s.passes().any(|p| p.workgroups() > 0)).count()
    }

    /// Every shader, those of control flow's programs included, each with its passes.
    pub fn all_shaders(&self) -> Vec<&wgsl::WgslKernel> {
        let mut out: Vec<&wgsl::WgslKernel> = self.shaders.iter().flatten().flat_map(|s| s.passes()).collect();
        out.extend(self.nested.iter().flatten().flat_map(WebGpuProgram::all_shaders));
        out
    }

    /// The kernels the host runs (in the interpreter), those inside control flow
    /// included.
    pub fn host_kernels(&self) -> Vec<&kernel::Kernel> {
        let mut out = Vec::new();
        for ((k, sh), nested) in self.plan.kernels.iter().zip(&self.shaders).zip(&self.nested) {
            match (sh, nested.is_empty()) {
                (Some(_), _) => {}
                (None, true) => out.push(k),
                (None, false) => out.extend(nested.iter().flat_map(WebGpuProgram::host_kernels)),
            }
        }
        out
    }

    /// Every shader with its kernel's index and name, for `--emit wgsl`; host kernels
    /// say why they are not on the GPU, control flow lists its programs' shaders.
    pub fn listing(&self) -> String {
        self.listing_under("")
    }

    /// The shaders of control-flow kernel `k`'s programs (its condition and body, or its
    /// branches), as [`WebGpuProgram::listing`] shows them; empty for other kernels.
    pub fn control_listing(&self, k: usize) -> String {
        self.nested_listing(k, "")
    }

    /// The listings of control-flow kernel `k`'s programs, each kernel's path under
    /// `path` (`2.body.0`: kernel 0 of the body of kernel 2).
    fn nested_listing(&self, k: usize, path: &str) -> String {
        let (Some(kernel), Some(nested)) = (self.plan.kernels.get(k), self.nested.get(k)) else {
            return String::new();
        };
        let parts = match kernel.body {
            KernelBody::While { .. } => vec!["cond".to_string(), "body".to_string()],
            _ => (0..nested.len()).map(|b| format!("branch{b}")).collect(),
        };
        let mut s = String::new();
        for (part, program) in parts.iter().zip(nested) {
            s += &program.listing_under(&format!("{path}{k}.{part}."));
        }
        s
    }

    fn listing_under(&self, path: &str) -> String {
        let mut s = String::new();
        for (i, ((k, sh), nested)) in self.plan.kernels.iter().zip(&self.shaders).zip(&self.nested).enumerate() {
            match sh {
                Some(sh) => {
                    s += &format!("// ---- kernel {path}{i} %{} ----\n", k.name);
                    for pass in sh.passes() {
                        s += &format!("{}\n", pass.source);
                    }
                }
                None if !nested.is_empty() => {
                    s += &format!("// ---- kernel {path}{i} %{}: {}, driven from the host ----\n\n", k.name, k.kind);
                    s += &self.nested_listing(i, path);
                }
                None => s += &format!("// ---- kernel {path}{i} %{}: on the host: {} ----\n\n", k.name, k.kind),
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
    compile_computation(module, module.entry, options, 0)
}

/// Computation `comp` of `module` as a program, `depth` levels of control flow deep: a
/// while loop's or conditional's computations become programs of their own, down to
/// [`control::MAX_DEPTH`] levels (deeper ones run on the host in the interpreter).
fn compile_computation(
    module: &Module,
    comp: crate::ir::CompId,
    options: wgsl::Options,
    depth: usize,
) -> Result<WebGpuProgram, String> {
    let mut plan = kernel::plan_computation_with(module, comp, &caps())?;
    let mut refused: HashMap<crate::ir::InstId, String> = HashMap::new();
    let mut nested: HashMap<crate::ir::InstId, Vec<WebGpuProgram>> = HashMap::new();
    for k in &plan.kernels {
        let why = match &k.body {
            KernelBody::Elemental(e) => match emit_kernel(&plan, k, e, options) {
                Ok(_) => continue,
                Err(why) => why,
            },
            KernelBody::Opaque { .. } => continue,
            KernelBody::Dot(_) => "dots run as reductions on webgpu".into(),
            KernelBody::Sort(_) => "sorts are not compiled for webgpu yet".into(),
            KernelBody::Scatter(spec) => match emit_scatter(module, comp, &plan, k, spec) {
                Ok(_) => continue,
                Err(why) => why,
            },
            KernelBody::While { .. } | KernelBody::Case { .. } if depth >= control::MAX_DEPTH => {
                format!("control flow nested deeper than {} levels runs on the host", control::MAX_DEPTH)
            }
            KernelBody::While { cond, body, .. } => {
                match [*cond, *body].iter().map(|&c| compile_computation(module, c, options, depth + 1)).collect() {
                    Ok(programs) => {
                        nested.insert(k.source, programs);
                        continue;
                    }
                    Err(why) => format!("its loop's computations cannot be planned: {why}"),
                }
            }
            KernelBody::Case { branches, .. } => {
                match branches.iter().map(|&c| compile_computation(module, c, options, depth + 1)).collect() {
                    Ok(programs) => {
                        nested.insert(k.source, programs);
                        continue;
                    }
                    Err(why) => format!("its branches cannot be planned: {why}"),
                }
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
            KernelBody::Scatter(spec) => emit_scatter(module, comp, &plan, k, spec).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    let nested = plan
        .kernels
        .iter()
        .map(|k| match k.body {
            KernelBody::While { .. } | KernelBody::Case { .. } => nested.remove(&k.source).unwrap_or_default(),
            _ => Vec::new(),
        })
        .collect();
    Ok(WebGpuProgram { plan, shaders, nested })
}

/// A scatter on the device ([`atomic_scatter`]): the updates' shader, after the copy of
/// the operand into the output where the two do not share their bytes and, for a
/// replacing scatter, after the claims (both share a scratch word per output element).
fn emit_scatter(
    module: &Module,
    comp: crate::ir::CompId,
    plan: &KernelPlan,
    k: &kernel::Kernel,
    spec: &kernel::ScatterSpec,
) -> Result<wgsl::WgslKernel, String> {
    let s = atomic_scatter(spec, module.comp(comp))?;
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
