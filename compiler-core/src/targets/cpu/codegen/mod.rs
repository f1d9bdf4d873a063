//! Cranelift code for one loop or reduction kernel, emitted from its elemental
//! description on the lowering driver (`kernel::lower`): `instructions.rs` implements its
//! instructions, this file walks the kept variables and splits vector loops.
//!
//! The function is `extern "C" fn(buffers: *const *mut u8, begin: i64, end: i64)`: the
//! base pointers of the kernel's inputs, then its outputs, and the range of the
//! *parallel variable* ([`Emitted::par_extent`]) to run; the runtime splits that range
//! across threads. The parallel variable is a kept one (a reduced loop is never split),
//! and every output element is written by the one call whose range holds its index, so
//! the calls may run at once.
//!
//! A loop kernel is a nest of loops, one per variable of the iteration space, whose
//! innermost body evaluates every output at the index, then stores them all (so an
//! output written in place over an input never clobbers a load of the same position). A reduction kernel
//! loops over the kept variables; for each output element it sets accumulators from the
//! inits, loops over the reduced variables applying the combiner, then evaluates the
//! reduce-shaped outputs. When [`vector::plan`] allows, the innermost loop runs SIMD
//! vectors plus a scalar tail (see `vector.rs` for the three shapes); the vector and
//! scalar paths share this one expression emitter, which emits at the current lane
//! count (`Emit::lanes`). A kernel whose vector form Cranelift cannot lower is emitted
//! scalar instead, and the listing says why.
//!
//! Strip-mining (`Emit::strip_mined`): Cranelift's x86-64 vectors have 4 f32 lanes, the
//! CPU's may have 16, and transcendentals are compute-bound. So a vector loop or row
//! reduction over f32 whose values need exp, tanh, log, ... runs its vector variable in
//! blocks of [`BLOCK`] elements, each in stages: a stage computes the arguments of the
//! next level of transcendentals into stack buffers, native block functions
//! ([`block_math`]) apply them in place, and the last stage is the ordinary body with
//! those values read from the buffers. The blocks cover every whole vector step; the
//! scalar tail runs the ordinary body.
//!
//! Registers: pred and integers in their own width (pred as i8 0/1; in vectors a lane
//! mask of the kernel's lane width), f32/f64 as such, f16/bf16 widened to f32 and rounded
//! back to their precision after every arithmetic op, so results equal the
//! interpreter's (which rounds once per op). Values are memoized per region (before,
//! inside and after the reduced loop; each vector or tail step), so an expression shared
//! by several outputs is computed once.

use super::block_math::{self, BlockFunction};
use super::code_shape::{BlockCall, CodeShape, StripMining};
use super::half_floats;
use super::math;
use super::vector::{self, VecKind, VecPlan};
use crate::ir::{BinaryOp, CmpDir, ElementType, Scalar, UnaryOp};
use crate::kernel::elemental::{Elemental, ExprId, IdxId, Node};
use crate::kernel::index::{Dependence, IndexAnalysis};
use crate::kernel::reduction;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, Endianness, FuncRef, InstBuilder, MemFlagsData, Signature, SourceLoc, StackSlot, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{FuncId, Linkage, Module, ModuleReloc};
use rustc_hash::FxHashMap as HashMap;

mod instructions;
mod memory;
mod row_reduction;
mod strip_mining;

use crate::kernel::lower::{max_min_by_constant, Lower, Memo};
use row_reduction::fast_extrema;
use strip_mining::{blocked_ops, Block, BlockedOp, BLOCK};

/// Imported functions, declared once per module: the C library functions of
/// [`math::C_FUNCTIONS`] (the f16/bf16 helpers are declared by the kernels that call
/// them, so that AOT objects, which convert inline, never name them).
pub struct Helpers {
    libm: HashMap<&'static str, FuncId>,
}

impl Helpers {
    pub fn declare<M: Module>(m: &mut M) -> Result<Helpers, String> {
        let mut decl = |name: &str, params: &[Type], ret: Type| -> Result<FuncId, String> {
            let mut sig = m.make_signature();
            sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
            sig.returns.push(AbiParam::new(ret));
            m.declare_function(name, Linkage::Import, &sig).map_err(|e| e.to_string())
        };
        use types::{F32, F64};
        let mut libm = HashMap::default();
        for &(name, arity, wide) in math::C_FUNCTIONS {
            let t = if wide { F64 } else { F32 };
            libm.insert(name, decl(name, &vec![t; arity], t)?);
        }
        Ok(Helpers { libm })
    }
}

/// The register type of an element type.
fn reg(elem: ElementType) -> Type {
    use ElementType::*;
    match elem {
        Pred | S8 | U8 => types::I8,
        S16 | U16 => types::I16,
        S32 | U32 => types::I32,
        S64 | U64 => types::I64,
        F16 | BF16 | F32 => types::F32,
        F64 => types::F64,
    }
}

fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// Flags of a bitcast between vector types (Cranelift wants the lane order stated).
fn lane_order() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// A kernel's function as emitted: its id (defined, not yet finalized), how it runs, its
/// CLIF and its machine code listing (for the explorer's views), and how the runtime may
/// split it.
pub struct Emitted {
    #[cfg_attr(not(feature = "cpu"), allow(dead_code))]
    pub id: FuncId,
    /// The machine code and relocations (for artifacts and AOT checks).
    pub code: super::artifact::FunctionCode,
    pub shape: CodeShape,
    /// The function as Cranelift prints it (the JIT's listings put `shape.header()` above it).
    pub clif: String,
    pub asm: String,
    /// The extent of the parallel variable (`end` of a whole run); 1 when the kernel has
    /// no kept variable (it then ignores `begin`/`end`).
    #[cfg_attr(not(feature = "cpu"), allow(dead_code))]
    pub par_extent: i64,
}

/// The kernel's signature: `(buffers, begin, end)`.
pub(super) fn signature<M: Module>(m: &M) -> Signature {
    let mut sig = m.make_signature();
    sig.params.push(AbiParam::new(m.target_config().pointer_type()));
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::I64));
    sig
}

/// How a kernel is emitted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EmitOptions {
    /// The f32 lanes of the native block functions (`block_math`) that strip-mined loops
    /// call: the running CPU's ([`block_math::native_lanes`]) for the JIT, the chosen
    /// machine's for a listing. Not above the kernel's own lanes (or 0): no strip-mining.
    pub block_lanes: u32,
    /// f16/bf16 conversions as inline code instead of calls of the Rust helpers.
    pub inline_half: bool,
    /// Write the kernel's CLIF and machine-code listings (`CompileOptions::listings`).
    pub listings: bool,
}

/// The Rust f16/bf16 helpers (`helpers.rs`) by symbol, with their parameter and result
/// types.
const HALF_HELPERS: [(&str, (Type, Type)); 4] = [
    ("hs_round_f16", (types::F32, types::F32)),
    ("hs_round_bf16", (types::F32, types::F32)),
    ("hs_f16_to_f32", (types::I32, types::F32)),
    ("hs_f32_to_f16", (types::F32, types::I32)),
];

/// The signature of f16/bf16 helper `name`.
pub(super) fn helper_signature<M: Module>(m: &M, name: &str) -> Option<Signature> {
    let &(_, (param, ret)) = HALF_HELPERS.iter().find(|h| h.0 == name)?;
    let mut sig = m.make_signature();
    sig.params.push(AbiParam::new(param));
    sig.returns.push(AbiParam::new(ret));
    Some(sig)
}

/// The signature of a native block function: `(block, n)`, applied in place.
/// The signature of native block function `symbol` ([`block_math`]): `(src, dst, n)`,
/// and the divisor's address for the division.
pub(super) fn block_signature<M: Module>(m: &M, symbol: &str) -> Signature {
    let mut sig = m.make_signature();
    let ptr = m.target_config().pointer_type();
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(types::I64));
    if symbol == block_math::DIV_SYMBOL {
        sig.params.push(AbiParam::new(ptr));
    }
    sig
}

/// The extent of the variable the runtime may split across threads (1 when none).
#[cfg_attr(not(feature = "cpu"), allow(dead_code))]
pub(super) fn par_extent(e: &Elemental) -> i64 {
    parallel_var(e).map_or(1, |v| e.space[v as usize])
}

/// The variable the runtime may split across threads: a kept one, the outermost with at
/// least 16 iterations, else the longest.
pub(super) fn parallel_var(e: &Elemental) -> Option<u32> {
    let outer = e.outer_vars();
    let extent = |v: u32| e.space[v as usize];
    outer
        .iter()
        .copied()
        .find(|&v| extent(v) >= 16)
        .or_else(|| outer.iter().copied().max_by_key(|&v| (extent(v), std::cmp::Reverse(v))))
}

/// The function a kernel compiles, with its number of buffers in: an elemental kernel's
/// body, a sort's comparator or a scatter's combiner (scalar kernels over 2N values).
pub(super) fn compiled_function(k: &crate::kernel::Kernel) -> Option<(&Elemental, usize)> {
    use crate::kernel::KernelBody;
    match &k.body {
        KernelBody::Elemental(e) => Some((e, k.inputs.len())),
        KernelBody::Sort(s) => Some((&s.comparator, s.elems.len() * 2)),
        KernelBody::Scatter(s) => Some((&s.combiner, s.elems.len() * 2)),
        _ => None,
    }
}

/// Everything a kernel's machine code depends on: what kind of function it is, its
/// elemental description (the names of the HLO instructions it came from aside: they
/// only label listings), its input count, which outputs are the program's results, and
/// the options. Kernels with equal keys compile to the same code whatever buffers they
/// touch, since a kernel reads its buffers' addresses from the table it is called with.
#[derive(Debug)]
pub(super) struct CodeKey<'k> {
    kind: &'static str,
    e: &'k Elemental,
    n_inputs: usize,
    is_result: Vec<bool>,
    options: EmitOptions,
}

impl PartialEq for CodeKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, self.n_inputs, &self.is_result, self.options)
            == (other.kind, other.n_inputs, &other.is_result, other.options)
            && self.e.same_code(other.e)
    }
}

impl CodeKey<'_> {
    /// A cheap hash of the key's shape (equal keys have equal buckets): kernels are
    /// grouped by it before the full comparison ([`crate::kernel::first_of_same_code`]).
    pub(super) fn bucket(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        (self.kind, self.n_inputs, &self.is_result, self.e.code_hash()).hash(&mut h);
        h.finish()
    }
}

/// The [`CodeKey`] of a kernel that compiles to a function ([`compiled_function`]).
pub(super) fn code_key<'k>(
    k: &'k crate::kernel::Kernel,
    results: &rustc_hash::FxHashSet<crate::kernel::BufferId>,
    options: EmitOptions,
) -> Option<CodeKey<'k>> {
    let (e, n_inputs) = compiled_function(k)?;
    let kind = match &k.body {
        crate::kernel::KernelBody::Elemental(_) => "elemental",
        crate::kernel::KernelBody::Sort(_) => "sort comparator",
        _ => "scatter combiner",
    };
    Some(CodeKey { kind, e, n_inputs, is_result: result_outputs(k, results), options })
}

/// Which of an elemental kernel's outputs are the program's results.
fn result_outputs(k: &crate::kernel::Kernel, results: &rustc_hash::FxHashSet<crate::kernel::BufferId>) -> Vec<bool> {
    match &k.body {
        crate::kernel::KernelBody::Elemental(_) => k.outputs.iter().map(|b| results.contains(b)).collect(),
        _ => Vec::new(),
    }
}

/// Emits kernel `index` of a plan as function `kernel{index}`, if it compiles to a
/// function at all ([`compiled_function`]); `results` holds the plan's result buffers
/// (never sharing bytes with another buffer, so block functions may write them
/// directly). `Some(Err)`: Cranelift cannot take it, and its source must run otherwise.
pub(super) fn emit_kernel<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    k: &crate::kernel::Kernel,
    index: usize,
    results: &rustc_hash::FxHashSet<crate::kernel::BufferId>,
    options: EmitOptions,
) -> Option<Result<Emitted, String>> {
    let (e, n_inputs) = compiled_function(k)?;
    let prepared = prepare_kernel(m, helpers, k, index, results, options)?;
    Some(prepared.and_then(|mut p| {
        let compiled = p.compile(m.isa());
        p.finish(m, helpers, e, n_inputs, options, compiled)
    }))
}

/// Emits the kernel as function `name`: vectorized when [`vector::plan`] allows and
/// Cranelift lowers the result, scalar otherwise; [`Emitted::shape`] says which, and why
/// not. (The AOT object path's; the JIT prepares and compiles kernels in two steps.)
#[cfg(feature = "cpu")]
pub fn emit<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    e: &Elemental,
    name: &str,
    n_inputs: usize,
    options: EmitOptions,
    results: &[bool],
) -> Result<Emitted, String> {
    let mut p = prepare(m, helpers, e, name, n_inputs, options, results)?;
    let compiled = p.compile(m.isa());
    p.finish(m, helpers, e, n_inputs, options, compiled)
}

/// A kernel's function built but not compiled yet. Cranelift's compile, most of the
/// time spent, needs only the ISA: a caller may compile several at once on threads of
/// its own ([`Pending::compile`]), then define them in its module ([`Pending::finish`]).
pub struct Pending {
    id: FuncId,
    ctx: cranelift_codegen::Context,
    shape: CodeShape,
    clif: String,
    par_extent: i64,
}

/// Kernel `index` of a plan (`results`: its result buffers) as a [`Pending`] function `kernel{index}`, if it compiles to
/// a function at all ([`compiled_function`]); `Some(Err)`: its source must run otherwise.
pub(super) fn prepare_kernel<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    k: &crate::kernel::Kernel,
    index: usize,
    results: &rustc_hash::FxHashSet<crate::kernel::BufferId>,
    options: EmitOptions,
) -> Option<Result<Pending, String>> {
    let (e, n_inputs) = compiled_function(k)?;
    Some(prepare(m, helpers, e, &format!("kernel{index}"), n_inputs, options, &result_outputs(k, results)))
}

/// Declares function `name` and builds its body: vectorized when [`vector::plan`]
/// allows and the vector body builds, scalar otherwise.
fn prepare<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    e: &Elemental,
    name: &str,
    n_inputs: usize,
    options: EmitOptions,
    results: &[bool],
) -> Result<Pending, String> {
    let id = m.declare_function(name, Linkage::Local, &signature(m)).map_err(|e| e.to_string())?;
    let indices = IndexAnalysis::new(e);
    let reason = match vector::plan(e) {
        Ok(vp) => {
            let blocks = blocked_ops(e, &indices, &vp, results, options.block_lanes);
            let shape = vector_shape(e, vp, &blocks);
            match build(m, helpers, e, &indices, id, n_inputs, shape, blocks, options) {
                Ok(p) => return Ok(p),
                Err(why) => format!("vector code failed: {why}"),
            }
        }
        Err(why) => why,
    };
    build_scalar(m, helpers, e, &indices, id, n_inputs, options, reason)
}

#[allow(clippy::too_many_arguments)]
fn build_scalar<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    e: &Elemental,
    indices: &IndexAnalysis,
    id: FuncId,
    n_inputs: usize,
    options: EmitOptions,
    reason: String,
) -> Result<Pending, String> {
    let shape = CodeShape::Scalar { reason };
    build(m, helpers, e, indices, id, n_inputs, shape, Vec::new(), options)
}

impl Pending {
    /// The function's size in Cranelift instructions (its compile time grows with it).
    #[cfg(feature = "cpu")]
    pub fn size(&self) -> usize {
        self.ctx.func.dfg.num_insts()
    }

    /// Compiles the function to machine code (the part that may run on any thread).
    pub fn compile(&mut self, isa: &dyn cranelift_codegen::isa::TargetIsa) -> Result<(), String> {
        let mut ctrl = cranelift_codegen::control::ControlPlane::default();
        self.ctx.compile(isa, &mut ctrl).map(|_| ()).map_err(|e| format!("cranelift: {:?}", e.inner))
    }

    /// Defines the compiled function in `m`: this code when `compiled` succeeded, else,
    /// for vector code Cranelift could not lower, the kernel's scalar form (built and
    /// compiled here).
    pub fn finish<M: Module>(
        mut self,
        m: &mut M,
        helpers: &Helpers,
        e: &Elemental,
        n_inputs: usize,
        options: EmitOptions,
        compiled: Result<(), String>,
    ) -> Result<Emitted, String> {
        if let Err(why) = compiled {
            if !matches!(self.shape, CodeShape::Vector { .. }) {
                return Err(why);
            }
            let indices = IndexAnalysis::new(e);
            let reason = format!("vector code failed: {why}");
            self = build_scalar(m, helpers, e, &indices, self.id, n_inputs, options, reason)?;
            self.compile(m.isa())?;
        }
        let code = self.ctx.compiled_code().ok_or("a kernel defined before it was compiled")?;
        let relocs: Vec<ModuleReloc> =
            code.buffer.relocs().iter().map(|r| ModuleReloc::from_mach_reloc(r, &self.ctx.func, self.id)).collect();
        m.define_function_bytes(self.id, code.buffer.alignment as u64, code.code_buffer(), &relocs)
            .map_err(|e| format!("cranelift: {e:?}"))?;
        let asm = code.vcode.clone().unwrap_or_default();
        let code = super::artifact::capture(m, &self.ctx, self.id)?;
        Ok(Emitted { id: self.id, code, shape: self.shape, clif: self.clif, asm, par_extent: self.par_extent })
    }
}

/// How a kernel runs with vector plan `vp`, strip-mining `blocks`.
fn vector_shape(e: &Elemental, vp: VecPlan, blocks: &[BlockedOp]) -> CodeShape {
    let fast_extrema = matches!(&vp.kind, VecKind::Row(ops) if fast_extrema(e, ops, !blocks.is_empty()));
    let calls = blocks.iter().map(|b| BlockCall {
        op: b.function.name.to_string(),
        symbol: b.function.symbol.to_string(),
        stage: b.level,
        from_input: b.direct.map(|(input, _)| input),
        into_output: b.out,
    });
    let strip_mined = (!blocks.is_empty()).then(|| StripMining { block: BLOCK, calls: calls.collect() });
    CodeShape::Vector { plan: vp, fast_extrema, strip_mined }
}

/// Builds function `id`'s body in the given shape (not compiled yet).
#[allow(clippy::too_many_arguments)]
fn build<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    e: &Elemental,
    indices: &IndexAnalysis,
    id: FuncId,
    n_inputs: usize,
    shape: CodeShape,
    blocked: Vec<BlockedOp>,
    options: EmitOptions,
) -> Result<Pending, String> {
    let inline_half = options.inline_half;
    let par = parallel_var(e);
    let vp = match &shape {
        CodeShape::Vector { plan, .. } => Some(plan.clone()),
        CodeShape::Scalar { .. } => None,
    };
    let ptr = m.target_config().pointer_type();
    let mut ctx = m.make_context();
    ctx.set_disasm(options.listings);
    ctx.func.signature = signature(m);
    // Source locations (the HLO instructions of `Elemental::origins`) are stored relative
    // to the first one set, and one just below it would read as "none": start at 0.
    ctx.func.params.ensure_base_srcloc(SourceLoc::new(0));
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let (table, begin, end) = (b.block_params(entry)[0], b.block_params(entry)[1], b.block_params(entry)[2]);
        let n_bufs = n_inputs + e.outputs.len();
        let bases: Vec<Value> = (0..n_bufs).map(|k| b.ins().load(ptr, flags(), table, (k * 8) as i32)).collect();
        let mut refs = HashMap::default();
        if !inline_half && e.nodes.iter().any(|x| matches!(x.elem, ElementType::F16 | ElementType::BF16)) {
            for &(name, _) in &HALF_HELPERS {
                let sig = helper_signature(m, name).ok_or("a helper without a signature")?;
                let f = m.declare_function(name, Linkage::Import, &sig).map_err(|e| e.to_string())?;
                refs.insert(name, m.declare_func_in_func(f, b.func));
            }
        }
        // The C math functions this kernel's float ops call.
        for node in &e.nodes {
            let ty = reg(node.elem);
            let names = match node.node {
                Node::Unary(op, _) if node.elem.is_float() => math::unary_calls(op, ty),
                Node::Binary(op, _, _) if node.elem.is_float() => math::binary_calls(op, ty),
                _ => &[],
            };
            for &name in names {
                if !refs.contains_key(name) {
                    refs.insert(name, m.declare_func_in_func(helpers.libm[name], b.func));
                }
            }
        }
        // The native block functions the strip-mined loop calls: `(block, n)`, in place.
        let mut blocks = Vec::with_capacity(blocked.len());
        for op in blocked {
            let f = m
                .declare_function(op.function.symbol, Linkage::Import, &block_signature(m, op.function.symbol))
                .map_err(|e| e.to_string())?;
            let func = m.declare_func_in_func(f, b.func);
            let slot =
                b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, (BLOCK * 4) as u32, 6));
            let addr = b.ins().stack_addr(ptr, slot, 0);
            blocks.push(Block { op, func, addr });
        }
        let fma = math::has_fma(m.isa());
        let mut em = Emit {
            inline_half,
            blocks,
            stage: None,
            block_results: Vec::new(),
            step_base: None,
            step_invariants: HashMap::default(),
            b,
            e,
            bases,
            n_inputs,
            vars: vec![None; e.space.len()],
            memo: Memo::default(),
            callers: Vec::new(),
            accs: Vec::new(),
            vaccs: Vec::new(),
            trackers: Vec::new(),
            refs,
            fma,
            err: None,
            lanes: 1,
            step: 0,
            vp,
            indices,
            par: par.map(|v| (v, begin, end)),
        };
        em.body();
        if let Some(err) = em.err.take() {
            return Err(err);
        }
        em.b.ins().return_(&[]);
        em.b.seal_all_blocks();
        em.b.finalize(m.isa().frontend_config());
    }
    let clif = if options.listings { ctx.func.display().to_string() } else { String::new() };
    let par_extent = par.map_or(1, |v| e.space[v as usize]);
    Ok(Pending { id, ctx, shape, clif, par_extent })
}

struct Emit<'a, 'f> {
    b: FunctionBuilder<'f>,
    /// f16/bf16 conversions as inline code (`half_floats.rs`) rather than helper calls.
    inline_half: bool,
    /// Strip-mining: the transcendentals native block functions evaluate (empty: the
    /// loops are not strip-mined).
    blocks: Vec<Block>,
    /// Inside a strip-mined block: the stage being emitted, and the position in the
    /// block (i64) of the current unrolled step's first vector.
    stage: Option<(u32, Value)>,
    /// Inside a strip-mined block: where each blocked op's results are (its buffer, or
    /// its output's block).
    block_results: Vec<Value>,
    /// In an unrolled vector step: the vector variable, its value at the step's first
    /// vector, and the current vector's distance from it in elements. Contiguous loads and
    /// stores address the first vector's index plus an immediate offset, so the index
    /// arithmetic is shared by the step's vectors.
    step_base: Option<(u32, Value, i64)>,
    /// In a vector loop step: the splatted loads that do not depend on the vector
    /// variable, computed by its first vector and reused by the others.
    step_invariants: HashMap<ExprId, Value>,
    e: &'a Elemental,
    bases: Vec<Value>,
    n_inputs: usize,
    /// The i64 value of each loop variable in scope (in a vector step: lane 0's).
    vars: Vec<Option<Value>>,
    /// The driver's values and indices of the current region.
    memo: Memo<Value, Value>,
    /// The source locations to restore when the nodes being lowered are done
    /// (`Lower::enter_node`).
    callers: Vec<SourceLoc>,
    /// Accumulators, per reduction and value, at the current lanes.
    accs: Vec<Vec<Variable>>,
    /// Row reductions: vector accumulators per reduction and unrolled step.
    vaccs: Vec<Vec<Variable>>,
    /// Fast max/min row reductions: per reduction and unrolled step, the sum of the
    /// elements, NaN when one was ([`Emit::row_reduction`]).
    trackers: Vec<Vec<Variable>>,
    refs: HashMap<&'static str, FuncRef>,
    /// Whether the target has a native fma (for [`math`]'s emitters).
    fma: bool,
    /// The first error met (an op/type pair the emitter does not handle).
    err: Option<String>,
    /// Lanes of the values being emitted: 1, or the plan's lanes in a vector step.
    lanes: u32,
    /// Which unrolled vector of the current step is being emitted.
    step: u32,
    vp: Option<VecPlan>,
    indices: &'a IndexAnalysis<'a>,
    /// The parallel variable and the function's `begin`/`end` parameters.
    par: Option<(u32, Value, Value)>,
}

impl<'a, 'f> Emit<'a, 'f> {
    /// The kernel: the kept variables' loops (the innermost split into vectors and a
    /// tail when the vector plan says so) around the driver's element, or a row
    /// reduction.
    fn body(&mut self) {
        let e = self.e;
        let outer = e.outer_vars();
        let inner: Vec<u32> = (0..e.space.len() as u32).filter(|&v| e.reduced[v as usize]).collect();
        match self.vp.as_ref().map(|p| p.kind.clone()) {
            None => self.nest(&outer, &mut |s| s.element()),
            Some(VecKind::Loop | VecKind::Column) => {
                // The vector variable is the last one, and kept.
                let (&v, rest) = outer.split_last().expect("a vector plan has a kept innermost variable");
                self.nest(rest, &mut |s| s.split(v, &mut |s| s.element()))
            }
            Some(VecKind::Row(ops)) => self.nest(&outer, &mut |s| s.row_reduction(&inner, &ops)),
        }
    }

    /// The register type of `elem` at the current lanes.
    fn ty(&self, elem: ElementType) -> Type {
        if self.lanes == 1 {
            return reg(elem);
        }
        let width = self.vp.as_ref().map_or(1, |p| p.width);
        let lane = if elem.is_pred() { Type::int((width * 8) as u16).expect("a lane width") } else { reg(elem) };
        lane.by(self.lanes).expect("a 128-bit vector")
    }

    /// The range of variable `v`: the function's `begin..end` for the parallel variable.
    fn bounds(&mut self, v: u32) -> (Value, Value) {
        match self.par {
            Some((p, begin, end)) if p == v => (begin, end),
            _ => {
                let lo = self.b.ins().iconst(types::I64, 0);
                let hi = self.b.ins().iconst(types::I64, self.e.space[v as usize]);
                (lo, hi)
            }
        }
    }

    /// Emits `for (i = lo; i + step <= hi; i += step) body(i)`; returns the first `i`
    /// not run.
    fn counted_loop(&mut self, lo: Value, hi: Value, step: i64, body: &mut dyn FnMut(&mut Self, Value)) -> Value {
        let header = self.b.create_block();
        let block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, types::I64);
        self.b.append_block_param(exit, types::I64);
        self.b.ins().jump(header, &[lo.into()]);
        self.b.switch_to_block(header);
        let i = self.b.block_params(header)[0];
        let next = self.b.ins().iadd_imm_s(i, step);
        let go = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, next, hi);
        self.b.ins().brif(go, block, &[], exit, &[i.into()]);
        self.b.switch_to_block(block);
        body(self, i);
        self.b.ins().jump(header, &[next.into()]);
        self.b.switch_to_block(exit);
        self.b.block_params(exit)[0]
    }

    /// The vector variable `v`'s loop: steps of `unroll` vectors, then a scalar tail;
    /// `body` emits at `self.lanes`.
    fn split(&mut self, v: u32, body: &mut dyn FnMut(&mut Self)) {
        let vp = self.vp.clone().expect("a vector plan");
        let (lo, hi) = self.bounds(v);
        // Strip-mined blocks cover every whole vector step: only the scalar tail is left
        // (no vector loop is emitted that would never run, with its inline exp, tanh, ...).
        let rest = if self.blocks.is_empty() {
            self.counted_loop(lo, hi, (vp.lanes * vp.unroll) as i64, &mut |s, i| {
                for j in 0..vp.unroll {
                    s.enter_vector(v, i, j);
                    body(s);
                }
            })
        } else {
            self.strip_mined(v, lo, hi, body)
        };
        self.step_base = None;
        self.lanes = 1;
        self.step = 0;
        self.counted_loop(rest, hi, 1, &mut |s, i| {
            s.vars[v as usize] = Some(i);
            body(s);
        });
    }

    /// Enters vector `j` of the unrolled step whose first vector is at `first` of the
    /// vector variable `v`.
    fn enter_vector(&mut self, v: u32, first: Value, j: u32) {
        let lanes = self.vp.as_ref().expect("a vector plan").lanes;
        self.lanes = lanes;
        self.step = j;
        let at = if j == 0 { first } else { self.b.ins().iadd_imm_s(first, (j * lanes) as i64) };
        self.vars[v as usize] = Some(at);
        self.step_base = Some((v, first, (j * lanes) as i64));
        if j == 0 {
            self.step_invariants.clear();
        }
    }
}
