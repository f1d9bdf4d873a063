//! Cranelift code for one loop or reduction kernel, emitted from its elemental
//! description.
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
use crate::kernel::elemental::{Elemental, ExprId, Idx, IdxId, Node};
use crate::kernel::index::{store_strides, Dependence, IndexAnalysis};
use crate::kernel::reduction;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, Endianness, FuncRef, InstBuilder, MemFlagsData, Signature, SourceLoc, StackSlot, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::HashMap;

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
        let mut libm = HashMap::new();
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
#[derive(Copy, Clone, Debug)]
pub struct EmitOptions {
    /// The f32 lanes of the native block functions (`block_math`) that strip-mined loops
    /// call: the running CPU's ([`block_math::native_lanes`]) for the JIT, the chosen
    /// machine's for a listing. Not above the kernel's own lanes (or 0): no strip-mining.
    pub block_lanes: u32,
    /// f16/bf16 conversions as inline code instead of calls of the Rust helpers.
    pub inline_half: bool,
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

/// Elements per block of a strip-mined loop: a multiple of every vector step (16 f32
/// lanes), small enough that the block buffers stay in the L1 cache, large enough that
/// one call per block costs little next to the block's work.
const BLOCK: i64 = 512;

/// At most this many blocked ops per kernel (each takes a stack buffer of [`BLOCK`]
/// floats, 2 KiB): the rest are computed inline, so a huge fusion cannot exhaust a
/// thread's stack.
const MAX_BLOCKED_OPS: usize = 16;

/// The shortest vector loop worth strip-mining: below, a call per block costs about as
/// much as the wider vectors save.
const MIN_STRIP: i64 = 128;

/// A transcendental of a strip-mined loop, evaluated by a native block function
/// ([`block_math`]) on a buffer of its arguments.
#[derive(Clone, Debug)]
pub struct BlockedOp {
    expr: ExprId,
    arg: ExprId,
    function: BlockFunction,
    /// The stage whose loop first reads its results: one more than its argument's (the
    /// arguments of level-`s` ops are computed in stage `s - 1`).
    level: u32,
    /// When its argument is a contiguous f32 load (input, index): the native function
    /// reads the block of that input itself, so no stage copies it into the buffer.
    direct: Option<(u32, IdxId)>,
    /// A division by a value the vector loop does not change (`arg / divisor`): the
    /// divisor's f32 load (input, index), whose address the native function reads.
    divisor: Option<(u32, IdxId)>,
    /// The output whose values this op's are, when that output is a result (never
    /// sharing bytes with an input): the native function writes the block there
    /// instead of into its buffer, and the last stage does not store it again.
    out: Option<usize>,
}

/// The ops to strip-mine in a vector loop or row reduction (none when it does not pay):
/// f32 transcendentals with a native block function, where the native code has more
/// lanes than Cranelift's vectors and the vector loop is at least [`MIN_STRIP`] long. Column
/// reductions keep their one-vector steps.
fn blocked_ops(
    e: &Elemental,
    indices: &IndexAnalysis,
    vp: &VecPlan,
    results: &[bool],
    block_lanes: u32,
) -> Vec<BlockedOp> {
    if block_lanes <= vp.lanes || vp.width != 4 || e.space[vp.var as usize] < MIN_STRIP
        // `strip_mined` rounds down to whole steps with a mask.
        || !(vp.lanes * vp.unroll).is_power_of_two()
    {
        return Vec::new();
    }
    let roots: Vec<ExprId> = match &vp.kind {
        VecKind::Loop => e.outputs.iter().map(|o| o.expr).collect(),
        VecKind::Row(_) => {
            let inner = e.outputs.iter().filter(|o| o.inner).map(|o| o.expr);
            e.reductions.iter().flat_map(|r| r.values.iter().copied()).chain(inner).collect()
        }
        VecKind::Column => return Vec::new(),
    };
    // Nodes are created after their operands, so one pass in id order sees every
    // operand's level first, and one pass backwards marks what the roots reach.
    let n = e.nodes.len();
    let mut reached = vec![false; n];
    for r in roots {
        reached[r.0 as usize] = true;
    }
    for i in (0..n).rev() {
        if reached[i] {
            for a in e.nodes[i].node.operands() {
                if a.0 as usize >= i {
                    return Vec::new();
                }
                reached[a.0 as usize] = true;
            }
        }
    }
    let mut level = vec![0u32; n];
    let mut ops = Vec::new();
    // An f32 load of `x` with dependence `dep` on the vector variable: (input, index).
    let f32_load = |x: ExprId, dep: Dependence| match e.expr(x).node {
        Node::Load { input, linear }
            if e.input_elems[input as usize] == ElementType::F32 && indices.dependence(linear, vp.var) == dep =>
        {
            Some((input, linear))
        }
        _ => None,
    };
    for i in 0..n {
        let x = &e.nodes[i];
        let mut l = x.node.operands().iter().map(|a| level[a.0 as usize]).max().unwrap_or(0);
        let f32s = |a: ExprId| x.elem == ElementType::F32 && e.expr(a).elem == ElementType::F32;
        let candidate = match x.node {
            Node::Unary(op, a) => block_math::block_function(op).filter(|_| f32s(a)).map(|f| (f, a, None)),
            Node::Binary(BinaryOp::Div, a, d) if f32s(a) => {
                f32_load(d, Dependence::Invariant).map(|d| (block_math::DIV, a, Some(d)))
            }
            _ => None,
        };
        if let (Some((function, a, divisor)), true) = (candidate, reached[i] && ops.len() < MAX_BLOCKED_OPS) {
            l = level[a.0 as usize] + 1;
            let direct = f32_load(a, Dependence::Affine(1));
            let out = e
                .outputs
                .iter()
                .position(|o| o.expr.0 as usize == i && o.elem == ElementType::F32)
                .filter(|&o| results.get(o) == Some(&true));
            ops.push(BlockedOp { expr: ExprId(i as u32), arg: a, function, level: l, direct, divisor, out });
        }
        level[i] = l;
    }
    // An output is written by one op at most.
    for k in 1..ops.len() {
        if ops[..k].iter().any(|o| o.out.is_some() && o.out == ops[k].out) {
            ops[k].out = None;
        }
    }
    ops
}

/// Whether a row reduction takes the fast max/min path (`Emit::row_reduction`): every
/// reduction is an f32/f64 max or min of one value, nothing is strip-mined, and no
/// output is stored inside the row (a second run would store it twice).
fn fast_extrema(e: &Elemental, ops: &[BinaryOp], strip_mined: bool) -> bool {
    !strip_mined
        && !e.outputs.iter().any(|o| o.inner)
        && e.reductions.iter().zip(ops).all(|(red, op)| {
            matches!(op, BinaryOp::Max | BinaryOp::Min)
                && red.values.len() == 1
                && matches!(e.expr(red.values[0]).elem, ElementType::F32 | ElementType::F64)
        })
}

/// A blocked op in the function being emitted: its call and its block buffer.
struct Block {
    op: BlockedOp,
    func: FuncRef,
    addr: Value,
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

/// Emits kernel `index` of a plan as function `kernel{index}`, if it compiles to a
/// function at all ([`compiled_function`]); `results` holds the plan's result buffers
/// (never sharing bytes with another buffer, so block functions may write them
/// directly). `Some(Err)`: Cranelift cannot take it, and its source must run otherwise.
pub(super) fn emit_kernel<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    k: &crate::kernel::Kernel,
    index: usize,
    results: &std::collections::HashSet<crate::kernel::BufferId>,
    options: EmitOptions,
) -> Option<Result<Emitted, String>> {
    let (e, n_inputs) = compiled_function(k)?;
    let is_result: Vec<bool> = match &k.body {
        crate::kernel::KernelBody::Elemental(_) => k.outputs.iter().map(|b| results.contains(b)).collect(),
        _ => Vec::new(),
    };
    Some(emit(m, helpers, e, &format!("kernel{index}"), n_inputs, options, &is_result))
}

/// Emits the kernel as function `name`: vectorized when [`vector::plan`] allows and
/// Cranelift lowers the result, scalar otherwise; [`Emitted::shape`] says which, and why
/// not.
pub fn emit<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    e: &Elemental,
    name: &str,
    n_inputs: usize,
    options: EmitOptions,
    results: &[bool],
) -> Result<Emitted, String> {
    let id = m.declare_function(name, Linkage::Local, &signature(m)).map_err(|e| e.to_string())?;
    let par = parallel_var(e);
    let indices = IndexAnalysis::new(e);
    let reason = match vector::plan(e) {
        Ok(vp) => {
            let blocks = blocked_ops(e, &indices, &vp, results, options.block_lanes);
            let shape = vector_shape(e, vp, &blocks);
            match emit_as(m, helpers, e, &indices, id, n_inputs, par, shape, blocks, options.inline_half) {
                Ok(em) => return Ok(em),
                Err(why) => format!("vector code failed: {why}"),
            }
        }
        Err(why) => why,
    };
    let shape = CodeShape::Scalar { reason };
    emit_as(m, helpers, e, &indices, id, n_inputs, par, shape, Vec::new(), options.inline_half)
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

#[allow(clippy::too_many_arguments)]
fn emit_as<M: Module>(
    m: &mut M,
    helpers: &Helpers,
    e: &Elemental,
    indices: &IndexAnalysis,
    id: FuncId,
    n_inputs: usize,
    par: Option<u32>,
    shape: CodeShape,
    blocked: Vec<BlockedOp>,
    inline_half: bool,
) -> Result<Emitted, String> {
    let vp = match &shape {
        CodeShape::Vector { plan, .. } => Some(plan.clone()),
        CodeShape::Scalar { .. } => None,
    };
    let ptr = m.target_config().pointer_type();
    let mut ctx = m.make_context();
    ctx.set_disasm(true);
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
        let mut refs = HashMap::new();
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
            step_invariants: HashMap::new(),
            b,
            e,
            bases,
            n_inputs,
            vars: vec![None; e.space.len()],
            memo: HashMap::new(),
            idx_memo: HashMap::new(),
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
    let clif = ctx.func.display().to_string();
    let defined = m.define_function(id, &mut ctx).map_err(|e| format!("cranelift: {e:?}"));
    let asm = ctx.compiled_code().and_then(|c| c.vcode.clone()).unwrap_or_default();
    let code = match defined {
        Ok(()) => super::artifact::capture(m, &ctx, id),
        Err(e) => Err(e),
    };
    m.clear_context(&mut ctx);
    let code = code?;
    let par_extent = par.map_or(1, |v| e.space[v as usize]);
    Ok(Emitted { id, code, shape, clif, asm, par_extent })
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
    memo: HashMap<ExprId, Value>,
    idx_memo: HashMap<IdxId, Value>,
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
    fn fail(&mut self, msg: String) {
        if self.err.is_none() {
            self.err = Some(msg);
        }
    }

    fn body(&mut self) {
        let e = self.e;
        let outer = e.outer_vars();
        let inner: Vec<u32> = (0..e.space.len() as u32).filter(|&v| e.reduced[v as usize]).collect();
        match self.vp.as_ref().map(|p| p.kind.clone()) {
            None => self.nest(&outer, &mut |s| s.element(&inner)),
            Some(VecKind::Loop | VecKind::Column) => {
                // The vector variable is the last one, and kept.
                let (&v, rest) = outer.split_last().expect("a vector plan has a kept innermost variable");
                self.nest(rest, &mut |s| s.split(v, &mut |s| s.element(&inner)))
            }
            Some(VecKind::Row(ops)) => self.nest(&outer, &mut |s| s.row_reduction(&inner, &ops)),
        }
    }

    /// One element (or vector of elements) of the outer space: a loop kernel's outputs,
    /// or a reduction with its reduced loops inside, then its results.
    fn element(&mut self, inner: &[u32]) {
        let e = self.e;
        self.new_region();
        if !e.is_reduction() {
            // Every output evaluated (every load done) before any store: an output may
            // overwrite an input in place (`kernel::arena`), read at this position only.
            let vals: Vec<Value> = e.outputs.iter().map(|out| self.value(out.expr)).collect();
            for (o, val) in vals.into_iter().enumerate() {
                self.store_value(o, val);
            }
            return;
        }
        self.init_accs();
        self.nest(inner, &mut |s| {
            s.new_region();
            s.combine();
            s.store_inner();
        });
        self.new_region();
        for (o, out) in e.outputs.iter().enumerate() {
            if !out.inner {
                self.store(o);
            }
        }
    }

    /// Accumulators set from the inits, at the current lanes.
    fn init_accs(&mut self) {
        let e = self.e;
        self.accs = Vec::new();
        for red in &e.reductions {
            let mut vs = Vec::new();
            for &init in &red.inits {
                let ty = self.ty(e.expr(init).elem);
                vs.push(self.b.declare_var(ty));
            }
            self.accs.push(vs);
        }
        self.reset_accs();
    }

    /// Sets the accumulators to the inits again.
    fn reset_accs(&mut self) {
        let e = self.e;
        for (k, red) in e.reductions.iter().enumerate() {
            for (i, &init) in red.inits.iter().enumerate() {
                let val = self.value(init);
                self.b.def_var(self.accs[k][i], val);
            }
        }
    }

    /// Applies every reduction's combiner at the current index.
    fn combine(&mut self) {
        let mut updates = Vec::new();
        for (k, red) in self.e.reductions.iter().enumerate() {
            for (i, &c) in red.combiner.iter().enumerate() {
                updates.push((k, i, self.value(c)));
            }
        }
        for (k, i, v) in updates {
            self.b.def_var(self.accs[k][i], v);
        }
    }

    /// Stores the input-shaped outputs of a reduction kernel at the full index.
    fn store_inner(&mut self) {
        for (o, out) in self.e.outputs.iter().enumerate() {
            if out.inner {
                self.store(o);
            }
        }
    }

    /// A row reduction with vector accumulators along the innermost reduced variable;
    /// they are combined into the scalar accumulators (which took the inits and the tail
    /// elements) after the reduced loops.
    ///
    /// Float max/min rows take a fast path first ([`fast_extrema`]): the exact
    /// IEEE max of Cranelift (`fmax`: NaN and signed zeros ordered) is eight x86
    /// instructions per vector, one `maxps` is not exact for a NaN operand or for
    /// `max(-0, +0)`. So the vector steps use `maxps` plus an add into a tracker that
    /// turns NaN if any element was NaN (or infinities of both signs met); a row whose
    /// tracker is NaN or whose result is a zero (of either sign, where the `maxps`
    /// order of zeros may have picked the wrong one) runs again with the exact ops. A
    /// softmax's row max drops from nine instructions per vector to three.
    fn row_reduction(&mut self, inner: &[u32], ops: &[BinaryOp]) {
        let e = self.e;
        let vp = self.vp.clone().expect("a vector plan");
        self.new_region();
        self.init_accs();
        let fast = fast_extrema(e, ops, !self.blocks.is_empty());
        // The vector accumulators (and trackers), declared at their vector type.
        self.lanes = vp.lanes;
        let types: Vec<Type> = e.reductions.iter().map(|red| self.ty(e.expr(red.values[0]).elem)).collect();
        self.lanes = 1;
        let declare = |b: &mut FunctionBuilder, ty: Type| (0..vp.unroll).map(|_| b.declare_var(ty)).collect::<Vec<_>>();
        self.vaccs = types.iter().map(|&ty| declare(&mut self.b, ty)).collect();
        self.trackers = if fast { types.iter().map(|&ty| declare(&mut self.b, ty)).collect() } else { Vec::new() };
        self.reset_vector_accumulators(ops);
        self.row_loop(inner, ops, fast);
        self.combine_vector_accumulators(ops);
        if fast {
            let suspect = self.suspect_extrema();
            let exact = self.b.create_block();
            let join = self.b.create_block();
            self.b.ins().brif(suspect, exact, &[], join, &[]);
            self.b.switch_to_block(exact);
            self.new_region();
            self.reset_accs();
            self.reset_vector_accumulators(ops);
            self.row_loop(inner, ops, false);
            self.combine_vector_accumulators(ops);
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(join);
        }
        self.new_region();
        for (o, out) in e.outputs.iter().enumerate() {
            if !out.inner {
                self.store(o);
            }
        }
    }

    /// Sets the vector accumulators to their op's identity (and the trackers to 0).
    fn reset_vector_accumulators(&mut self, ops: &[BinaryOp]) {
        let e = self.e;
        let lanes = std::mem::replace(&mut self.lanes, self.vp.as_ref().map_or(1, |p| p.lanes));
        for (k, red) in e.reductions.iter().enumerate() {
            let elem = e.expr(red.values[0]).elem;
            for j in 0..self.vaccs[k].len() {
                let id = self.identity(ops[k], elem);
                self.b.def_var(self.vaccs[k][j], id);
            }
            for j in 0..self.trackers.get(k).map_or(0, Vec::len) {
                let zero = self.konst(elem, Scalar::F(0.0));
                self.b.def_var(self.trackers[k][j], zero);
            }
        }
        self.lanes = lanes;
    }

    /// The reduced loops of a row reduction: vector steps into the vector accumulators
    /// (fast max/min ones with trackers when `fast`), the tail into the scalar ones.
    fn row_loop(&mut self, inner: &[u32], ops: &[BinaryOp], fast: bool) {
        let (&v, rest) = inner.split_last().expect("a row reduction has a reduced innermost variable");
        self.nest(rest, &mut |s| {
            s.split(v, &mut |s| {
                s.new_region();
                if s.lanes == 1 {
                    s.combine();
                } else {
                    for (k, red) in s.e.reductions.iter().enumerate() {
                        let elem = s.e.expr(red.values[0]).elem;
                        let x = s.value(red.values[0]);
                        let var = s.vaccs[k][s.step as usize];
                        let acc = s.b.use_var(var);
                        let r = if fast {
                            let t = s.trackers[k][s.step as usize];
                            let tv = s.b.use_var(t);
                            let tv = s.b.ins().fadd(tv, x);
                            s.b.def_var(t, tv);
                            s.sticky_extremum(ops[k], acc, x)
                        } else {
                            s.binary(ops[k], elem, acc, x)
                        };
                        s.b.def_var(var, r);
                    }
                }
                s.store_inner();
            })
        });
    }

    /// `acc < x ? x : acc` for max, `x < acc ? x : acc` for min: one `maxps`/`minps`
    /// (the operand order Cranelift lowers so). A NaN `acc` stays; a NaN `x` is
    /// dropped, and a zero keeps whichever came first: the trackers catch both.
    fn sticky_extremum(&mut self, op: BinaryOp, acc: Value, x: Value) -> Value {
        let take_x = match op {
            BinaryOp::Max => self.b.ins().fcmp(FloatCC::LessThan, acc, x),
            _ => self.b.ins().fcmp(FloatCC::LessThan, x, acc),
        };
        let ty = self.b.func.dfg.value_type(acc);
        let mask = self.b.ins().bitcast(ty, MemFlagsData::new(), take_x);
        self.b.ins().bitselect(mask, x, acc)
    }

    /// After a fast max/min row: whether it must run again exactly (i8 flag): a
    /// tracker lane is NaN, or a result is a zero.
    fn suspect_extrema(&mut self) -> Value {
        let e = self.e;
        let mut suspect = self.b.ins().iconst(types::I8, 0);
        for k in 0..self.trackers.len() {
            for j in 0..self.trackers[k].len() {
                let t = self.b.use_var(self.trackers[k][j]);
                let nan = self.b.ins().fcmp(FloatCC::Unordered, t, t);
                let any = self.b.ins().vany_true(nan);
                suspect = self.b.ins().bor(suspect, any);
            }
            let elem = e.expr(e.reductions[k].values[0]).elem;
            let acc = self.b.use_var(self.accs[k][0]);
            let zero = self.konst(elem, Scalar::F(0.0));
            let is_zero = self.b.ins().fcmp(FloatCC::Equal, acc, zero);
            suspect = self.b.ins().bor(suspect, is_zero);
        }
        suspect
    }

    /// Folds the vector accumulators, exactly, into the scalar ones.
    fn combine_vector_accumulators(&mut self, ops: &[BinaryOp]) {
        let e = self.e;
        let vp = self.vp.clone().expect("a vector plan");
        self.new_region();
        for (k, red) in e.reductions.iter().enumerate() {
            let elem = e.expr(red.values[0]).elem;
            let mut t = self.b.use_var(self.vaccs[k][0]);
            for j in 1..vp.unroll as usize {
                let u = self.b.use_var(self.vaccs[k][j]);
                t = self.binary(ops[k], elem, t, u);
            }
            let mut h = self.lane_scalar(elem, t, 0);
            for l in 1..vp.lanes {
                let x = self.lane_scalar(elem, t, l);
                h = self.binary(ops[k], elem, h, x);
            }
            let acc = self.b.use_var(self.accs[k][0]);
            let r = self.binary(ops[k], elem, acc, h);
            self.b.def_var(self.accs[k][0], r);
        }
    }

    /// The identity of associative `op` on `elem` ([`reduction::identity`]), at the
    /// current lanes.
    fn identity(&mut self, op: BinaryOp, elem: ElementType) -> Value {
        let id = reduction::identity(op, elem).expect("a row reduction's op is associative (vector::plan)");
        self.konst(elem, id)
    }

    /// Lane `l` of vector `v` as a scalar register of `elem`.
    fn lane_scalar(&mut self, elem: ElementType, v: Value, l: u32) -> Value {
        let x = self.b.ins().extractlane(v, l as u8);
        if elem.is_pred() {
            self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
        } else {
            x
        }
    }

    fn new_region(&mut self) {
        self.memo.clear();
        self.idx_memo.clear();
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

    /// Loops over `vars` (outermost first) around `body`.
    fn nest(&mut self, vars: &[u32], body: &mut dyn FnMut(&mut Self)) {
        let Some((&v, rest)) = vars.split_first() else { return body(self) };
        let (lo, hi) = self.bounds(v);
        self.counted_loop(lo, hi, 1, &mut |s, i| {
            s.vars[v as usize] = Some(i);
            s.nest(rest, body);
        });
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

    /// Runs the whole vector steps of variable `v` from `lo` in blocks of at most
    /// [`BLOCK`] elements, each in stages: stage `s` computes the arguments of the level-`s + 1` blocked ops into
    /// their buffers and then calls their native functions on them; the last stage runs
    /// `body`, which reads every blocked op's result from its buffer. Everything else is
    /// recomputed in each stage that needs it (loads and arithmetic are cheap next to a
    /// transcendental, and the block's inputs are in cache): only the blocked ops'
    /// values cross stages. A block's stages read inputs only inside the block before its
    /// last stage stores, so outputs written in place stay safe. Returns where the
    /// remainder (vector steps and scalar tail) starts.
    fn strip_mined(&mut self, v: u32, lo: Value, hi: Value, body: &mut dyn FnMut(&mut Self)) -> Value {
        let vp = self.vp.clone().expect("a vector plan");
        let last = self.blocks.iter().map(|b| b.op.level).max().unwrap_or(0);
        let step = (vp.lanes * vp.unroll) as i64;
        // Blocks cover the whole vector steps (the last one may be shorter); what is
        // left is shorter than one step, for the scalar tail.
        let len = self.b.ins().isub(hi, lo);
        let zero = self.b.ins().iconst(types::I64, 0);
        let len = self.b.ins().smax(len, zero);
        let whole = self.b.ins().band_imm_s(len, -step);
        let vec_end = self.b.ins().iadd(lo, whole);
        let header = self.b.create_block();
        let block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, types::I64);
        let parked = self.park_slots();
        self.b.ins().jump(header, &[lo.into()]);
        self.b.switch_to_block(header);
        let start = self.b.block_params(header)[0];
        let more = self.b.ins().icmp(IntCC::SignedLessThan, start, vec_end);
        self.b.ins().brif(more, block, &[], exit, &[]);
        self.b.switch_to_block(block);
        let full = self.b.ins().iadd_imm_s(start, BLOCK);
        let end = self.b.ins().smin(full, vec_end);
        let n = self.b.ins().isub(end, start);
        // Where each block function reads (its buffer, or the block of its input) and
        // writes (its buffer, or its output's block), and its divisor.
        let args: Vec<Vec<Value>> = (0..self.blocks.len()).map(|k| self.block_args(k, v, start, n)).collect();
        self.block_results = args.iter().map(|a| a[1]).collect();
        // The last stage has nothing to do when a loop kernel's outputs are all written
        // by block functions.
        let idle_last = matches!(self.vp.as_ref().map(|p| &p.kind), Some(VecKind::Loop))
            && (0..self.e.outputs.len()).all(|o| self.blocks.iter().any(|b| b.op.out == Some(o)));
        for stage in 0..=last {
            if stage == last {
                self.reload_vector_accumulators(&parked);
            }
            let copies = self.blocks.iter().any(|b| b.op.level == stage + 1 && b.op.direct.is_none());
            if (stage < last && !copies) || (stage == last && idle_last) {
                self.call_blocks(stage, &args);
                continue;
            }
            // The loop counts the position in the block (which indexes the buffers);
            // the vector variable is the block's start plus that.
            self.counted_loop(zero, n, step, &mut |s, pos| {
                let first = s.b.ins().iadd(start, pos);
                for j in 0..vp.unroll {
                    s.enter_vector(v, first, j);
                    s.stage = Some((stage, pos));
                    if stage == last {
                        body(s);
                        continue;
                    }
                    s.new_region();
                    for k in 0..s.blocks.len() {
                        if s.blocks[k].op.level == stage + 1 && s.blocks[k].op.direct.is_none() {
                            let x = s.value(s.blocks[k].op.arg);
                            let addr = s.blocks[k].addr;
                            s.store_vec(ElementType::F32, x, addr, pos, (j * vp.lanes) as i64);
                        }
                    }
                }
            });
            self.stage = None;
            self.step_base = None;
            if stage == last {
                self.park_vector_accumulators(&parked);
            }
            self.call_blocks(stage, &args);
        }
        self.b.ins().jump(header, &[end.into()]);
        self.b.switch_to_block(exit);
        self.reload_vector_accumulators(&parked);
        vec_end
    }

    /// The calls of the block functions whose arguments stage `stage` computes, with
    /// their arguments ([`Emit::block_args`]).
    fn call_blocks(&mut self, stage: u32, args: &[Vec<Value>]) {
        for (k, args) in args.iter().enumerate() {
            let (op, func) = (&self.blocks[k].op, self.blocks[k].func);
            if op.level == stage + 1 {
                // The call computes the blocked op's node: it carries that node's origin.
                let caller = self.enter_origin(op.expr);
                self.b.ins().call(func, args);
                self.b.set_srcloc(caller);
            }
        }
    }

    /// Blocked op `k`'s call arguments for the block of `n` elements starting at `start`
    /// of vector variable `v`: where it reads (its buffer, or its input's element
    /// there), where it writes (its buffer, or its output's element there), `n`, and
    /// for a division the divisor's address.
    fn block_args(&mut self, k: usize, v: u32, start: Value, n: Value) -> Vec<Value> {
        let op = self.blocks[k].op.clone();
        let buffer = self.blocks[k].addr;
        let saved = self.vars[v as usize].replace(start);
        self.new_region();
        let at = |s: &mut Self, input: u32, linear: IdxId| {
            let l = s.index(linear);
            let base = s.bases[input as usize];
            s.address(base, l, ElementType::F32)
        };
        let src = op.direct.map_or(buffer, |(input, linear)| at(self, input, linear));
        let dst = match op.out {
            Some(o) => {
                let linear = self.output_linear(o);
                let base = self.bases[self.n_inputs + o];
                self.address(base, linear, ElementType::F32)
            }
            None => buffer,
        };
        let mut args = vec![src, dst, n];
        if let Some((input, linear)) = op.divisor {
            args.push(at(self, input, linear));
        }
        self.vars[v as usize] = saved;
        self.new_region();
        args
    }

    /// A row reduction's vector accumulators would be live across the block calls, which
    /// clobber every vector register, and the register allocator then keeps them on the
    /// stack even inside the last stage's loop. So they are parked in stack slots of
    /// their own around the calls and reloaded into fresh values for that loop (the
    /// same values in the same order: the same bits). Returns the slots (none for a loop
    /// kernel), after parking the accumulators' current values.
    fn park_slots(&mut self) -> Vec<StackSlot> {
        let mut slots = Vec::new();
        for k in 0..self.vaccs.len() {
            for j in 0..self.vaccs[k].len() {
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4));
                slots.push(slot);
                let v = self.b.use_var(self.vaccs[k][j]);
                self.b.ins().stack_store(types::I64, v, slot, 0);
            }
        }
        slots
    }

    /// Stores the vector accumulators into their slots ([`Emit::park_slots`]).
    fn park_vector_accumulators(&mut self, slots: &[StackSlot]) {
        let vars: Vec<Variable> = self.vaccs.iter().flatten().copied().collect();
        for (var, &slot) in vars.into_iter().zip(slots) {
            let v = self.b.use_var(var);
            self.b.ins().stack_store(types::I64, v, slot, 0);
        }
    }

    /// Sets the vector accumulators from their slots ([`Emit::park_slots`]).
    fn reload_vector_accumulators(&mut self, slots: &[StackSlot]) {
        let e = self.e;
        let lanes = std::mem::replace(&mut self.lanes, self.vp.as_ref().map_or(1, |p| p.lanes));
        let mut i = 0;
        for k in 0..self.vaccs.len() {
            let ty = self.ty(e.expr(e.reductions[k].values[0]).elem);
            for j in 0..self.vaccs[k].len() {
                let v = self.b.ins().stack_load(types::I64, ty, slots[i], 0);
                self.b.def_var(self.vaccs[k][j], v);
                i += 1;
            }
        }
        self.lanes = lanes;
    }

    /// A blocked op's result at the current position, in the stages after its call.
    fn block_result(&mut self, x: ExprId) -> Option<Value> {
        let (stage, pos) = self.stage?;
        let k = self.blocks.iter().position(|b| b.op.expr == x && b.op.level <= stage)?;
        let addr = self.block_results[k];
        // The current vector's distance from the step's first, whose position is `pos`.
        let off = self.step_base.map_or(0, |(_, _, off)| off);
        Some(self.load_vec(ElementType::F32, addr, pos, off))
    }

    /// Stores output `o` at its element's position ([`Emit::output_linear`]; in a vector
    /// step, `lanes` consecutive elements).
    fn store(&mut self, o: usize) {
        let val = self.value(self.e.outputs[o].expr);
        self.store_value(o, val);
    }

    /// Stores `val` as output `o` (as [`Emit::store`]).
    fn store_value(&mut self, o: usize, val: Value) {
        let out = &self.e.outputs[o];
        let elem = out.elem;
        // A block function wrote it already (`BlockedOp::out`).
        if self.stage.is_some() && self.blocks.iter().any(|b| b.op.out == Some(o)) {
            return;
        }
        // Row-major with the vector variable last: stride 1 along it.
        let (linear, off) = self.vector_index(&mut |s| s.output_linear(o));
        let base = self.bases[self.n_inputs + o];
        if self.lanes > 1 {
            self.store_vec(elem, val, base, linear, off);
        } else {
            self.store_elem(out.elem, val, base, linear);
        }
    }

    /// Where output `o` stores the element of the current variables: the plan's
    /// [`store_strides`] applied to their values.
    fn output_linear(&mut self, o: usize) -> Value {
        let mut linear = self.b.ins().iconst(types::I64, 0);
        for (v, stride) in store_strides(self.e, &self.e.outputs[o]) {
            let i = self.vars[v as usize].expect("variable in scope");
            let t = self.b.ins().imul_imm_s(i, stride);
            linear = self.b.ins().iadd(linear, t);
        }
        linear
    }

    fn address(&mut self, base: Value, linear: Value, elem: ElementType) -> Value {
        let off = self.b.ins().imul_imm_s(linear, elem.byte_size() as i64);
        self.b.ins().iadd(base, off)
    }

    fn store_elem(&mut self, elem: ElementType, val: Value, base: Value, linear: Value) {
        let addr = self.address(base, linear, elem);
        let v = match elem {
            ElementType::F16 | ElementType::BF16 => self.half_bits(elem, val),
            _ => val,
        };
        self.b.ins().store(flags(), v, addr, 0);
    }

    /// Stores a vector at `linear + off..linear + off + lanes` (`off` in elements, an
    /// immediate); pred masks as bytes 0/1.
    fn store_vec(&mut self, elem: ElementType, val: Value, base: Value, linear: Value, off: i64) {
        let addr = self.address(base, linear, elem);
        let disp = (off * elem.byte_size() as i64) as i32;
        if !elem.is_pred() {
            self.b.ins().store(flags(), val, addr, disp);
            return;
        }
        if self.b.func.dfg.value_type(val).lane_bits() == 8 {
            let one = self.konst(ElementType::U8, Scalar::U(1));
            let bytes = self.b.ins().band(val, one);
            self.b.ins().store(flags(), bytes, addr, disp);
            return;
        }
        for l in 0..self.lanes {
            let x = self.b.ins().extractlane(val, l as u8);
            let byte = if self.b.func.dfg.value_type(x) == types::I8 { x } else { self.b.ins().ireduce(types::I8, x) };
            let bit = self.b.ins().band_imm_s(byte, 1);
            self.b.ins().store(flags(), bit, addr, disp + l as i32);
        }
    }

    /// One element, in its scalar register.
    fn load_elem(&mut self, elem: ElementType, base: Value, linear: Value) -> Value {
        let addr = self.address(base, linear, elem);
        match elem {
            ElementType::F16 | ElementType::BF16 => {
                let bits = self.b.ins().load(types::I16, flags(), addr, 0);
                self.half_from_bits(elem, bits)
            }
            _ => self.b.ins().load(reg(elem), flags(), addr, 0),
        }
    }

    /// Elements `linear + off..linear + off + lanes` as a vector (`off` in elements, an
    /// immediate); pred bytes become masks.
    fn load_vec(&mut self, elem: ElementType, base: Value, linear: Value, off: i64) -> Value {
        let addr = self.address(base, linear, elem);
        let disp = (off * elem.byte_size() as i64) as i32;
        let ty = self.ty(elem);
        if !elem.is_pred() {
            return self.b.ins().load(ty, flags(), addr, disp);
        }
        if ty.lane_bits() == 8 {
            let bytes = self.b.ins().load(ty, flags(), addr, disp);
            return self.b.ins().ineg(bytes);
        }
        let lanes: Vec<Value> =
            (0..self.lanes).map(|l| self.b.ins().load(types::I8, flags(), addr, disp + l as i32)).collect();
        self.vector_from_lanes(elem, &lanes)
    }

    /// Evaluates `index`, an index with stride 1 along the vector variable, at the
    /// current unrolled step's first vector; returns it with the current vector's offset
    /// from there (elements, 0 outside vector steps), for [`Emit::load_vec`] and
    /// [`Emit::store_vec`].
    fn vector_index(&mut self, index: &mut dyn FnMut(&mut Self) -> Value) -> (Value, i64) {
        let Some((v, first, off)) = self.step_base.filter(|&(_, _, off)| off != 0 && self.lanes > 1) else {
            return (index(self), 0);
        };
        let saved = (self.vars[v as usize], std::mem::take(&mut self.idx_memo));
        self.vars[v as usize] = Some(first);
        let i = index(self);
        self.vars[v as usize] = saved.0;
        self.idx_memo = saved.1;
        (i, off)
    }

    /// A vector from one scalar register per lane (pred 0/1 become masks).
    fn vector_from_lanes(&mut self, elem: ElementType, lanes: &[Value]) -> Value {
        let ty = self.ty(elem);
        let mut parts = Vec::with_capacity(lanes.len());
        for &x in lanes {
            parts.push(self.lane_of(elem, ty, x));
        }
        let mut v = self.b.ins().splat(ty, parts[0]);
        for (l, &x) in parts.iter().enumerate().skip(1) {
            v = self.b.ins().insertlane(v, x, l as u8);
        }
        v
    }

    /// A scalar register as a lane of vector type `ty`: a pred 0/1 becomes a mask lane.
    fn lane_of(&mut self, elem: ElementType, ty: Type, x: Value) -> Value {
        if !elem.is_pred() {
            return x;
        }
        let lane = ty.lane_type();
        let w = if lane == types::I8 { x } else { self.b.ins().uextend(lane, x) };
        self.b.ins().ineg(w)
    }

    /// A scalar register splatted to the current lanes.
    fn splat(&mut self, elem: ElementType, x: Value) -> Value {
        if self.lanes == 1 {
            return x;
        }
        let ty = self.ty(elem);
        let lane = self.lane_of(elem, ty, x);
        self.b.ins().splat(ty, lane)
    }

    /// A constant of the type of `like` (scalar or vector), from its lane's bits or value.
    fn const_like(&mut self, like: Value, int: i64, float: f64) -> Value {
        let ty = self.b.func.dfg.value_type(like);
        let lane = ty.lane_type();
        let x = match lane {
            types::F32 => self.b.ins().f32const(float as f32),
            types::F64 => self.b.ins().f64const(float),
            _ => self.b.ins().iconst(lane, int),
        };
        if ty.is_vector() {
            self.b.ins().splat(ty, x)
        } else {
            x
        }
    }

    fn call(&mut self, helper: &str, args: &[Value]) -> Value {
        let f = self.refs[helper];
        let inst = self.b.ins().call(f, args);
        self.b.inst_results(inst)[0]
    }

    fn index(&mut self, i: IdxId) -> Value {
        if let Some(&v) = self.idx_memo.get(&i) {
            return v;
        }
        let v = match self.e.idx_node(i).clone() {
            Idx::Var(k) => self.vars[k as usize].expect("variable in scope"),
            Idx::Const(c) => self.b.ins().iconst(types::I64, c),
            Idx::Add(a, c) => {
                let (a, c) = (self.index(a), self.index(c));
                self.b.ins().iadd(a, c)
            }
            Idx::Mul(a, k) => {
                let a = self.index(a);
                self.b.ins().imul_imm_s(a, k)
            }
            Idx::Div(a, k) => {
                let a = self.index(a);
                let k = self.b.ins().iconst(types::I64, k);
                self.b.ins().sdiv(a, k)
            }
            Idx::Rem(a, k) => {
                let a = self.index(a);
                let k = self.b.ins().iconst(types::I64, k);
                self.b.ins().srem(a, k)
            }
            Idx::Clamp(a, lo, hi) => {
                let a = self.index(a);
                let lo = self.b.ins().iconst(types::I64, lo);
                let hi = self.b.ins().iconst(types::I64, hi);
                let t = self.b.ins().smax(a, lo);
                self.b.ins().smin(t, hi)
            }
            Idx::Data(x) => {
                let v = self.value(x);
                self.data_index(self.e.expr(x).elem, v)
            }
        };
        self.idx_memo.insert(i, v);
        v
    }

    /// Index `i` at each lane of the current vector step (the vector variable is lane
    /// 0's value plus the lane number).
    fn lane_indices(&mut self, i: IdxId) -> Vec<Value> {
        let v = self.vp.as_ref().expect("a vector plan").var as usize;
        let base = self.vars[v].expect("the vector variable in scope");
        let saved = std::mem::take(&mut self.idx_memo);
        let mut out = Vec::with_capacity(self.lanes as usize);
        for l in 0..self.lanes {
            self.vars[v] = Some(if l == 0 { base } else { self.b.ins().iadd_imm_s(base, l as i64) });
            out.push(self.index(i));
            self.idx_memo.clear();
        }
        self.vars[v] = Some(base);
        self.idx_memo = saved;
        out
    }

    /// How index `i` depends on the vector variable.
    fn dependence(&self, i: IdxId) -> Dependence {
        let var = self.vp.as_ref().expect("a vector plan").var;
        self.indices.dependence(i, var)
    }

    /// A constant of `elem` at the current lanes.
    fn konst(&mut self, elem: ElementType, s: Scalar) -> Value {
        let x = match elem {
            ElementType::F64 => self.b.ins().f64const(s.as_f64()),
            e if e.is_float() => self.b.ins().f32const(s.as_f64() as f32),
            ElementType::Pred => self.b.ins().iconst(types::I8, (s.as_f64() != 0.0) as i64),
            e => {
                let bits = match s {
                    Scalar::U(u) => u,
                    Scalar::S(v) => v as u64,
                    other => other.as_i64() as u64,
                };
                self.b.ins().iconst(reg(e), (bits & crate::ir::literal::width_mask(e)) as i64)
            }
        };
        self.splat(elem, x)
    }

    /// Rounds an f32-carried f16/bf16 result to its precision (scalars only: kernels
    /// with f16/bf16 are not vectorized).
    fn narrow(&mut self, elem: ElementType, v: Value) -> Value {
        match elem {
            ElementType::F16 if self.inline_half => half_floats::round_f16(&mut self.b, v),
            ElementType::BF16 if self.inline_half => half_floats::round_bf16(&mut self.b, v),
            ElementType::F16 => self.call("hs_round_f16", &[v]),
            ElementType::BF16 => self.call("hs_round_bf16", &[v]),
            _ => v,
        }
    }

    /// Makes node `x`'s HLO instruction (`Elemental::origins`) the source location of
    /// the instructions emitted next, so listings link code to HLO; returns the location
    /// it replaces, for the caller to restore.
    fn enter_origin(&mut self, x: ExprId) -> SourceLoc {
        let caller = self.b.srcloc();
        if let Some(&Some(origin)) = self.e.origins.get(x.0 as usize) {
            self.b.set_srcloc(SourceLoc::new(origin));
        }
        caller
    }

    fn value(&mut self, x: ExprId) -> Value {
        if let Some(&v) = self.memo.get(&x) {
            return v;
        }
        // The instructions made for this node carry its HLO instruction; its operands'
        // carry theirs.
        let caller = self.enter_origin(x);
        let v = match self.block_result(x) {
            Some(v) => v,
            None => self.value_uncached(x),
        };
        self.b.set_srcloc(caller);
        self.memo.insert(x, v);
        v
    }

    fn value_uncached(&mut self, x: ExprId) -> Value {
        let e = self.e;
        let expr = e.expr(x);
        let elem = expr.elem;
        let vector = self.lanes > 1;
        match expr.node.clone() {
            Node::Load { input, linear } => {
                let base = self.bases[input as usize];
                let in_elem = e.input_elems[input as usize];
                if !vector {
                    let l = self.index(linear);
                    return self.load_elem(in_elem, base, l);
                }
                match self.dependence(linear) {
                    Dependence::Invariant => {
                        // One load per loop step, shared by its unrolled vectors (loads are
                        // not merged by Cranelift, the arithmetic on them is). Only where a
                        // step is straight-line code: a column reduction's steps hold loops.
                        let shared = !matches!(self.vp.as_ref().map(|p| &p.kind), Some(VecKind::Column));
                        if let Some(&v) = self.step_invariants.get(&x).filter(|_| shared) {
                            return v;
                        }
                        let l = self.index(linear);
                        let s = self.load_elem(in_elem, base, l);
                        let v = self.splat(in_elem, s);
                        if shared {
                            self.step_invariants.insert(x, v);
                        }
                        v
                    }
                    Dependence::Affine(1) => {
                        let (l, off) = self.vector_index(&mut |s| s.index(linear));
                        self.load_vec(in_elem, base, l, off)
                    }
                    _ => {
                        let ls = self.lane_indices(linear);
                        let xs: Vec<Value> = ls.into_iter().map(|l| self.load_elem(in_elem, base, l)).collect();
                        self.vector_from_lanes(in_elem, &xs)
                    }
                }
            }
            Node::Const(s) => self.konst(elem, s),
            Node::Index(i) => {
                if !vector {
                    let v = self.index(i);
                    return self.int_to_elem(v, elem);
                }
                let ls = self.lane_indices(i);
                let xs: Vec<Value> = ls.into_iter().map(|l| self.int_to_elem(l, elem)).collect();
                self.vector_from_lanes(elem, &xs)
            }
            Node::InRange { idx, lo, hi } => {
                let ls = if vector { self.lane_indices(idx) } else { vec![self.index(idx)] };
                let xs: Vec<Value> = ls
                    .into_iter()
                    .map(|v| {
                        let a = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, v, lo);
                        let c = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, v, hi);
                        self.b.ins().band(a, c)
                    })
                    .collect();
                if vector {
                    self.vector_from_lanes(ElementType::Pred, &xs)
                } else {
                    xs[0]
                }
            }
            Node::Unary(op, a) => {
                let av = self.value(a);
                let from = e.expr(a).elem;
                self.unary(op, from, elem, av)
            }
            Node::Binary(op, a, c) => {
                if let Some(r) = self.max_min_constant(op, elem, a, c) {
                    return r;
                }
                let (av, cv) = (self.value(a), self.value(c));
                self.binary(op, elem, av, cv)
            }
            Node::Compare { dir, total, a, b } => {
                let (av, bv) = (self.value(a), self.value(b));
                self.compare(dir, total, e.expr(a).elem, av, bv)
            }
            Node::Select { pred, on_true, on_false } => {
                let p = self.value(pred);
                let (t, f) = (self.value(on_true), self.value(on_false));
                if !vector {
                    return self.b.ins().select(p, t, f);
                }
                let ty = self.b.func.dfg.value_type(t);
                let mask =
                    if self.b.func.dfg.value_type(p) == ty { p } else { self.b.ins().bitcast(ty, lane_order(), p) };
                self.b.ins().bitselect(mask, t, f)
            }
            Node::Clamp { lo, x: xv, hi } => {
                let (l, v, h) = (self.value(lo), self.value(xv), self.value(hi));
                if elem.is_float() {
                    let t = self.b.ins().fmax(v, l);
                    self.b.ins().fmin(t, h)
                } else if elem.is_pred() {
                    let t = self.b.ins().bor(v, l);
                    self.b.ins().band(t, h)
                } else if elem.is_signed_int() {
                    let t = self.b.ins().smax(v, l);
                    self.b.ins().smin(t, h)
                } else {
                    let t = self.b.ins().umax(v, l);
                    self.b.ins().umin(t, h)
                }
            }
            Node::Convert(a) => {
                let av = self.value(a);
                if vector {
                    self.convert_vec(e.expr(a).elem, elem, av)
                } else {
                    self.convert(e.expr(a).elem, elem, av)
                }
            }
            Node::BitcastConvert(a) => {
                let av = self.value(a);
                if vector {
                    let ty = self.ty(elem);
                    return if self.b.func.dfg.value_type(av) == ty {
                        av
                    } else {
                        self.b.ins().bitcast(ty, lane_order(), av)
                    };
                }
                self.bitcast_convert(e.expr(a).elem, elem, av)
            }
            Node::Acc { red, i } => self.b.use_var(self.accs[red as usize][i as usize]),
            Node::Arg { red, i } => {
                let v = e.reductions[red as usize].values[i as usize];
                self.value(v)
            }
            Node::Reduced { red, i } => self.b.use_var(self.accs[red as usize][i as usize]),
        }
    }

    /// Float max/min of a value and a constant that is not NaN (ReLU's `max(x, 0)`, clamps)
    /// as one compare-and-select in the operand order x86-64 lowers to a single
    /// `maxps`/`minps`, instead of the generic sequence that orders NaNs and zeros (eight
    /// instructions). The order alone gives the interpreter's results: a NaN `x` fails the
    /// compare and is returned, and equal operands return `x`, which is right for zeros
    /// except `max(-0, +0)`, mended by adding `+0` (`x + 0 = x` for every other `x`).
    /// `min(x, -0)` would need the mirror image, and keeps the generic code.
    fn max_min_constant(&mut self, op: BinaryOp, elem: ElementType, a: ExprId, c: ExprId) -> Option<Value> {
        if !elem.is_float() || !matches!(op, BinaryOp::Max | BinaryOp::Min) {
            return None;
        }
        let konst = |x: ExprId| match self.e.expr(x).node {
            Node::Const(s) if !s.as_f64().is_nan() => Some(s.as_f64()),
            _ => None,
        };
        let (x, k) = match (konst(a), konst(c)) {
            (_, Some(k)) => (a, k),
            (Some(k), _) => (c, k),
            _ => return None,
        };
        let negative_zero = k == 0.0 && k.is_sign_negative();
        if op == BinaryOp::Min && negative_zero {
            return None;
        }
        let xv = self.value(x);
        let kv = self.konst(elem, Scalar::F(k));
        let pick_k = match op {
            BinaryOp::Max => self.b.ins().fcmp(FloatCC::LessThan, xv, kv),
            _ => self.b.ins().fcmp(FloatCC::LessThan, kv, xv),
        };
        let r = if self.lanes > 1 {
            let ty = self.b.func.dfg.value_type(xv);
            let mask = self.b.ins().bitcast(ty, MemFlagsData::new(), pick_k);
            self.b.ins().bitselect(mask, kv, xv)
        } else {
            self.b.ins().select(pick_k, kv, xv)
        };
        Some(if op == BinaryOp::Max && k == 0.0 && !negative_zero {
            let zero = self.konst(elem, Scalar::F(0.0));
            self.b.ins().fadd(r, zero)
        } else {
            r
        })
    }

    /// An integer (or pred) value as an i64 index: signed types sign-extend, unsigned
    /// ones zero-extend, u64 above `i64::MAX` saturates (as the interpreter reads start
    /// indices).
    fn data_index(&mut self, elem: ElementType, v: Value) -> Value {
        if reg(elem) == types::I64 {
            if elem.is_signed_int() {
                return v;
            }
            let max = self.b.ins().iconst(types::I64, i64::MAX);
            return self.b.ins().umin(v, max);
        }
        if elem.is_signed_int() {
            self.b.ins().sextend(types::I64, v)
        } else {
            self.b.ins().uextend(types::I64, v)
        }
    }

    /// An i64 index as a scalar of type `elem` (iota).
    fn int_to_elem(&mut self, v: Value, elem: ElementType) -> Value {
        match elem {
            ElementType::F64 => self.b.ins().fcvt_from_sint(types::F64, v),
            e if e.is_float() => {
                let f = self.b.ins().fcvt_from_sint(types::F32, v);
                self.narrow(e, f)
            }
            ElementType::S64 | ElementType::U64 => v,
            ElementType::Pred => self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0),
            e => self.b.ins().ireduce(reg(e), v),
        }
    }

    /// Converts a vector between types of one lane width (the plan ensures it), or to
    /// and from pred masks.
    fn convert_vec(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
        let tty = self.ty(to);
        if to.is_pred() {
            let zero = self.const_like(v, 0, 0.0);
            return if from.is_float() {
                self.b.ins().fcmp(FloatCC::NotEqual, v, zero)
            } else {
                self.b.ins().icmp(IntCC::NotEqual, v, zero)
            };
        }
        // A mask -> 0/1 in an integer of the same width.
        let (v, from) = if from.is_pred() {
            let one = self.const_like(v, 1, 0.0);
            (self.b.ins().band(v, one), ElementType::S32)
        } else {
            (v, from)
        };
        match (from.is_float(), to.is_float()) {
            (false, false) | (true, true) => v,
            (false, true) if from.is_signed_int() => self.b.ins().fcvt_from_sint(tty, v),
            (false, true) => self.b.ins().fcvt_from_uint(tty, v),
            (true, false) if to.is_signed_int() => self.b.ins().fcvt_to_sint_sat(tty, v),
            (true, false) => self.b.ins().fcvt_to_uint_sat(tty, v),
        }
    }

    /// Unary `op` on a scalar or a vector `a` (its type says which; `from` is the
    /// operand's element type, `elem` the result's).
    fn unary(&mut self, op: UnaryOp, from: ElementType, elem: ElementType, a: Value) -> Value {
        use UnaryOp::*;
        let vector = self.b.func.dfg.value_type(a).is_vector();
        if op == IsFinite {
            let abs = math::fabs(&mut self.b, a);
            let inf = self.const_like(a, 0, f64::INFINITY);
            return self.b.ins().fcmp(FloatCC::LessThan, abs, inf);
        }
        if elem.is_pred() {
            return match op {
                Not if vector => self.b.ins().bnot(a),
                Not => self.b.ins().bxor_imm_s(a, 1),
                _ => {
                    self.fail(format!("{} on pred", op.hlo_name()));
                    a
                }
            };
        }
        if elem.is_int() {
            return match op {
                Abs if elem.is_signed_int() => self.b.ins().iabs(a),
                Abs => a,
                Neg => self.b.ins().ineg(a),
                Not => self.b.ins().bnot(a),
                Sign if elem.is_signed_int() => {
                    let m1 = self.const_like(a, crate::ir::literal::width_mask(elem) as i64, 0.0);
                    let one = self.const_like(a, 1, 0.0);
                    let t = self.b.ins().smax(a, m1);
                    self.b.ins().smin(t, one)
                }
                Sign if vector => {
                    let zero = self.const_like(a, 0, 0.0);
                    let one = self.const_like(a, 1, 0.0);
                    let c = self.b.ins().icmp(IntCC::NotEqual, a, zero);
                    self.b.ins().band(c, one)
                }
                Sign => {
                    let c = self.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0);
                    self.b.ins().uextend(reg(elem), c)
                }
                PopCnt if !vector => self.b.ins().popcnt(a),
                Clz if !vector => self.b.ins().clz(a),
                _ => {
                    self.fail(format!("{} on {elem}", op.hlo_name()));
                    a
                }
            };
        }
        let _ = from;
        let r = match op {
            Abs => return math::fabs(&mut self.b, a),
            Neg => return math::fneg(&mut self.b, a),
            Floor => return self.b.ins().floor(a),
            Ceil => return self.b.ins().ceil(a),
            RoundEven => return self.b.ins().nearest(a),
            Sqrt => self.b.ins().sqrt(a),
            Not | PopCnt | Clz | IsFinite => {
                self.fail(format!("{} on {elem}", op.hlo_name()));
                return a;
            }
            _ => self.transcendental(op, elem, a),
        };
        self.narrow(elem, r)
    }

    /// exp, log, tanh, ...: inline approximations for f32 and f32 vectors, C library
    /// calls for f64 (lane by lane in vectors); see `math`.
    fn transcendental(&mut self, op: UnaryOp, elem: ElementType, a: Value) -> Value {
        let refs = &self.refs;
        let mut call = |b: &mut FunctionBuilder, name: &'static str, args: &[Value]| {
            let inst = b.ins().call(refs[name], args);
            b.inst_results(inst)[0]
        };
        match math::unary(&mut self.b, self.fma, op, a, &mut call) {
            Some(r) => r,
            None => {
                self.fail(format!("{} on {elem}", op.hlo_name()));
                a
            }
        }
    }

    fn binary(&mut self, op: BinaryOp, elem: ElementType, a: Value, c: Value) -> Value {
        use BinaryOp::*;
        let ty = reg(elem);
        let a_vec = self.b.func.dfg.value_type(a).is_vector();
        if elem.is_pred() {
            return match op {
                Add | Max | Or => self.b.ins().bor(a, c),
                Mul | Min | And => self.b.ins().band(a, c),
                Xor => self.b.ins().bxor(a, c),
                _ => {
                    self.fail(format!("{} on pred", op.hlo_name()));
                    a
                }
            };
        }
        if elem.is_float() {
            let r = match op {
                Add => self.b.ins().fadd(a, c),
                Sub => self.b.ins().fsub(a, c),
                Mul => self.b.ins().fmul(a, c),
                Div => self.b.ins().fdiv(a, c),
                Max => return self.b.ins().fmax(a, c),
                Min => return self.b.ins().fmin(a, c),
                Rem | Pow | Atan2 => {
                    let refs = &self.refs;
                    let mut call = |b: &mut FunctionBuilder, name: &'static str, args: &[Value]| {
                        let inst = b.ins().call(refs[name], args);
                        b.inst_results(inst)[0]
                    };
                    match math::binary(&mut self.b, self.fma, op, a, c, &mut call) {
                        Some(r) => r,
                        None => {
                            self.fail(format!("{} on {elem}", op.hlo_name()));
                            return a;
                        }
                    }
                }
                _ => {
                    self.fail(format!("{} on {elem}", op.hlo_name()));
                    return a;
                }
            };
            return self.narrow(elem, r);
        }
        let signed = elem.is_signed_int();
        let width = elem.bit_width() as i64;
        match op {
            Add => self.b.ins().iadd(a, c),
            Sub => self.b.ins().isub(a, c),
            Mul => self.b.ins().imul(a, c),
            And => self.b.ins().band(a, c),
            Or => self.b.ins().bor(a, c),
            Xor => self.b.ins().bxor(a, c),
            Max if signed => self.b.ins().smax(a, c),
            Max => self.b.ins().umax(a, c),
            Min if signed => self.b.ins().smin(a, c),
            Min => self.b.ins().umin(a, c),
            Div | Rem if !a_vec => {
                // x / 0 = -1 (all ones), x % 0 = x; INT_MIN / -1 wraps, INT_MIN % -1 = 0.
                let one = self.b.ins().iconst(ty, 1);
                let zero_div = self.b.ins().icmp_imm_s(IntCC::Equal, c, 0);
                let mut bad = zero_div;
                if signed {
                    let min = self
                        .b
                        .ins()
                        .iconst(ty, (1u64 << (width - 1)) as i64 & crate::ir::literal::width_mask(elem) as i64);
                    let is_min = self.b.ins().icmp(IntCC::Equal, a, min);
                    let is_m1 = self.b.ins().icmp_imm_s(IntCC::Equal, c, -1);
                    let ovf = self.b.ins().band(is_min, is_m1);
                    bad = self.b.ins().bor(bad, ovf);
                }
                let safe = self.b.ins().select(bad, one, c);
                let q = match (op, signed) {
                    (Div, true) => self.b.ins().sdiv(a, safe),
                    (Div, false) => self.b.ins().udiv(a, safe),
                    (_, true) => self.b.ins().srem(a, safe),
                    (_, false) => self.b.ins().urem(a, safe),
                };
                let on_zero =
                    if op == Div { self.b.ins().iconst(ty, crate::ir::literal::width_mask(elem) as i64) } else { a };
                self.b.ins().select(zero_div, on_zero, q)
            }
            ShiftLeft | ShiftRightLogical | ShiftRightArithmetic if !a_vec => {
                let in_range = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, c, width);
                let (shifted, fallback) = match op {
                    ShiftLeft => (self.b.ins().ishl(a, c), self.b.ins().iconst(ty, 0)),
                    ShiftRightLogical => (self.b.ins().ushr(a, c), self.b.ins().iconst(ty, 0)),
                    _ => (self.b.ins().sshr(a, c), self.b.ins().sshr_imm_s(a, width - 1)),
                };
                self.b.ins().select(in_range, shifted, fallback)
            }
            _ => {
                self.fail(format!("{} on {elem}", op.hlo_name()));
                a
            }
        }
    }

    fn compare(&mut self, dir: CmpDir, total: bool, elem: ElementType, a: Value, c: Value) -> Value {
        if elem.is_float() && !total {
            let cc = match dir {
                CmpDir::Eq => FloatCC::Equal,
                CmpDir::Ne => FloatCC::NotEqual,
                CmpDir::Lt => FloatCC::LessThan,
                CmpDir::Le => FloatCC::LessThanOrEqual,
                CmpDir::Gt => FloatCC::GreaterThan,
                CmpDir::Ge => FloatCC::GreaterThanOrEqual,
            };
            return self.b.ins().fcmp(cc, a, c);
        }
        let (a, c, signed) = if elem.is_float() {
            // Total order: the bits as a signed integer, negatives with their magnitude
            // bits flipped.
            let fty = self.b.func.dfg.value_type(a);
            let ity = fty.as_int();
            let key = |s: &mut Self, v: Value| {
                let bits = s.b.ins().bitcast(ity, if fty.is_vector() { lane_order() } else { MemFlagsData::new() }, v);
                let top = s.b.ins().iconst(types::I32, ity.lane_bits() as i64 - 1);
                let one = s.b.ins().iconst(types::I32, 1);
                let sign = s.b.ins().sshr(bits, top);
                let mag = s.b.ins().ushr(sign, one);
                s.b.ins().bxor(bits, mag)
            };
            (key(self, a), key(self, c), true)
        } else {
            (a, c, elem.is_signed_int())
        };
        let cc = match (dir, signed) {
            (CmpDir::Eq, _) => IntCC::Equal,
            (CmpDir::Ne, _) => IntCC::NotEqual,
            (CmpDir::Lt, true) => IntCC::SignedLessThan,
            (CmpDir::Le, true) => IntCC::SignedLessThanOrEqual,
            (CmpDir::Gt, true) => IntCC::SignedGreaterThan,
            (CmpDir::Ge, true) => IntCC::SignedGreaterThanOrEqual,
            (CmpDir::Lt, false) => IntCC::UnsignedLessThan,
            (CmpDir::Le, false) => IntCC::UnsignedLessThanOrEqual,
            (CmpDir::Gt, false) => IntCC::UnsignedGreaterThan,
            (CmpDir::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        };
        self.b.ins().icmp(cc, a, c)
    }

    fn convert(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
        let (fty, tty) = (reg(from), reg(to));
        if to.is_pred() {
            return if from.is_float() {
                let z = if fty == types::F64 { self.b.ins().f64const(0.0) } else { self.b.ins().f32const(0.0) };
                self.b.ins().fcmp(FloatCC::NotEqual, v, z)
            } else {
                self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0)
            };
        }
        if !from.is_float() && !to.is_float() {
            // Integer (or pred) to integer: extend by the source's signedness, or wrap.
            let from_bits = fty.bits();
            let to_bits = tty.bits();
            return if to_bits == from_bits {
                v
            } else if to_bits < from_bits {
                self.b.ins().ireduce(tty, v)
            } else if from.is_signed_int() {
                self.b.ins().sextend(tty, v)
            } else {
                self.b.ins().uextend(tty, v)
            };
        }
        if !from.is_float() {
            // Integer to float: widen narrow integers first (Cranelift converts from 32/64).
            let w = if fty.bits() < 32 {
                if from.is_signed_int() {
                    self.b.ins().sextend(types::I32, v)
                } else {
                    self.b.ins().uextend(types::I32, v)
                }
            } else {
                v
            };
            let f = if from.is_signed_int() {
                self.b.ins().fcvt_from_sint(tty, w)
            } else {
                self.b.ins().fcvt_from_uint(tty, w)
            };
            return self.narrow(to, f);
        }
        if to.is_float() {
            let f = match (fty == types::F64, tty == types::F64) {
                (true, true) | (false, false) => v,
                (false, true) => self.b.ins().fpromote(types::F64, v),
                (true, false) => self.b.ins().fdemote(types::F32, v),
            };
            return if to == from { f } else { self.narrow(to, f) };
        }
        // Float to integer: truncate, saturate, NaN -> 0.
        let signed = to.is_signed_int();
        if tty.bits() >= 32 {
            return if signed { self.b.ins().fcvt_to_sint_sat(tty, v) } else { self.b.ins().fcvt_to_uint_sat(tty, v) };
        }
        let wide = if signed {
            self.b.ins().fcvt_to_sint_sat(types::I32, v)
        } else {
            self.b.ins().fcvt_to_uint_sat(types::I32, v)
        };
        let bits = tty.bits();
        let clamped = if signed {
            let lo = self.b.ins().iconst(types::I32, -(1i64 << (bits - 1)));
            let hi = self.b.ins().iconst(types::I32, (1i64 << (bits - 1)) - 1);
            let t = self.b.ins().smax(wide, lo);
            self.b.ins().smin(t, hi)
        } else {
            let hi = self.b.ins().iconst(types::I32, (1i64 << bits) - 1);
            self.b.ins().umin(wide, hi)
        };
        self.b.ins().ireduce(tty, clamped)
    }

    fn bitcast_convert(&mut self, from: ElementType, to: ElementType, v: Value) -> Value {
        if from == to {
            return v;
        }
        if from.is_pred() || to.is_pred() {
            self.fail(format!("bitcast-convert {from} -> {to}"));
            return v;
        }
        // f16/bf16 live widened in f32 registers: go through their 16-bit patterns.
        let bits = match from {
            ElementType::F16 | ElementType::BF16 => self.half_bits(from, v),
            _ if reg(from) == reg(to) => return v,
            _ => v,
        };
        match to {
            ElementType::F16 | ElementType::BF16 => self.half_from_bits(to, bits),
            _ if self.b.func.dfg.value_type(bits) == reg(to) => bits,
            _ => self.b.ins().bitcast(reg(to), MemFlagsData::new(), bits),
        }
    }

    /// The 16-bit pattern (as i16) of an f16/bf16 value held in an f32 register.
    fn half_bits(&mut self, elem: ElementType, val: Value) -> Value {
        if elem == ElementType::F16 {
            let bits = if self.inline_half {
                half_floats::f32_to_f16_bits(&mut self.b, val)
            } else {
                self.call("hs_f32_to_f16", &[val])
            };
            self.b.ins().ireduce(types::I16, bits)
        } else {
            // Already rounded to bf16: its bits are the f32's top half.
            let bits = self.b.ins().bitcast(types::I32, MemFlagsData::new(), val);
            let hi = self.b.ins().ushr_imm_u(bits, 16);
            self.b.ins().ireduce(types::I16, hi)
        }
    }

    /// An f16/bf16 value (widened to f32) from its 16-bit pattern (an i16).
    fn half_from_bits(&mut self, elem: ElementType, bits: Value) -> Value {
        let w = self.b.ins().uextend(types::I32, bits);
        if elem == ElementType::F16 {
            if self.inline_half {
                half_floats::f16_bits_to_f32(&mut self.b, w)
            } else {
                self.call("hs_f16_to_f32", &[w])
            }
        } else {
            let hi = self.b.ins().ishl_imm_u(w, 16);
            self.b.ins().bitcast(types::F32, MemFlagsData::new(), hi)
        }
    }
}
