//! The CUDA target: CUDA C from the shared kernel plan ([`cuda_c`]), compiled by NVRTC
//! to PTX (feature `cuda`, [`toolkit`] and [`nvrtc`]) and run through the CUDA driver
//! ([`runtime`]), all loaded at run time: the build needs no CUDA toolkit and a binary
//! without one starts and says what is missing.
//!
//! Planning for CUDA ([`caps`]): no GEMM library yet (dots are reduction kernels, as on
//! WebGPU; cuBLAS is a later step), buffers at 256-byte offsets (every element type's
//! alignment, and the start of a cache line pair), no row chains (a GPU runs a kernel's
//! rows at once), and every element type computed, f64 and 64-bit integers included.
//! Each elemental kernel the emitter takes becomes one `extern "C" __global__`
//! function; the others (sorts, scatters, control flow) are demoted to opaque kernels,
//! which the runtime runs on the host in the reference interpreter between launches.
//!
//! A program is one translation unit ([`CudaProgram::translation_unit`]): the helpers
//! of [`cuda_c::PRELUDE`] once, then every kernel, so NVRTC runs once per program.
//! [`compile`] needs no GPU and no CUDA: it makes the plan and the CUDA C (`hloscope
//! compile --target cuda --emit cuda`).

pub mod approx;
pub mod cuda_c;

#[cfg(feature = "cuda")]
pub mod nvrtc;
#[cfg(feature = "cuda")]
pub mod runtime;
#[cfg(feature = "cuda")]
pub mod toolkit;

use crate::ir::Module;
use crate::kernel::atomic_scatter::atomic_scatter;
use crate::kernel::{self, KernelBody, KernelPlan, TargetCaps};
use std::collections::HashMap;

/// The architecture PTX is compiled for unless told otherwise (Hopper: H100, H200).
pub const DEFAULT_ARCH: u32 = 90;

/// What the planner is told about CUDA.
pub fn caps() -> TargetCaps {
    TargetCaps {
        name: "cuda".into(),
        library_dot: false,
        arena_alignment: 256,
        row_chains: false,
        refused_elems: Vec::new(),
    }
}

/// A module planned and translated to CUDA C, ready for NVRTC.
#[derive(Clone, Debug)]
pub struct CudaProgram {
    pub plan: KernelPlan,
    /// Per kernel: its function, or `None` for a kernel the host runs (opaque).
    pub kernels: Vec<Option<cuda_c::CudaKernel>>,
}

impl CudaProgram {
    /// (kernels on the GPU, kernels on the host).
    pub fn counts(&self) -> (usize, usize) {
        let gpu = self.kernels.iter().filter(|s| s.is_some()).count();
        (gpu, self.kernels.len() - gpu)
    }

    /// The one source NVRTC compiles: the prelude, then every kernel's function.
    pub fn translation_unit(&self) -> String {
        let mut s = String::from(cuda_c::PRELUDE);
        for k in self.kernels.iter().flatten() {
            for f in k.copy_first.as_deref().into_iter().chain([k]) {
                s.push('\n');
                s += &f.source;
            }
        }
        s
    }

    /// The translation unit with every plan kernel named in order, for `--emit cuda`:
    /// host kernels say why they are not on the GPU. It compiles as it is.
    pub fn listing(&self) -> String {
        let mut s = String::from(cuda_c::PRELUDE);
        for (i, (k, f)) in self.plan.kernels.iter().zip(&self.kernels).enumerate() {
            match f {
                Some(f) => {
                    s += &format!("\n// ---- kernel {i} %{} ----\n", k.name);
                    if let Some(copy) = &f.copy_first {
                        s += &format!("{}\n", copy.source);
                    }
                    s += &f.source;
                }
                None => s += &format!("\n// ---- kernel {i} %{}: on the host: {} ----\n", k.name, k.kind),
            }
        }
        s
    }
}

/// Plans `module`'s entry computation for CUDA and emits a function per elemental
/// kernel; a kernel the emitter refuses runs on the host (its reason in the plan).
pub fn compile(module: &Module) -> Result<CudaProgram, String> {
    let mut plan = kernel::plan_computation_with(module, module.entry, &caps())?;
    let mut refused: HashMap<crate::ir::InstId, String> = HashMap::new();
    for (i, k) in plan.kernels.iter().enumerate() {
        let why = match &k.body {
            KernelBody::Elemental(e) => match emit_kernel(&plan, i, k, e) {
                Ok(_) => continue,
                Err(why) => why,
            },
            KernelBody::Opaque { .. } => continue,
            KernelBody::Dot(_) => "dots run as reductions on cuda".into(),
            KernelBody::Sort(_) => "sorts are not compiled for cuda yet".into(),
            KernelBody::Scatter(spec) => match emit_scatter(module, &plan, i, k, spec) {
                Ok(_) => continue,
                Err(why) => why,
            },
            KernelBody::While { .. } | KernelBody::Case { .. } => {
                "control flow runs on the host for cuda (the interpreter, whole)".into()
            }
        };
        refused.entry(k.source).or_insert(why);
    }
    if !refused.is_empty() {
        plan.demote_to_opaque(module, &refused)?;
    }
    let kernels = plan
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| match &k.body {
            KernelBody::Elemental(e) => emit_kernel(&plan, i, k, e).map(Some),
            KernelBody::Scatter(spec) => emit_scatter(module, &plan, i, k, spec).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    Ok(CudaProgram { plan, kernels })
}

/// A scatter on the device ([`atomic_scatter`]): the updates' function, after the copy
/// of the operand into the output where the two do not share their bytes.
fn emit_scatter(
    module: &Module,
    plan: &KernelPlan,
    index: usize,
    k: &kernel::Kernel,
    spec: &kernel::ScatterSpec,
) -> Result<cuda_c::CudaKernel, String> {
    let s = atomic_scatter(spec, module.comp(module.entry))?;
    let at = |b: kernel::BufferId| plan.arena.offset(b);
    let (operand, output) = (at(k.inputs[0]), at(k.outputs[0]));
    let title = format!("%{} ({})", k.name, k.kind);
    // Inputs: the index array, the updates, and the output itself (its current elements).
    let place = cuda_c::Placement { inputs: &[at(k.inputs[1]), at(k.inputs[2]), output], outputs: &[output] };
    let mut updates =
        cuda_c::emit_scatter_updates(&s, &format!("hs_k{index}"), &format!("{title}: its updates"), &place)?;
    if operand != output {
        let place = cuda_c::Placement { inputs: &[operand], outputs: &[output] };
        let copy =
            cuda_c::emit(&s.copy, &format!("hs_k{index}_copy"), &format!("{title}: its operand copied"), &place)?;
        updates.copy_first = Some(Box::new(copy));
    }
    Ok(updates)
}

fn emit_kernel(
    plan: &KernelPlan,
    index: usize,
    k: &kernel::Kernel,
    e: &kernel::Elemental,
) -> Result<cuda_c::CudaKernel, String> {
    let bytes = |bs: &[kernel::BufferId]| bs.iter().map(|&b| plan.arena.offset(b)).collect::<Vec<_>>();
    let (inputs, outputs) = (bytes(&k.inputs), bytes(&k.outputs));
    let place = cuda_c::Placement { inputs: &inputs, outputs: &outputs };
    cuda_c::emit(e, &format!("hs_k{index}"), &format!("%{} ({})", k.name, k.kind), &place)
}
