//! The CPU target: the kernel plan compiled to native code with Cranelift (loop and
//! reduction kernels), dots through the `gemm` crate, and the reference interpreter for
//! opaque kernels, so that every module runs.
//!
//! `compile` plans the module ([`crate::kernel::plan`]), JIT-compiles each elemental
//! kernel (a kernel whose body the emitter cannot handle is interpreted instead, with the
//! reason recorded) and returns a [`CpuExecutable`]. `run` executes the kernels in
//! program order on byte buffers. Timing is the caller's business (this crate reads no
//! clock): [`CpuExecutable::run_with`] wraps each kernel's execution in a callback.
//! A while loop or a conditional runs from a small runtime here, its computations
//! compiled as plans of their own; everything else the plan calls opaque (sort, scatter,
//! gather, convolution, dynamic slices, ...) runs in the interpreter on values decoded
//! from the buffers.
//!
//! Feature `cpu` (native only): the default build of this crate stays wasm32-clean and
//! does not compile Cranelift at all. CLIF text and machine-code listings of each kernel
//! are kept ([`CpuExecutable::clif`], [`CpuExecutable::asm`]) for the explorer.
//!
//! Not yet: SIMD vectors, threads, a compilation cache, AOT objects, inline
//! transcendental approximations (they call `helpers` now), sort comparators
//! compiled (issue 4).

mod codegen;
mod dot;
pub mod helpers;

use crate::interp::Interpreter;
use crate::ir::{CompId, Computation, Instruction, Literal, Loc, Module, Value};
use crate::kernel::{self, BufferId, KernelBody, KernelKind, KernelPlan, ValueBufs};
use cranelift_jit::{JITBuilder, JITModule};
use std::collections::HashMap;

/// A compiled module.
pub struct CpuExecutable {
    plan: KernelPlan,
    /// Per kernel: its compiled entry point, or how it runs otherwise.
    code: Vec<Code>,
    /// The module with one wrapper computation per opaque kernel (the interpreter runs
    /// those).
    module: Module,
    /// Per kernel: its CLIF and machine code listing (empty when not JIT-compiled).
    listings: Vec<(String, String)>,
    /// Owns the machine code; freed on drop.
    jit: Option<JITModule>,
}

impl Drop for CpuExecutable {
    fn drop(&mut self) {
        self.code.clear();
        if let Some(jit) = self.jit.take() {
            // SAFETY: the only pointers into this code were in `self.code`, just dropped,
            // and no kernel is running (`run` borrows `self`).
            unsafe { jit.free_memory() };
        }
    }
}

enum Code {
    Native(extern "C" fn(*const *mut u8)),
    Dot(kernel::DotSpec),
    Interpret { comp: CompId, operands: Vec<ValueBufs>, result: ValueBufs },
    While { cond: Box<CpuExecutable>, body: Box<CpuExecutable>, operands: Vec<ValueBufs>, result: ValueBufs },
    Case { branches: Vec<CpuExecutable>, branch_operands: Vec<Vec<u32>>, operands: Vec<ValueBufs>, result: ValueBufs },
}

/// A per-kernel wrapper: gets the kernel and its execution, must run it once.
pub type Wrap<'w> = dyn FnMut(&KernelInfo, &mut dyn FnMut() -> Result<(), String>) -> Result<(), String> + 'w;

/// Runs custom calls the interpreter does not know.
pub type CustomCalls<'h> = dyn FnMut(&Instruction, &[Value]) -> Result<Value, String> + 'h;

/// What a timing callback learns about the kernel it wraps.
pub struct KernelInfo<'a> {
    pub index: usize,
    pub name: &'a str,
    pub kind: &'a KernelKind,
}

/// Compiles `module` (normally after simplification and fusion).
pub fn compile(module: &Module) -> Result<CpuExecutable, String> {
    compile_computation(module, module.entry, 0)
}

/// Nesting of while loops beyond which bodies are interpreted instead.
const MAX_DEPTH: usize = 16;

/// Most iterations of one while loop before the run fails (never hang), as the
/// interpreter's budget.
const MAX_ITERATIONS: u64 = 10_000_000;

fn compile_computation(module: &Module, comp_id: CompId, depth: usize) -> Result<CpuExecutable, String> {
    let mut plan = kernel::plan_computation(module, comp_id)?;
    let mut builder = JITBuilder::with_flags(&[("opt_level", "speed")], cranelift_module::default_libcall_names())
        .map_err(|e| format!("cannot set up the JIT: {e}"))?;
    builder.symbol("hs_unary_f64", helpers::hs_unary_f64 as *const u8);
    builder.symbol("hs_binary_f64", helpers::hs_binary_f64 as *const u8);
    builder.symbol("hs_round_f16", helpers::hs_round_f16 as *const u8);
    builder.symbol("hs_round_bf16", helpers::hs_round_bf16 as *const u8);
    builder.symbol("hs_f16_to_f32", helpers::hs_f16_to_f32 as *const u8);
    builder.symbol("hs_f32_to_f16", helpers::hs_f32_to_f16 as *const u8);
    let mut jit = JITModule::new(builder);
    let helper_ids = codegen::Helpers::declare(&mut jit)?;

    // Emit every elemental kernel; a source whose kernel fails becomes opaque as a whole.
    let mut func_ids = HashMap::new();
    let mut listings: HashMap<usize, (String, String)> = HashMap::new();
    let mut failed: HashMap<crate::ir::InstId, String> = HashMap::new();
    for (i, k) in plan.kernels.iter().enumerate() {
        if let KernelBody::Elemental(e) = &k.body {
            match codegen::emit(&mut jit, &helper_ids, e, &format!("kernel{i}"), k.inputs.len()) {
                Ok(emitted) => {
                    func_ids.insert(i, emitted.id);
                    listings.insert(i, (emitted.clif, emitted.asm));
                }
                Err(reason) => {
                    failed.entry(k.source).or_insert(reason);
                }
            }
        }
    }
    jit.finalize_definitions().map_err(|e| format!("cannot finalize machine code: {e}"))?;
    if !failed.is_empty() {
        let mut kernels = Vec::new();
        let mut done = std::collections::HashSet::new();
        let old = std::mem::take(&mut plan.kernels);
        let mut new_ids = HashMap::new();
        let mut new_listings = HashMap::new();
        for (i, k) in old.into_iter().enumerate() {
            match failed.get(&k.source) {
                None => {
                    if let Some(&id) = func_ids.get(&i) {
                        new_ids.insert(kernels.len(), id);
                    }
                    if let Some(l) = listings.remove(&i) {
                        new_listings.insert(kernels.len(), l);
                    }
                    kernels.push(k);
                }
                Some(reason) => {
                    if done.insert(k.source) {
                        kernels.push(kernel::opaque_kernel(module, comp_id, &plan.values, k.source, format!("codegen: {reason}"))?);
                    }
                }
            }
        }
        plan.kernels = kernels;
        func_ids = new_ids;
        listings = new_listings;
    }

    let mut wrapped = module.clone();
    let mut code = Vec::with_capacity(plan.kernels.len());
    for (i, k) in plan.kernels.iter().enumerate() {
        code.push(match &k.body {
            KernelBody::Elemental(_) => {
                let ptr = jit.get_finalized_function(func_ids[&i]);
                // SAFETY: emitted with signature `fn(*const *mut u8)` by `codegen::emit`.
                Code::Native(unsafe { std::mem::transmute::<*const u8, extern "C" fn(*const *mut u8)>(ptr) })
            }
            KernelBody::Dot(spec) => Code::Dot(spec.clone()),
            KernelBody::Opaque { inst, operands, result } => {
                let comp = wrapper(&mut wrapped, comp_id, *inst);
                Code::Interpret { comp, operands: operands.clone(), result: result.clone() }
            }
            KernelBody::While { cond, body, operands, result } if depth < MAX_DEPTH => Code::While {
                cond: Box::new(compile_computation(module, *cond, depth + 1)?),
                body: Box::new(compile_computation(module, *body, depth + 1)?),
                operands: operands.clone(),
                result: result.clone(),
            },
            KernelBody::Case { branches, branch_operands, operands, result } if depth < MAX_DEPTH => Code::Case {
                branches: branches.iter().map(|&b| compile_computation(module, b, depth + 1)).collect::<Result<_, _>>()?,
                branch_operands: branch_operands.clone(),
                operands: operands.clone(),
                result: result.clone(),
            },
            KernelBody::While { operands, result, .. } | KernelBody::Case { operands, result, .. } => {
                let comp = wrapper(&mut wrapped, comp_id, k.source);
                Code::Interpret { comp, operands: operands.clone(), result: result.clone() }
            }
        });
    }
    let listings = (0..plan.kernels.len()).map(|i| listings.remove(&i).unwrap_or_default()).collect();
    Ok(CpuExecutable { plan, code, module: wrapped, listings, jit: Some(jit) })
}

/// The passes run before compiling for the CPU: the default pipeline without layout
/// assignment (the kernel plan reads logical row-major arrays; a transpose turned into a
/// layout-changing bitcast would only be interpreted).
pub fn optimize(module: &Module) -> Result<Module, String> {
    use crate::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
    let mut m = module.clone();
    let passes = parse_pipeline_spec("default,-layout-assignment").map_err(|e| e.to_string())?;
    let config = PipelineConfig { passes, snapshots: false, ..Default::default() };
    run_pipeline(&mut m, &config).map_err(|e| e.to_string())?;
    Ok(m)
}

/// A computation running just instruction `id` of `comp_id` on parameters of its
/// operands' types.
fn wrapper(module: &mut Module, comp_id: CompId, id: crate::ir::InstId) -> CompId {
    let from = module.comp(comp_id);
    let inst: Instruction = from.inst(id).clone();
    let types: Vec<_> = inst.operands.iter().map(|&o| from.inst(o).ty.clone()).collect();
    let mut comp = Computation::new(format!("{}.interpreted", inst.name));
    let params: Vec<_> =
        types.into_iter().enumerate().map(|(i, t)| comp.push_param(format!("p{i}"), t, Loc::default())).collect();
    let mut copy = inst.clone();
    copy.operands = params;
    comp.root = comp.push(copy);
    module.add_computation(comp)
}

/// An 8-byte aligned byte buffer (GEMM reads it as f32/f64).
struct Buf {
    words: Vec<u64>,
    len: usize,
}

impl Buf {
    fn new(len: usize) -> Buf {
        Buf { words: vec![0; len.div_ceil(8).max(1)], len }
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len) }
    }
}

impl CpuExecutable {
    pub fn plan(&self) -> &KernelPlan {
        &self.plan
    }

    /// Kernel `i`'s Cranelift IR, if it was JIT-compiled.
    pub fn clif(&self, i: usize) -> Option<&str> {
        self.listings.get(i).map(|l| l.0.as_str()).filter(|s| !s.is_empty())
    }

    /// Kernel `i`'s machine code listing, if it was JIT-compiled.
    pub fn asm(&self, i: usize) -> Option<&str> {
        self.listings.get(i).map(|l| l.1.as_str()).filter(|s| !s.is_empty())
    }

    /// Runs the module on `args` (one value per entry parameter).
    pub fn run(&self, args: &[Value]) -> Result<Value, String> {
        self.run_with(args, &mut |_, exec| exec())
    }

    /// Like `run`, calling `wrap(kernel, exec)` for each kernel; `wrap` must call `exec`
    /// once (to time it, for instance) and return its result.
    pub fn run_with(&self, args: &[Value], wrap: &mut Wrap) -> Result<Value, String> {
        self.execute(args, wrap, None)
    }

    /// Like `run`, with a hook for the custom calls the interpreter does not know (the
    /// conformance corpus's `check.*` ops), as `Interpreter::with_custom_call_hook`.
    pub fn run_with_custom_calls(&self, args: &[Value], hook: &mut CustomCalls) -> Result<Value, String> {
        self.execute(args, &mut |_, exec| exec(), Some(hook))
    }

    fn execute(&self, args: &[Value], wrap: &mut Wrap, mut hook: Option<&mut CustomCalls>) -> Result<Value, String> {
        if args.len() != self.plan.params.len() {
            return Err(format!("the module takes {} arguments, got {}", self.plan.params.len(), args.len()));
        }
        let mut bufs: Vec<Buf> = self.plan.buffers.values().map(|b| Buf::new(b.shape.byte_size())).collect();
        let comp = self.module.comp(self.plan.comp);
        for (i, (v, p)) in args.iter().zip(&self.plan.params).enumerate() {
            let want = &comp.inst(comp.params[i]).ty;
            if !v.ty().same_type(want) {
                return Err(format!("argument {i} is {}, the parameter is {want}", v.ty()));
            }
            write_value(&mut bufs, p, v.clone());
        }
        for (b, l) in &self.plan.constants {
            bufs[b.index()].bytes_mut().copy_from_slice(&l.to_le_bytes());
        }
        for (i, (k, code)) in self.plan.kernels.iter().zip(&self.code).enumerate() {
            let info = KernelInfo { index: i, name: &k.name, kind: &k.kind };
            let mut exec = || -> Result<(), String> {
                match code {
                    Code::Native(f) => {
                        let mut ptrs: Vec<*mut u8> = Vec::with_capacity(k.inputs.len() + k.outputs.len());
                        for &b in k.inputs.iter().chain(&k.outputs) {
                            ptrs.push(bufs[b.index()].words.as_mut_ptr() as *mut u8);
                        }
                        f(ptrs.as_ptr());
                        Ok(())
                    }
                    Code::Dot(spec) => {
                        let out = k.outputs[0];
                        let result = dot::run(spec, &self.plan, bufs[k.inputs[0].index()].bytes(), bufs[k.inputs[1].index()].bytes(), k.inputs[0], k.inputs[1])?;
                        bufs[out.index()].bytes_mut().copy_from_slice(&result);
                        Ok(())
                    }
                    Code::Interpret { comp, operands, result } => {
                        let vals: Vec<Value> = operands.iter().map(|o| read_value(&self.plan, &bufs, o)).collect::<Result<_, _>>()?;
                        let mut interp = Interpreter::new(&self.module);
                        if let Some(h) = hook.as_deref_mut() {
                            interp = interp.with_custom_call_hook(move |i, a| h(i, a));
                        }
                        let v = interp
                            .call(*comp, &vals)
                            .map_err(|e| format!("%{}: {}", e.inst, e.message))?;
                        write_value(&mut bufs, result, v);
                        Ok(())
                    }
                    Code::While { cond, body, operands, result } => {
                        let mut state: Vec<Value> =
                            operands.iter().map(|o| read_value(&self.plan, &bufs, o)).collect::<Result<_, _>>()?;
                        let mut iterations = 0u64;
                        loop {
                            let go = cond.execute(&state, &mut |_, exec| exec(), hook.as_deref_mut())?;
                            match go.as_array().map(|l| l.get(0)) {
                                Some(crate::ir::Scalar::Pred(true)) => {}
                                Some(crate::ir::Scalar::Pred(false)) => break,
                                _ => return Err("the while condition is not a pred scalar".into()),
                            }
                            iterations += 1;
                            if iterations > MAX_ITERATIONS {
                                return Err(format!("gave up after {MAX_ITERATIONS} loop iterations (is the loop infinite?)"));
                            }
                            let next = body.execute(&state, &mut |_, exec| exec(), hook.as_deref_mut())?;
                            state = if state.len() == 1 {
                                vec![next]
                            } else {
                                match next {
                                    Value::Tuple(vs) => vs,
                                    _ => return Err("the while body must return a tuple".into()),
                                }
                            };
                        }
                        let v = if state.len() == 1 { state.pop().expect("one value") } else { Value::Tuple(state) };
                        write_value(&mut bufs, result, v);
                        Ok(())
                    }
                    Code::Case { branches, branch_operands, operands, result } => {
                        let selector = read_value(&self.plan, &bufs, &operands[0])?;
                        let last = branches.len() - 1;
                        let chosen = match selector.as_array().map(|l| l.get(0)) {
                            Some(crate::ir::Scalar::Pred(p)) => usize::from(!p).min(last),
                            Some(crate::ir::Scalar::S(i)) => usize::try_from(i).map_or(last, |i| i.min(last)),
                            Some(crate::ir::Scalar::U(i)) => usize::try_from(i).map_or(last, |i| i.min(last)),
                            _ => return Err("the conditional's selector is not an integer or pred".into()),
                        };
                        let args: Vec<Value> = branch_operands[chosen]
                            .iter()
                            .map(|&k| {
                                let at = operands.get(k as usize + 1).ok_or("a branch operand out of range")?;
                                read_value(&self.plan, &bufs, at)
                            })
                            .collect::<Result<_, _>>()?;
                        let v = branches[chosen].execute(&args, &mut |_, exec| exec(), hook.as_deref_mut())?;
                        write_value(&mut bufs, result, v);
                        Ok(())
                    }
                }
            };
            wrap(&info, &mut exec).map_err(|e| format!("kernel {}: {e}", k.name))?;
        }
        read_value(&self.plan, &bufs, &self.plan.result)
    }
}

use cranelift_entity::EntityRef;

fn write_value(bufs: &mut [Buf], at: &ValueBufs, v: Value) {
    match (at, v) {
        (ValueBufs::Array(b), Value::Array(l)) => bufs[b.index()].bytes_mut().copy_from_slice(&l.to_le_bytes()),
        (ValueBufs::Tuple(ps), Value::Tuple(vs)) => {
            for (p, v) in ps.iter().zip(vs) {
                write_value(bufs, p, v);
            }
        }
        _ => {}
    }
}

fn read_value(plan: &KernelPlan, bufs: &[Buf], at: &ValueBufs) -> Result<Value, String> {
    Ok(match at {
        ValueBufs::Array(b) => Value::Array(read_buffer(plan, bufs, *b)?),
        ValueBufs::Tuple(ps) => Value::Tuple(ps.iter().map(|p| read_value(plan, bufs, p)).collect::<Result<_, _>>()?),
        ValueBufs::Token => Value::Token,
    })
}

fn read_buffer(plan: &KernelPlan, bufs: &[Buf], b: BufferId) -> Result<Literal, String> {
    let shape = plan.buffers[b].shape.clone();
    Literal::from_le_bytes(shape, bufs[b.index()].bytes()).ok_or_else(|| format!("buffer {b} has the wrong size"))
}
