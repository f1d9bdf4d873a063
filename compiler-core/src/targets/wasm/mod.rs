//! The WebAssembly target: one module per program from the shared kernel plan
//! ([`emit`]), run by the browser's engine (the explorer's worker) and natively by
//! wasmtime (feature `wasm-run`, [`runtime`]).
//!
//! Planning for WebAssembly ([`caps`]): a GEMM of its own for f32 dots ([`gemm`], in the
//! GEMM library, the epilogue a kernel after it), buffers at 16-byte offsets (a SIMD128
//! vector's), no row chains (chunk-by-chunk rows are a policy of the native CPU
//! target's thread pool), and every element type computed.
//! Each elemental kernel the emitter takes becomes one function over a range of its
//! parallel variable, which the module's export `kernel(index, begin, end)` ([`KERNEL`])
//! calls by plan index; kernels that are the same code up to their buffers (the layers
//! of a stack) share the first one's function, which reads the buffers' offsets from a
//! table in the memory, one per kernel ([`WasmKernel::table`]); the others (sorts, scatters, control
//! flow, the ops the emitter refuses) are demoted to opaque kernels, which the host runs
//! in the reference interpreter on the module's memory between calls.
//!
//! The module ([`WasmProgram::bytes`]) of [`compile`] exports its linear memory
//! (`memory`, the plan's arena then the GEMMs' scratch) but holds no data: the plan's
//! constants and the kernels' tables are [`WasmProgram::data`], which the host writes
//! into the memory once, after instantiating (wasmtime compiles a module's active data
//! segments into a start function of its own, a fifth of a small module's compile);
//! [`WasmProgram::standalone`] is the module with them as data segments, for an engine
//! without the host and for V8, which copies segments as it instantiates in less time
//! than JavaScript's writes. Without an f32 dot the module defines that memory
//! and imports nothing, so any engine instantiates it as it is. With one
//! ([`WasmProgram::gemm`]) it imports its memory (`env.memory`, of
//! [`WasmProgram::pages`]) and the GEMM library's table (`gemm.table`, whose one entry
//! is the GEMM library's dot driver, [`gemm::library`]), which the host instantiates on the same memory
//! first. A program whose kernels in WebAssembly are all f32 dots needs no module at
//! all ([`WasmProgram::runs_on_library`]): the library's own `kernel` runs each dot from
//! the program's directory ([`DIRECTORY_ENTRY`]), so the host compiles nothing for it. The host
//! writes the parameters, calls the kernels in plan order and reads the result's
//! buffers. [`compile`] needs no engine.
//!
//! Threads ([`compile_threaded`]): the module imports its memory instead (`env.memory`,
//! shared, at least the pages it needs, any maximum up to 4 GiB, so a host may make the
//! memory before it knows the program and grow it), which the host creates and
//! gives to one instance per thread; the memory holds a scratch region per thread, and
//! each instance points its exported global `scratch` at its own before its first call.
//! Every kernel's range is independent per element of its parallel variable (an element
//! writes only its own outputs' elements and reads nothing another element writes), so
//! the host may split a call's range across the instances in any way and gets the
//! one-thread bits ([`host::chunks`] says how it splits).

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
    CodeSection, ConstExpr, DataSection, EntityType, ExportKind, ExportSection, FunctionSection, GlobalSection,
    GlobalType, ImportSection, MemorySection, MemoryType, TypeSection, ValType,
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

/// One plan kernel's function, which the export [`KERNEL`] calls by the kernel's plan
/// index.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WasmKernel {
    /// The parallel variable's extent: a run calls `kernel(index, 0, extent)`, or the
    /// same on the pieces of that range that [`host::chunks`] gives.
    pub extent: u64,
    /// The granularity of its range: a call's `begin` and `end` are multiples of it, or
    /// `end` is the extent ([`host::chunks`] cuts so). 1: any range; a vector loop over
    /// the parallel variable, whose extent the lanes divide, has no scalar tail and
    /// steps of 4 (its code never runs part of a vector).
    pub step: u64,
    /// Its iterations (the product of its loops' extents; a dot's multiply-adds): what
    /// decides whether splitting its range across threads pays.
    pub work: u64,
    /// A dot: each piece of its range repacks an operand, so it is split in fewer pieces.
    pub dot: bool,
    /// How its code runs, in a few words.
    pub shape: String,
    /// The plan kernel whose function it runs: an earlier kernel that is the same code up
    /// to its buffers ([`kernel::Elemental::same_code`]). `None`: its own function.
    pub shares: Option<usize>,
    /// Where its table is in the memory (the function's third argument): the offsets of
    /// its buffers ([`emit::Placement::Table`]) for a kernel whose function serves
    /// several, an f32 dot's descriptor ([`gemm::descriptor`]); 0 for a kernel whose
    /// buffers are its function's static offsets.
    pub table: u64,
    /// An f32 dot: it runs the GEMM library's driver ([`gemm::dot_function`]) on its
    /// descriptor, and the module has no function of its own for it.
    pub library: bool,
}

/// A piece of a program's [`WasmProgram::data`]: its address in the memory, its bytes.
pub type DataPiece = (u64, Vec<u8>);

/// A module planned and translated to one WebAssembly module.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct WasmProgram {
    pub plan: KernelPlan,
    /// Per kernel: its function, or `None` for a kernel the host runs (opaque).
    pub kernels: Vec<Option<WasmKernel>>,
    /// The binary module.
    pub bytes: Vec<u8>,
    /// Pages of linear memory the module declares or imports (the arena and the scratch
    /// regions, at least one page).
    pub pages: u64,
    /// The threads the module is built for: 1, a module that defines its memory; more, one
    /// that imports a shared memory with a scratch region per thread.
    pub threads: u32,
    /// Where thread `t`'s scratch region starts: `scratch + t * scratch_stride` (the
    /// value of its instance's global `scratch`).
    pub scratch: u64,
    pub scratch_stride: u64,
    /// The module imports its memory (`env.memory`) and the GEMM library's table
    /// (`gemm.table`, [`gemm::library`]): it has an f32 dot ([`WasmKernel::library`]).
    pub gemm: bool,
    /// What the host writes into the memory after instantiating, before the first run
    /// ([`WasmProgram::write_data`]): (address, bytes) of the plan's constants and of the
    /// kernels' tables ([`WasmKernel::table`]). Nothing a kernel writes overlaps them.
    pub data: Vec<DataPiece>,
    /// Where the program's directory ([`DIRECTORY_ENTRY`]) is when its kernels in
    /// WebAssembly are all f32 dots (the GEMM library's driver runs each): the host then
    /// compiles no module,
    /// and calls the library's own [`KERNEL`] with its global [`gemm::DIRECTORY`] at this
    /// address. 0: the host runs the module ([`WasmProgram::bytes`], which such a
    /// program has too, for `compile --emit`).
    pub directory: u64,
}

impl WasmProgram {
    /// Whether the GEMM library runs the program without its module
    /// ([`WasmProgram::directory`]).
    pub fn runs_on_library(&self) -> bool {
        self.directory != 0
    }

    /// What a host gives an engine that copies data segments as it instantiates, in less
    /// time than the host's writes (V8: the explorer's worker, the V8 runner): the
    /// standalone module, whose segments carry the data; or, for a program the GEMM
    /// library runs, no module and the data for the host to write.
    pub fn with_segments(&self) -> (Option<Vec<u8>>, &[DataPiece]) {
        match self.runs_on_library() {
            true => (None, &self.data),
            false => (Some(self.standalone()), &[]),
        }
    }

    /// Writes [`WasmProgram::data`] into the memory of the program's instance.
    pub fn write_data(&self, memory: &mut dyn kernel::ArenaMemory) -> Result<(), String> {
        self.data.iter().try_for_each(|(at, bytes)| memory.write_bytes(*at as usize, bytes))
    }

    /// The module with [`WasmProgram::data`] as active data segments: what any engine
    /// instantiates and runs without this crate's host (`hloscope compile --emit wasm`),
    /// and what V8 gets (the explorer's worker, the V8 runner), which copies segments as
    /// it instantiates in less time than a host's writes.
    pub fn standalone(&self) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        if self.data.is_empty() {
            return bytes;
        }
        let mut data = DataSection::new();
        for (at, piece) in &self.data {
            data.active(0, &ConstExpr::i32_const(*at as u32 as i32), piece.iter().copied());
        }
        // The data section is a module's last, after the code.
        wasm_encoder::Section::append_to(&data, &mut bytes);
        bytes
    }

    /// Whether the module imports its memory rather than defining it: a threaded module
    /// (a shared memory of at least [`WasmProgram::pages`]) or one that imports the GEMM
    /// (at least [`WasmProgram::pages`]).
    pub fn imports_memory(&self) -> bool {
        self.threads > 1 || self.gemm
    }

    /// (kernels in WebAssembly, kernels on the host).
    pub fn counts(&self) -> (usize, usize) {
        let wasm = self.kernels.iter().filter(|s| s.is_some()).count();
        (wasm, self.kernels.len() - wasm)
    }

    /// One line per plan kernel: how it runs, or why the host runs it.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for (i, (k, w)) in self.plan.kernels.iter().zip(&self.kernels).enumerate() {
            match w {
                Some(w) => {
                    let steps = if w.step > 1 { format!(" in steps of {}", w.step) } else { String::new() };
                    s += &format!(";; kernel {i} %{}: {}, range 0..{}{steps}\n", k.name, w.shape, w.extent)
                }
                None => s += &format!(";; kernel {i} %{}: on the host: {}\n", k.name, k.kind),
            }
        }
        if self.runs_on_library() {
            s += &format!(
                ";; every kernel in WebAssembly is an f32 dot: the hosts compile no module and run the GEMM \
                 library's own kernel on the directory at {} (the module below is for other engines)\n",
                self.directory
            );
        }
        s
    }
}

/// Plans `module`'s entry computation for WebAssembly and emits one module with a
/// function per elemental kernel; a kernel the emitter refuses runs on the host (its
/// reason in the plan). The module defines its memory and runs on one thread.
pub fn compile(module: &Module) -> Result<WasmProgram, String> {
    compile_threaded(module, 1)
}

/// The pages of a 32-bit memory (4 GiB): a threaded module's declared maximum.
pub const MAX_PAGES: u64 = 1 << 16;

/// Most threads a module is built for (each has its own instance and scratch region).
pub const MAX_THREADS: u32 = 64;

/// [`compile`] for `threads` instances sharing one memory (more than 1: the module
/// imports a shared `env.memory` of [`WasmProgram::pages`] pages).
pub fn compile_threaded(module: &Module, threads: u32) -> Result<WasmProgram, String> {
    if threads > MAX_THREADS {
        return Err(format!("{threads} threads; a module is built for at most {MAX_THREADS}"));
    }
    let threads = threads.max(1);
    let mut plan = kernel::plan_computation_with(module, module.entry, &caps())?;
    let narrow_floats = helpers::needed(module);
    let approximations = helpers::Approximations::of(&plan, if narrow_floats { helpers::COUNT } else { 0 });
    let (mut emitted, mut used) = emit_all(&plan, &approximations);
    let mut refused: HashMap<crate::ir::InstId, String> = HashMap::new();
    for (k, e) in plan.kernels.iter().zip(&emitted) {
        if let Err(why) = e {
            refused.entry(k.source).or_insert_with(|| why.clone());
        }
    }
    if !refused.is_empty() {
        // Demoting renumbers kernels and moves buffers: every kernel is emitted again.
        plan.demote_to_opaque(module, &refused)?;
        (emitted, used) = emit_all(&plan, &approximations);
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
    // The kernels' tables (buffer offsets, dot descriptors), after the scratch, then the
    // program's directory.
    let mut end = scratch + threads as u64 * scratch_bytes;
    let mut bodies = Vec::new();
    let mut kernels = Vec::new();
    let mut tables = Vec::new();
    for e in emitted {
        match e? {
            Some(KernelCode { mut kernel, function, table, .. }) => {
                if let Some(bytes) = table {
                    kernel.table = end;
                    end += bytes.len() as u64;
                    tables.push((kernel.table, bytes));
                }
                kernels.push(Some(kernel));
                bodies.extend(function);
            }
            None => kernels.push(None),
        }
    }
    let gemm = kernels.iter().flatten().any(|k| k.library);
    let mut helpers: Vec<_> = helpers::bodies(narrow_floats).into_iter().zip(helpers::signatures()).collect();
    helpers.extend(used.bodies());
    let first = helpers.len() as u32;
    let at = end;
    let bytes = directory(&kernels, first, gemm);
    end += bytes.len() as u64;
    tables.push((at, bytes));
    if end > u32::MAX as u64 {
        return Err(format!("the arena, the GEMMs' scratch and the tables ({end} bytes) do not fit a 32-bit memory"));
    }
    let pages = end.div_ceil(PAGE).max(1);
    let dispatch = kernel_body(first, bodies.len() as u32, kernels.len(), at, gemm);
    let bytes = assemble(helpers, bodies, dispatch, pages, threads, scratch, gemm);
    // A program of f32 dots only runs on the library's own `kernel`, on the same directory.
    let directory = if gemm && kernels.iter().flatten().all(|k| k.library) { at } else { 0 };
    let constants = plan.constants.iter().map(|(b, lit)| (plan.arena.offset(*b), lit.to_le_bytes()));
    let data = constants.chain(tables).filter(|(_, bytes)| !bytes.is_empty()).collect();
    Ok(WasmProgram {
        plan,
        kernels,
        bytes,
        pages,
        threads,
        scratch,
        scratch_stride: scratch_bytes,
        gemm,
        data,
        directory,
    })
}

/// The type of the GEMM library's dot driver in a program's module (after the kernels'
/// and [`KERNEL`]'s), which [`KERNEL`] calls through the library's table for each f32
/// dot ([`gemm::DOT_PARAMS`]).
pub const GEMM_DOT_TYPE: u32 = 1;

/// A kernel function's parameters: the range `begin, end` of its parallel variable and
/// where its table of buffer offsets is ([`WasmKernel::table`]; ignored by a function
/// with static offsets), which gives it [`KERNEL`]'s type `(i32, i32, i32) -> ()`.
pub(crate) const KERNEL_PARAMS: u32 = 3;

/// Per plan kernel, its code (`None`: a host kernel), or why the emitters refuse it.
/// Elemental kernels that are the same code up to their buffers share the first one's
/// function. With the scalar approximations the kernels call, of `approximations`.
fn emit_all(plan: &KernelPlan, approximations: &helpers::Approximations) -> (Vec<Emitted>, helpers::Approximations) {
    let codes = shared_codes(plan);
    let mut all: Vec<Emitted> = Vec::with_capacity(plan.kernels.len());
    for (i, k) in plan.kernels.iter().enumerate() {
        let emitted = match (&k.body, codes[i]) {
            // The first one's function (emitted before it), each buffer from this
            // kernel's table; or the first one's refusal.
            (KernelBody::Elemental(e), (first, _)) if first != i => match &all[first] {
                Ok(Some(of)) => {
                    let shape = format!("{}, code of kernel {first}", of.kernel.shape);
                    let kernel = WasmKernel { shape, shares: Some(first), work: e.work(), ..of.kernel.clone() };
                    let table = Some(buffer_table(plan, k));
                    Ok(Some(KernelCode { kernel, function: None, table, called: Vec::new() }))
                }
                Ok(None) => Ok(None),
                Err(why) => Err(why.clone()),
            },
            _ => emit_one(plan, k, codes[i].1, approximations),
        };
        all.push(emitted);
    }
    // Approximations no kernel ended up calling (an op only in vector loops without a
    // tail) are dropped, and the kernels that call the others are emitted again with
    // their functions' final indices.
    let called: Vec<u32> = all.iter().flatten().flatten().flat_map(|c| c.called.iter().copied()).collect();
    let used = approximations.only(&called);
    if used.count() < approximations.count() {
        for (i, k) in plan.kernels.iter().enumerate() {
            if matches!(&all[i], Ok(Some(c)) if !c.called.is_empty()) {
                all[i] = emit_one(plan, k, codes[i].1, &used);
            }
        }
    }
    (all, used)
}

/// A kernel's code (`None`: a host kernel), or why the emitters refuse it.
type Emitted = Result<Option<KernelCode>, String>;

/// [`emit_all`] for a kernel with its own code (`shared`: an elemental kernel whose
/// function serves others too, which reads its buffers from a table).
fn emit_one(
    plan: &KernelPlan,
    k: &kernel::Kernel,
    shared: bool,
    approximations: &helpers::Approximations,
) -> Result<Option<KernelCode>, String> {
    match &k.body {
        KernelBody::Elemental(e) => {
            let emitted = match shared {
                true => emit::emit(e, &emit::Placement::Table, approximations)?,
                false => emit_kernel(plan, k, e, approximations)?,
            };
            let kernel = WasmKernel {
                extent: emitted.extent,
                step: emitted.step,
                work: e.work(),
                dot: false,
                shape: emitted.shape,
                shares: None,
                table: 0,
                library: false,
            };
            let table = shared.then(|| buffer_table(plan, k));
            Ok(Some(KernelCode { kernel, function: Some(emitted.body), table, called: emitted.called }))
        }
        KernelBody::Dot(d) => {
            let code = emit_dot(plan, k, d)?;
            let shape = match d.elem {
                crate::ir::ElementType::F32 => format!(
                    "simd128 gemm {}x{} tiles, blocks of {} rows, {}x{}x{}",
                    gemm::MR,
                    gemm::NR,
                    gemm::ROWS,
                    d.m,
                    d.n,
                    d.k
                ),
                t => format!("{t} dot, a loop per output, {}x{}x{}", d.m, d.n, d.k),
            };
            let work = [d.batch, d.m, d.n, d.k].iter().fold(1u64, |n, &x| n.saturating_mul(x as u64));
            let (function, table) = match code {
                gemm::DotCode::Descriptor(bytes) => (None, Some(bytes)),
                gemm::DotCode::Function(f) => (Some(f), None),
            };
            let library = function.is_none();
            let kernel = WasmKernel {
                extent: gemm::extent(d),
                step: 1,
                work,
                dot: true,
                shape,
                shares: None,
                table: 0,
                library,
            };
            Ok(Some(KernelCode { kernel, function, table, called: Vec::new() }))
        }
        KernelBody::Opaque { .. } => Ok(None),
        KernelBody::Sort(_) => Err("sorts are not compiled for wasm yet".into()),
        KernelBody::Scatter(_) => Err("scatters are not compiled for wasm yet".into()),
        KernelBody::While { .. } | KernelBody::Case { .. } => {
            Err("control flow runs on the host for wasm (the interpreter, whole)".into())
        }
    }
}

/// A kernel's description, its function if it has one of its own, and the bytes of its
/// table ([`WasmKernel::table`]) if it reads one.
struct KernelCode {
    kernel: WasmKernel,
    function: Option<emit::Code>,
    table: Option<Vec<u8>>,
    /// The scalar approximations its function calls ([`helpers::Approximations`]).
    called: Vec<u32>,
}

/// The byte offsets of `k`'s buffers, inputs then outputs (u32, little-endian): the
/// table a shared function reads them from.
fn buffer_table(plan: &KernelPlan, k: &kernel::Kernel) -> Vec<u8> {
    k.inputs.iter().chain(&k.outputs).flat_map(|&b| (plan.arena.offset(b) as u32).to_le_bytes()).collect()
}

/// Per plan kernel: the first kernel that is the same code up to its buffers (itself
/// when none before it is), and, for a first, whether its code serves other kernels too.
/// Only elemental kernels share; every other kernel is its own first.
fn shared_codes(plan: &KernelPlan) -> Vec<(usize, bool)> {
    let keys: Vec<Option<WasmCode>> = plan
        .kernels
        .iter()
        .map(|k| match &k.body {
            KernelBody::Elemental(e) => Some(WasmCode { e, n_inputs: k.inputs.len() }),
            _ => None,
        })
        .collect();
    let firsts = kernel::first_of_same_code(&keys, |key| key.e.code_hash());
    let mut serves_more = vec![false; firsts.len()];
    for (i, &first) in firsts.iter().enumerate() {
        serves_more[first] |= first != i;
    }
    firsts.into_iter().zip(serves_more).collect()
}

/// What an elemental kernel's WebAssembly function depends on, its buffers' places aside.
struct WasmCode<'k> {
    e: &'k kernel::Elemental,
    n_inputs: usize,
}

impl PartialEq for WasmCode<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.n_inputs == other.n_inputs && self.e.same_code(other.e)
    }
}

fn emit_kernel(
    plan: &KernelPlan,
    k: &kernel::Kernel,
    e: &kernel::Elemental,
    approximations: &helpers::Approximations,
) -> Result<emit::Emitted, String> {
    let bytes = |bs: &[kernel::BufferId]| bs.iter().map(|&b| plan.arena.offset(b)).collect::<Vec<_>>();
    let (inputs, outputs) = (bytes(&k.inputs), bytes(&k.outputs));
    emit::emit(e, &emit::Placement::Fixed { inputs: &inputs, outputs: &outputs }, approximations)
}

fn emit_dot(plan: &KernelPlan, k: &kernel::Kernel, d: &kernel::DotSpec) -> Result<gemm::DotCode, String> {
    let (lhs, rhs) = (k.inputs[0], k.inputs[1]);
    let place = gemm::DotPlace {
        lhs: plan.arena.offset(lhs),
        rhs: plan.arena.offset(rhs),
        out: plan.arena.offset(k.outputs[0]),
        lhs_dims: &plan.buffers[lhs].shape.dims,
        rhs_dims: &plan.buffers[rhs].shape.dims,
    };
    gemm::emit(d, &place)
}

/// The module: type 0, `(i32, i32, i32) -> ()`, is every kernel function's
/// ([`KERNEL_PARAMS`]) and [`KERNEL`]'s, then [`GEMM_DOT_TYPE`] where a dot runs the
/// GEMM library's driver and the helpers' signatures (each once) where there are helpers,
/// and no other: wasmtime compiles
/// a trampoline for each function type a module declares, used or not, and one for
/// each exported function (on a small program's module, eight trampolines took more
/// than half of its compile). The helpers are functions 0.., the kernels follow in plan
/// order, then [`KERNEL`]; global
/// 0 is the scratch base (mutable, exported as `scratch`, thread 0's region at first).
/// With `threads` past 1 the memory is imported, shared, of at least `pages` (its
/// maximum [`MAX_PAGES`]: a memory made ahead of the program, then grown, fits); with
/// `gemm` it is imported too (unshared on one thread, at least `pages`), and so is the
/// GEMM library's table (table 0), whose driver [`KERNEL`] calls as type
/// [`GEMM_DOT_TYPE`] for f32 dots. `dispatch` is [`KERNEL`]'s body ([`kernel_body`]). It
/// has no data section ([`WasmProgram::data`]).
fn assemble(
    helpers: Vec<(wasm_encoder::Function, helpers::Signature)>,
    bodies: Vec<emit::Code>,
    dispatch: wasm_encoder::Function,
    pages: u64,
    threads: u32,
    scratch: u64,
    gemm: bool,
) -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32; KERNEL_PARAMS as usize], []);
    if gemm {
        types.ty().function([ValType::I32; gemm::DOT_PARAMS], []); // GEMM_DOT_TYPE
    }
    // The helpers' signatures, each declared once.
    let mut signatures: Vec<&helpers::Signature> = Vec::new();
    let mut functions = FunctionSection::new();
    for (_, signature) in &helpers {
        let at = signatures.iter().position(|s| *s == signature).unwrap_or_else(|| {
            types.ty().function(signature.0.iter().copied(), signature.1.iter().copied());
            signatures.push(signature);
            signatures.len() - 1
        });
        functions.function(types.len() - signatures.len() as u32 + at as u32);
    }
    for _ in &bodies {
        functions.function(0);
    }
    functions.function(0); // KERNEL
    let mut imports = ImportSection::new();
    let mut memories = MemorySection::new();
    if threads > 1 || gemm {
        let shared = threads > 1;
        let maximum = shared.then_some(MAX_PAGES);
        let memory = MemoryType { minimum: pages, maximum, memory64: false, shared, page_size_log2: None };
        imports.import("env", "memory", EntityType::Memory(memory));
        if gemm {
            imports.import(gemm::LIBRARY_MODULE, gemm::LIBRARY_TABLE, EntityType::Table(gemm::library_table()));
        }
    } else {
        memories.memory(MemoryType {
            minimum: pages,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
    }
    let mut globals = GlobalSection::new();
    globals.global(
        GlobalType { val_type: ValType::I32, mutable: true, shared: false },
        &ConstExpr::i32_const(scratch as u32 as i32),
    );
    let mut constants = emit::VectorConstants::default();
    let bodies: Vec<wasm_encoder::Function> = bodies.into_iter().map(|b| b.finish_in(&mut constants)).collect();
    for &bits in constants.values() {
        globals
            .global(GlobalType { val_type: ValType::V128, mutable: true, shared: false }, &ConstExpr::v128_const(bits));
    }
    let mut exports = ExportSection::new();
    exports.export("memory", ExportKind::Memory, 0);
    exports.export(SCRATCH, ExportKind::Global, 0);
    let first_kernel = helpers.len() as u32;
    exports.export(KERNEL, ExportKind::Func, first_kernel + bodies.len() as u32);
    let mut code = CodeSection::new();
    for (h, _) in &helpers {
        code.function(h);
    }
    for b in &bodies {
        code.function(b);
    }
    code.function(&dispatch);
    let mut m = wasm_encoder::Module::new();
    m.section(&types);
    if !imports.is_empty() {
        m.section(&imports);
    }
    m.section(&functions);
    if !memories.is_empty() {
        m.section(&memories);
    }
    m.section(&globals).section(&exports).section(&code);
    m.finish()
}

/// The module's one exported function: `kernel(index, begin, end)` runs plan kernel
/// `index` over the range `begin..end` of its parallel variable, and `kernel(WHOLE,
/// first, last)` runs kernels `first..last` whole ([`WHOLE`]). One export for all
/// rather than one each: an engine compiles an entry trampoline per exported function
/// (wasmtime: a fifth of a transformer block's compile). A host kernel's index traps.
pub const KERNEL: &str = "kernel";

/// The exported global that holds an instance's scratch base: a program module's
/// (global 0), and the GEMM library's for its own [`KERNEL`].
pub const SCRATCH: &str = "scratch";

/// [`KERNEL`]'s index that runs plan kernels `first..last` whole, in plan order, each
/// over `0..extent` (one of zero extent not at all). A host that runs several kernels
/// in a row on one thread ([`host::Instance::run_whole`]) crosses into the module once
/// for them instead of once per kernel, which is most of a tiny program's time. The
/// host asks for the program's stretches ([`host::stretches`]); host kernels in the
/// range are skipped, and the range ends at the last kernel.
pub const WHOLE: i32 = -1;

/// How [`KERNEL`] reaches a kernel's code.
#[derive(Clone, Copy)]
enum Callee {
    /// The module's function of this index, with the kernel's table (or 0).
    Function(u32),
    /// The GEMM library's dot driver, through table 0, with the kernel's descriptor.
    Library,
}

/// Per plan kernel, how its code is called (`None`: a host kernel): the helpers'
/// functions (if the module has them) come first, then the kernels' own in plan order
/// from `first`; a kernel that shares another's function gets that one's index, an f32
/// dot the library's driver.
fn callees(kernels: &[Option<WasmKernel>], first: u32) -> Vec<Option<Callee>> {
    let mut next = first..;
    let mut callees: Vec<Option<Callee>> = Vec::with_capacity(kernels.len());
    for k in kernels {
        let callee = match k {
            Some(WasmKernel { shares: Some(of), .. }) => callees[*of],
            Some(WasmKernel { library: true, .. }) => Some(Callee::Library),
            Some(_) => next.next().map(Callee::Function),
            None => None,
        };
        callees.push(callee);
    }
    callees
}

/// Bytes per plan kernel in a program's directory: three little-endian u32 words, its
/// table's address ([`WasmKernel::table`]; a dot's descriptor), its extent and its arm
/// in [`KERNEL`]'s dispatch ([`arm`]; 0 for a host kernel).
pub const DIRECTORY_ENTRY: u64 = 12;

/// [`KERNEL`]'s dispatch arm of a kernel's code: 0 for none (a host kernel), 1 for the
/// GEMM library's driver where the module has one (`gemm`), then one per kernel function
/// of the module, in function order from `first`.
fn arm(callee: Option<Callee>, first: u32, gemm: bool) -> u32 {
    match callee {
        None => 0,
        Some(Callee::Library) => 1,
        Some(Callee::Function(f)) => 1 + gemm as u32 + (f - first),
    }
}

/// The program's directory ([`DIRECTORY_ENTRY`] per plan kernel), which [`KERNEL`]
/// reads, and the GEMM library's own `kernel` for a program of f32 dots only.
fn directory(kernels: &[Option<WasmKernel>], first: u32, gemm: bool) -> Vec<u8> {
    let entry = |(k, callee): (&Option<WasmKernel>, Option<Callee>)| match k {
        Some(k) => [k.table as u32, k.extent as u32, arm(callee, first, gemm)],
        None => [0, 0, 0],
    };
    kernels
        .iter()
        .zip(callees(kernels, first))
        .map(entry)
        .flat_map(|words| words.map(u32::to_le_bytes))
        .flatten()
        .collect()
}

/// The program module's [`KERNEL`]: [`dispatch`] on the directory at `directory`, over
/// `kernels` plan kernels, with the GEMM library's driver as arm 1 where the module runs
/// f32 dots (`gemm`, through the library's table) and then its `functions` kernel
/// functions from index `first`.
fn kernel_body(first: u32, functions: u32, kernels: usize, directory: u64, gemm: bool) -> wasm_encoder::Function {
    use wasm_encoder::Instruction as I;
    let driver = gemm
        .then(|| vec![I::GlobalGet(0), I::I32Const(0), I::CallIndirect { type_index: GEMM_DOT_TYPE, table_index: 0 }]);
    let arms = driver.into_iter().chain((first..first + functions).map(|f| vec![I::Call(f)])).collect();
    dispatch(&Dispatch { directory, directory_global: None, kernels: Some(kernels as u32), arms })
}

/// Where a [`KERNEL`] made by [`dispatch`] finds the program's directory, and how it
/// calls each kernel's code.
pub(crate) struct Dispatch {
    /// The directory's address: this, plus the value of `directory_global` where there
    /// is one (the GEMM library's own `kernel`, whose host sets it per program).
    pub directory: u64,
    pub directory_global: Option<u32>,
    /// The plan's kernel count where the code knows it (a program's module; not the
    /// library's): an index past it traps and [`WHOLE`] stops there.
    pub kernels: Option<u32>,
    /// Dispatch arms 1.. (arm 0 is a host kernel's): the instructions that call a
    /// kernel's code on `(begin, end, table)`, which are pushed before them.
    pub arms: Vec<Vec<wasm_encoder::Instruction<'static>>>,
}

/// A [`KERNEL`], the same size whatever the number of kernels (a deep stack's hundreds
/// of kernels once took a `br_table` arm each, half of its module): plan kernels
/// `i..last` (one, `index`, over `begin..end`; or `first..last` whole, from [`WHOLE`])
/// in turn, each through its directory entry ([`DIRECTORY_ENTRY`]): a `br_table` on its
/// arm to a call of its code with its table. A host kernel's index traps; [`WHOLE`]
/// skips host kernels and those of extent 0.
pub(crate) fn dispatch(d: &Dispatch) -> wasm_encoder::Function {
    use wasm_encoder::{BlockType, Instruction as I, MemArg};
    const INDEX: u32 = 0;
    const BEGIN: u32 = 1;
    const END: u32 = 2;
    let mut c = emit::Code::new(KERNEL_PARAMS);
    let (i, last, begin, end, entry, whole) = (
        c.local(ValType::I32),
        c.local(ValType::I32),
        c.local(ValType::I32),
        c.local(ValType::I32),
        c.local(ValType::I32),
        c.local(ValType::I32),
    );
    let word = |w: u64| I::I32Load(MemArg { offset: d.directory + 4 * w, align: 2, memory_index: 0 });
    c.ops([I::LocalGet(INDEX), I::I32Const(WHOLE), I::I32Eq, I::LocalTee(whole), I::If(BlockType::Empty)]);
    // Whole: i = first, last = min(last, kernels) (unsigned: a negative first ends at once).
    c.ops([I::LocalGet(BEGIN), I::LocalSet(i), I::LocalGet(END)]);
    if let Some(n) = d.kernels {
        let n = n as i32;
        c.ops([I::I32Const(n), I::LocalGet(END), I::I32Const(n), I::I32LtU, I::Select]);
    }
    c.ops([I::LocalSet(last), I::Else]);
    // One kernel: its index must be one.
    if let Some(n) = d.kernels {
        c.ops([I::LocalGet(INDEX), I::I32Const(n as i32), I::I32GeU, I::If(BlockType::Empty), I::Unreachable, I::End]);
    }
    c.ops([I::LocalGet(INDEX), I::LocalTee(i), I::I32Const(1), I::I32Add, I::LocalSet(last)]);
    c.ops([I::LocalGet(BEGIN), I::LocalSet(begin), I::LocalGet(END), I::LocalSet(end), I::End]);
    c.ops([I::Block(BlockType::Empty), I::Loop(BlockType::Empty)]);
    c.ops([I::LocalGet(i), I::LocalGet(last), I::I32GeU, I::BrIf(1)]);
    c.ops([I::LocalGet(i), I::I32Const(DIRECTORY_ENTRY as i32), I::I32Mul]);
    if let Some(g) = d.directory_global {
        c.ops([I::GlobalGet(g), I::I32Add]);
    }
    c.op(I::LocalSet(entry));
    // Whole: over 0..extent.
    c.ops([I::LocalGet(whole), I::If(BlockType::Empty), I::I32Const(0), I::LocalSet(begin)]);
    c.ops([I::LocalGet(entry), word(1), I::LocalSet(end), I::End]);
    let arms = 1 + d.arms.len() as u32;
    // Label `arms` (from the innermost block) is where each call ends.
    c.op(I::Block(BlockType::Empty));
    for _ in 0..arms {
        c.op(I::Block(BlockType::Empty));
    }
    c.ops([I::LocalGet(whole), I::LocalGet(end), I::I32Eqz, I::I32And, I::BrIf(arms)]);
    c.ops([I::LocalGet(entry), word(2)]);
    c.op(I::BrTable((0..arms).collect::<Vec<_>>().into(), 0));
    // Arm 0, a host kernel: skipped whole, else a trap.
    c.ops([I::End, I::LocalGet(whole), I::BrIf(arms - 1), I::Unreachable]);
    for (a, call) in (1..).zip(&d.arms) {
        c.op(I::End);
        c.ops([I::LocalGet(begin), I::LocalGet(end), I::LocalGet(entry), word(0)]);
        c.extend(call);
        // Inside the arms' blocks past `a`: the end of the calls is label `arms - 1 - a`.
        c.op(I::Br(arms - 1 - a));
    }
    c.op(I::End);
    c.ops([I::LocalGet(i), I::I32Const(1), I::I32Add, I::LocalSet(i), I::Br(0), I::End, I::End]);
    c.finish()
}
