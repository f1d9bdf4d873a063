//! Compiling a module for the CPU: plan it, JIT-compile each elemental kernel with
//! Cranelift (a kernel the emitter cannot handle becomes opaque, with the reason), and
//! compile while and conditional computations as plans of their own.

use super::{codegen, helpers, Code, CpuExecutable, KernelFn};
use crate::ir::{CompId, Computation, Instruction, Loc, Module};
use crate::kernel::{self, KernelBody};
use cranelift_jit::{JITBuilder, JITModule};
use std::collections::HashMap;

// The C library's math functions (the kernels call them by these names, so that object
// files link with `-lm`). The process links libm already (std uses it).
extern "C" {
    fn exp(x: f64) -> f64;
    fn expm1(x: f64) -> f64;
    fn log(x: f64) -> f64;
    fn log1p(x: f64) -> f64;
    fn tanh(x: f64) -> f64;
    fn sin(x: f64) -> f64;
    fn cos(x: f64) -> f64;
    fn tan(x: f64) -> f64;
    fn erf(x: f64) -> f64;
    fn cbrt(x: f64) -> f64;
    fn atan2(y: f64, x: f64) -> f64;
    fn pow(x: f64, y: f64) -> f64;
    fn fmod(x: f64, y: f64) -> f64;
    fn fmodf(x: f32, y: f32) -> f32;
}

/// The addresses of [`super::math::C_FUNCTIONS`], by name.
pub(crate) fn libm_symbols() -> Vec<(&'static str, *const u8)> {
    let table: [(&'static str, *const u8); 14] = [
        ("exp", exp as *const u8),
        ("expm1", expm1 as *const u8),
        ("log", log as *const u8),
        ("log1p", log1p as *const u8),
        ("tanh", tanh as *const u8),
        ("sin", sin as *const u8),
        ("cos", cos as *const u8),
        ("tan", tan as *const u8),
        ("erf", erf as *const u8),
        ("cbrt", cbrt as *const u8),
        ("atan2", atan2 as *const u8),
        ("pow", pow as *const u8),
        ("fmod", fmod as *const u8),
        ("fmodf", fmodf as *const u8),
    ];
    debug_assert!(table.iter().map(|t| t.0).eq(super::math::C_FUNCTIONS.iter().map(|c| c.0)));
    table.to_vec()
}

/// Compiles `module` (normally after simplification and fusion).
pub fn compile(module: &Module) -> Result<CpuExecutable, String> {
    compile_computation(module, module.entry, 0)
}

/// Nesting of while loops beyond which bodies are interpreted instead.
const MAX_DEPTH: usize = 16;


fn compile_computation(module: &Module, comp_id: CompId, depth: usize) -> Result<CpuExecutable, String> {
    let mut plan = kernel::plan_computation(module, comp_id)?;
    let mut builder = JITBuilder::with_flags(&[("opt_level", "speed")], cranelift_module::default_libcall_names())
        .map_err(|e| format!("cannot set up the JIT: {e}"))?;
    for &(name, addr) in &libm_symbols() {
        builder.symbol(name, addr);
    }
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
        let (e, n_inputs) = match &k.body {
            KernelBody::Elemental(e) => (e, k.inputs.len()),
            KernelBody::Sort(s) => (&s.comparator, s.elems.len() * 2),
            KernelBody::Scatter(s) => (&s.combiner, s.elems.len() * 2),
            _ => continue,
        };
        {
            match codegen::emit(&mut jit, &helper_ids, e, &format!("kernel{i}"), n_inputs) {
                Ok(emitted) => {
                    let work = e.space.iter().map(|&d| d.max(0) as usize).product();
                    func_ids.insert(i, (emitted.id, emitted.par_extent, work));
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
                let (id, par_extent, work) = func_ids[&i];
                let ptr = jit.get_finalized_function(id);
                // SAFETY: emitted with signature `fn(*const *mut u8, i64, i64)` by `codegen::emit`.
                let f = unsafe { std::mem::transmute::<*const u8, KernelFn>(ptr) };
                Code::Native { f, par_extent, work }
            }
            KernelBody::Dot(spec) => Code::Dot(spec.clone()),
            KernelBody::Sort(spec) => {
                let ptr = jit.get_finalized_function(func_ids[&i].0);
                // SAFETY: emitted with signature `fn(*const *mut u8, i64, i64)` by `codegen::emit` (a scalar kernel: range 0..1).
                let cmp = unsafe { std::mem::transmute::<*const u8, KernelFn>(ptr) };
                Code::Sort { spec: spec.clone(), cmp }
            }
            KernelBody::Scatter(spec) => {
                let ptr = jit.get_finalized_function(func_ids[&i].0);
                // SAFETY: emitted with signature `fn(*const *mut u8, i64, i64)` by `codegen::emit` (a scalar kernel: range 0..1).
                let combine = unsafe { std::mem::transmute::<*const u8, KernelFn>(ptr) };
                Code::Scatter { spec: spec.clone(), combine }
            }
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
    Ok(CpuExecutable { plan, code, module: wrapped, listings, jit: Some(jit), arena: Default::default() })
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

