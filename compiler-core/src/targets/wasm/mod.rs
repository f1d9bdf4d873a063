//! The WebAssembly target: one module per program from the shared kernel plan
//! ([`emit`]), run by the browser's engine (the explorer's worker) and natively by
//! wasmtime (feature `wasm-run`, [`runtime`]).
//!
//! Planning for WebAssembly ([`caps`]): a GEMM of its own for f32 dots ([`gemm`], in the
//! module, the epilogue a kernel after it), buffers at 16-byte offsets (a SIMD128 vector's), no row chains (chunk-by-chunk rows are
//! a policy of the native CPU target's thread pool), and every element type computed.
//! Each elemental kernel the emitter takes becomes one exported function `k{index}(begin,
//! end)` over a range of its parallel variable; the others (sorts, scatters, control
//! flow, the ops the emitter refuses) are demoted to opaque kernels, which the host runs
//! in the reference interpreter on the module's memory between calls.
//!
//! The module ([`WasmProgram::bytes`]) is self-contained: it defines and exports its
//! linear memory (`memory`, as large as the plan's arena), holds the plan's constants as
//! data segments at their arena offsets, and imports nothing, so any engine instantiates
//! it as it is; the host writes the parameters, calls the kernels in plan order and reads
//! the result's buffers. [`compile`] needs no engine.

pub mod approx;
#[cfg(all(feature = "wasm-run", not(target_arch = "wasm32")))]
pub mod artifact;
pub mod emit;
pub mod gemm;
pub mod helpers;
pub mod host;

#[cfg(all(feature = "wasm-run", not(target_arch = "wasm32")))]
pub mod runtime;

use crate::ir::Module;
use crate::kernel::{self, KernelBody, KernelPlan, TargetCaps};
use std::collections::HashMap;
use wasm_encoder::{
    CodeSection, ConstExpr, DataSection, ExportKind, ExportSection, FunctionSection, MemorySection, MemoryType,
    TypeSection, ValType,
};

/// WebAssembly's page size: the memory grows by whole pages.
pub const PAGE: u64 = 65536;

/// What the planner is told about WebAssembly.
pub fn caps() -> TargetCaps {
    TargetCaps {
        name: "wasm".into(),
        library_dot: true,
        arena_alignment: 16,
        row_chains: false,
        refused_elems: Vec::new(),
    }
}

/// One plan kernel's exported function.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WasmKernel {
    /// Its export's name (`k{index}`).
    pub export: String,
    /// The parallel variable's extent: a run calls `export(0, extent)`.
    pub extent: u64,
    /// How its code runs, in a few words.
    pub shape: String,
}

/// A module planned and translated to one WebAssembly module.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct WasmProgram {
    pub plan: KernelPlan,
    /// Per kernel: its function, or `None` for a kernel the host runs (opaque).
    pub kernels: Vec<Option<WasmKernel>>,
    /// The binary module.
    pub bytes: Vec<u8>,
    /// Pages of linear memory the module declares (the arena, at least one page).
    pub pages: u64,
}

impl WasmProgram {
    /// (kernels in WebAssembly, kernels on the host).
    pub fn counts(&self) -> (usize, usize) {
        let wasm = self.kernels.iter().filter(|s| s.is_some()).count();
        (wasm, self.kernels.len() - wasm)
    }

    /// One line per plan kernel: its export and how it runs, or why the host runs it.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for (i, (k, w)) in self.plan.kernels.iter().zip(&self.kernels).enumerate() {
            match w {
                Some(w) => {
                    s += &format!(";; kernel {i} %{}: {} ({}, range 0..{})\n", k.name, w.export, w.shape, w.extent)
                }
                None => s += &format!(";; kernel {i} %{}: on the host: {}\n", k.name, k.kind),
            }
        }
        s
    }
}

/// Plans `module`'s entry computation for WebAssembly and emits one module with a
/// function per elemental kernel; a kernel the emitter refuses runs on the host (its
/// reason in the plan).
pub fn compile(module: &Module) -> Result<WasmProgram, String> {
    let mut plan = kernel::plan_computation_with(module, module.entry, &caps())?;
    let mut refused: HashMap<crate::ir::InstId, String> = HashMap::new();
    for k in &plan.kernels {
        let why = match &k.body {
            KernelBody::Elemental(e) => match emit_kernel(&plan, k, e) {
                Ok(_) => continue,
                Err(why) => why,
            },
            KernelBody::Opaque { .. } => continue,
            KernelBody::Dot(d) => match emit_dot(&plan, k, d, 0) {
                Ok(_) => continue,
                Err(why) => why,
            },
            KernelBody::Sort(_) => "sorts are not compiled for wasm yet".into(),
            KernelBody::Scatter(_) => "scatters are not compiled for wasm yet".into(),
            KernelBody::While { .. } | KernelBody::Case { .. } => {
                "control flow runs on the host for wasm (the interpreter, whole)".into()
            }
        };
        refused.entry(k.source).or_insert(why);
    }
    if !refused.is_empty() {
        plan.demote_to_opaque(module, &refused)?;
    }
    if plan.arena.arena_bytes > u32::MAX as u64 {
        return Err(format!("the arena ({} bytes) does not fit a 32-bit WebAssembly memory", plan.arena.arena_bytes));
    }
    // The GEMMs' scratch memory, after the arena.
    let scratch = plan.arena.arena_bytes.next_multiple_of(16);
    let scratch_bytes = plan
        .kernels
        .iter()
        .map(|k| match &k.body {
            KernelBody::Dot(d) => gemm::scratch_bytes(d),
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    if scratch + scratch_bytes > u32::MAX as u64 {
        return Err(format!(
            "the arena and the GEMM's scratch ({} bytes) do not fit a 32-bit memory",
            scratch + scratch_bytes
        ));
    }
    let mut bodies = Vec::new();
    let mut kernels = Vec::new();
    for (i, k) in plan.kernels.iter().enumerate() {
        match &k.body {
            KernelBody::Elemental(e) => {
                let emitted = emit_kernel(&plan, k, e)?;
                kernels.push(Some(WasmKernel {
                    export: format!("k{i}"),
                    extent: emitted.extent,
                    shape: emitted.shape,
                }));
                bodies.push(emitted.body);
            }
            KernelBody::Dot(d) => {
                bodies.push(emit_dot(&plan, k, d, scratch)?);
                let shape = format!("simd128 gemm {}x{} tiles, {}x{}x{}", gemm::MR, gemm::NR, d.m, d.n, d.k);
                kernels.push(Some(WasmKernel { export: format!("k{i}"), extent: d.batch as u64, shape }));
            }
            _ => kernels.push(None),
        }
    }
    let pages = (scratch + scratch_bytes).div_ceil(PAGE).max(1);
    let bytes = assemble(&plan, &kernels, bodies, pages);
    Ok(WasmProgram { plan, kernels, bytes, pages })
}

fn emit_kernel(plan: &KernelPlan, k: &kernel::Kernel, e: &kernel::Elemental) -> Result<emit::Emitted, String> {
    let bytes = |bs: &[kernel::BufferId]| bs.iter().map(|&b| plan.arena.offset(b)).collect::<Vec<_>>();
    let (inputs, outputs) = (bytes(&k.inputs), bytes(&k.outputs));
    emit::emit(e, &emit::Placement { inputs: &inputs, outputs: &outputs })
}

fn emit_dot(
    plan: &KernelPlan,
    k: &kernel::Kernel,
    d: &kernel::DotSpec,
    scratch: u64,
) -> Result<wasm_encoder::Function, String> {
    let (lhs, rhs) = (k.inputs[0], k.inputs[1]);
    let place = gemm::DotPlace {
        lhs: plan.arena.offset(lhs),
        rhs: plan.arena.offset(rhs),
        out: plan.arena.offset(k.outputs[0]),
        lhs_dims: &plan.buffers[lhs].shape.dims,
        rhs_dims: &plan.buffers[rhs].shape.dims,
        scratch,
    };
    gemm::emit(d, &place)
}

/// The module: type 0 is every kernel's `(i32, i32) -> ()`, then the helpers' types;
/// the helpers are functions 0.., the kernels follow in plan order.
fn assemble(
    plan: &KernelPlan,
    kernels: &[Option<WasmKernel>],
    bodies: Vec<wasm_encoder::Function>,
    pages: u64,
) -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32, ValType::I32], []);
    for (params, results) in helpers::signatures() {
        types.ty().function(params, results);
    }
    let mut functions = FunctionSection::new();
    for h in 0..helpers::COUNT {
        functions.function(h + 1);
    }
    for _ in &bodies {
        functions.function(0);
    }
    let mut memories = MemorySection::new();
    memories.memory(MemoryType { minimum: pages, maximum: None, memory64: false, shared: false, page_size_log2: None });
    let mut exports = ExportSection::new();
    exports.export("memory", ExportKind::Memory, 0);
    for (f, k) in (helpers::COUNT..).zip(kernels.iter().flatten()) {
        exports.export(&k.export, ExportKind::Func, f);
    }
    let mut code = CodeSection::new();
    for h in helpers::bodies() {
        code.function(&h);
    }
    for b in &bodies {
        code.function(b);
    }
    let mut data = DataSection::new();
    for (b, lit) in &plan.constants {
        let bytes = lit.to_le_bytes();
        if !bytes.is_empty() {
            data.active(0, &ConstExpr::i32_const(plan.arena.offset(*b) as u32 as i32), bytes);
        }
    }
    let mut m = wasm_encoder::Module::new();
    m.section(&types).section(&functions).section(&memories).section(&exports).section(&code).section(&data);
    m.finish()
}
