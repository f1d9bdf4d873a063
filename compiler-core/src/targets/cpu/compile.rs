//! Compiling a module for the CPU: plan it, JIT-compile each elemental kernel with
//! Cranelift (a kernel the emitter cannot handle becomes opaque, with the reason), and
//! compile while and conditional computations as plans of their own.
//!
//! Loading an artifact ([`load_artifact`]) takes the module and every computation's
//! final plan (refusals already turned opaque, arena assigned) from the artifact's binary
//! sections, so it neither parses, verifies nor plans: it checks the plan against the
//! module and each kernel's code against the plan (fingerprints), hands the machine code
//! to the JIT as bytes and builds the executable the same way a compile does
//! (`assemble`).

use super::artifact::{self, Artifact, CompArtifact, KernelCode};
use super::code_shape::CodeShape;
use super::{codegen, helpers, runtime, Code, CpuExecutable, KernelFn};
use crate::ir::{CompId, Module};
use crate::kernel::{self, KernelBody, KernelPlan};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module as _};
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;

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

/// Choices that change the machine code a compile makes; they travel with each compile
/// (no process-wide switch), and an artifact records them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// Strip-mine vector loops and row reductions over f32 that need exp, tanh, ...: in
    /// blocks through native functions with wider vectors than Cranelift's
    /// ([`super::block_math`]); the same bits either way. On by default; off for
    /// comparisons (`hloscope bench --no-block-math`) and tests.
    pub block_math: bool,
    /// Convert f16/bf16 with inline code (as AOT objects always do) instead of calling
    /// the Rust helpers (the default: `half` uses the CPU's F16C instructions, which
    /// Cranelift does not emit, and is faster). The same bits either way; for tests.
    pub inline_half_floats: bool,
    /// Keep each kernel's listings: its CLIF as text and Cranelift's machine-code
    /// listing ([`CpuExecutable::clif`] and [`CpuExecutable::asm`], the explorer's
    /// kernels pane, `hloscope compile --emit clif|asm`). Writing them took a fifth to a
    /// quarter of a compile's instructions, so a caller that only runs the code (`hloscope
    /// bench`) turns them off. On by default. The machine code is the same either way.
    pub listings: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { block_math: true, inline_half_floats: false, listings: true }
    }
}

/// Compiles `module` (normally after simplification and fusion) with the default options.
pub fn compile(module: &Module) -> Result<CpuExecutable, String> {
    compile_with(module, CompileOptions::default())
}

/// Compiles `module` with `options`.
pub fn compile_with(module: &Module, options: CompileOptions) -> Result<CpuExecutable, String> {
    Ok(build(Cow::Borrowed(module), module.entry, 0, options, false)?.0)
}

/// [`compile_with`] of a module the caller is done with: the executable keeps it
/// instead of a copy (a copy of a deep stack's module is a few percent of its compile).
pub fn compile_owned(module: Module, options: CompileOptions) -> Result<CpuExecutable, String> {
    let entry = module.entry;
    Ok(build(Cow::Owned(module), entry, 0, options, false)?.0)
}

/// Compiles `module` (normally after simplification and fusion) and returns, with the
/// executable, its artifact as bytes ([`load_artifact`] turns them back into an
/// executable). The artifact holds the module and every computation's final plan in
/// binary form, so a load runs neither the parser nor the planner.
pub fn compile_to_artifact(module: &Module) -> Result<(CpuExecutable, Vec<u8>), String> {
    compile_to_artifact_with(module, CompileOptions::default())
}

/// [`compile_to_artifact`] with `options` (which the artifact records).
pub fn compile_to_artifact_with(module: &Module, options: CompileOptions) -> Result<(CpuExecutable, Vec<u8>), String> {
    let (exe, entry) = build(Cow::Borrowed(module), module.entry, 0, options, true)?;
    let entry = entry.ok_or("no artifact was made")?;
    let isa = format!("{} | {}", isa_description(exe.jit.as_ref().ok_or("no machine code")?), options_text(options));
    let art = Artifact { compiler: artifact::compiler_version(), isa, module: artifact::encode(module)?, entry };
    Ok((exe, art.to_bytes()))
}

/// Loads an artifact made by [`compile_to_artifact`] without compiling anything:
/// corrupt, truncated or stale bytes (another compiler version, another format, another
/// CPU, a plan that does not fit its module or code) give an error saying why.
pub fn load_artifact(bytes: &[u8]) -> Result<CpuExecutable, String> {
    let art = Artifact::from_bytes(bytes)?;
    let module: Module = artifact::decode("module", &art.module)?;
    if module.comps.get(module.entry).is_none() {
        return Err("the artifact's module has no entry computation".into());
    }
    // The stored plans are sized from the module: the same check as a compile's.
    crate::limits::check_module(&module, &crate::limits::Limits::default()).map_err(|e| e.to_string())?;
    let isa = art.isa;
    let entry = module.entry;
    load(module, entry, 0, art.entry, &isa)
}

/// The CPU the JIT compiles for: the triple and every Cranelift flag.
fn isa_description(jit: &JITModule) -> String {
    let isa = jit.isa();
    let flags: Vec<String> = isa.isa_flags().iter().map(|v| v.to_string()).collect();
    format!("{} | {} | {}", isa.triple(), isa.flags(), flags.join(","))
}

/// The code options as an artifact records them, after the CPU's description.
fn options_text(o: CompileOptions) -> String {
    format!("block_math={} inline_half={} listings={}", o.block_math, o.inline_half_floats, o.listings)
}

/// The Rust helpers a JIT kernel may import (f16/bf16 conversions), with their addresses.
pub(crate) fn helper_symbols() -> [(&'static str, *const u8); 4] {
    [
        ("hs_round_f16", helpers::hs_round_f16 as *const u8),
        ("hs_round_bf16", helpers::hs_round_bf16 as *const u8),
        ("hs_f16_to_f32", helpers::hs_f16_to_f32 as *const u8),
        ("hs_f32_to_f16", helpers::hs_f32_to_f16 as *const u8),
    ]
}

fn new_jit() -> Result<JITModule, String> {
    let flags = [("opt_level", "speed"), ("enable_verifier", super::CRANELIFT_VERIFIER)];
    let mut builder = JITBuilder::with_flags(&flags, cranelift_module::default_libcall_names())
        .map_err(|e| format!("cannot set up the JIT: {e}"))?;
    for (name, ptr) in helper_symbols().into_iter().chain(libm_symbols()).chain(super::block_math::block_symbols()) {
        builder.symbol(name, ptr);
    }
    Ok(JITModule::new(builder))
}

use crate::targets::control::MAX_DEPTH;

/// A fingerprint of a kernel as planned: what its machine code assumes — its buffers,
/// kind and the shape of its loops (the function's ABI), not its whole expression (the
/// compiler version and the stored plan already pin that down; this catches code
/// attached to the wrong kernel, cheaply).
fn kernel_fingerprint(k: &kernel::Kernel) -> u64 {
    artifact::hash_debug(&(&k.name, &k.inputs, &k.outputs, &k.kind, loops_fingerprint(k)))
}

/// A fingerprint of what a kernel's function assumes whatever its buffers: its kind and
/// the shape of its loops. Kernels sharing code must agree on it.
fn loops_fingerprint(k: &kernel::Kernel) -> u64 {
    let loops = codegen::compiled_function(k).map(|(e, n_inputs)| {
        let outputs: Vec<_> = e.outputs.iter().map(|o| (o.inner, o.elem)).collect();
        (&e.space, &e.reduced, &e.input_elems, outputs, n_inputs)
    });
    artifact::hash_debug(&(&k.kind, loops))
}

/// Compiles `functions` with Cranelift on the process's thread pool (its threads are
/// started once and stay on cores of their own: a thread spawned per compile often
/// waited a millisecond or more for a core on these 2-core machines), the largest
/// functions first so that no long compile starts last; the outcomes in the given order.
fn compile_all(
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    functions: Vec<&mut codegen::Pending>,
) -> Vec<Result<(), String>> {
    if functions.len() < 2 || crate::targets::pool::threads() < 2 {
        return functions.into_iter().map(|f| f.compile(isa)).collect();
    }
    let mut largest_first: Vec<usize> = (0..functions.len()).collect();
    largest_first.sort_by_key(|&i| std::cmp::Reverse(functions[i].size()));
    /// A function and, once compiled, the outcome.
    type Slot<'f> = std::sync::Mutex<(&'f mut codegen::Pending, Option<Result<(), String>>)>;
    let slots: Vec<Slot> = functions.into_iter().map(|f| std::sync::Mutex::new((f, None))).collect();
    crate::targets::pool::as_caller(|| {
        crate::targets::pool::run(slots.len(), &|task| {
            let mut slot = slots[largest_first[task]].lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let outcome = slot.0.compile(isa);
            slot.1 = Some(outcome);
        })
    });
    slots
        .into_iter()
        .map(|slot| {
            let (_, outcome) = slot.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
            outcome.unwrap_or_else(|| Err("a kernel was not compiled".into()))
        })
        .collect()
}

/// Compiles computation `comp_id`: plans it, emits every kernel Cranelift can take (a
/// source whose kernel fails becomes opaque as a whole), and compiles while and
/// conditional computations on their own. Returns the executable and, when `artifact`
/// is asked for, its artifact (whose encodings and fingerprints a plain compile skips).
fn build(
    owned: Cow<'_, Module>,
    comp_id: CompId,
    depth: usize,
    options: CompileOptions,
    artifact: bool,
) -> Result<(CpuExecutable, Option<CompArtifact>), String> {
    let module: &Module = &owned;
    let mut plan = kernel::plan_computation(module, comp_id)?;
    let mut jit = new_jit()?;
    let helper_ids = codegen::Helpers::declare(&mut jit)?;
    let comp = module.comp(comp_id);

    let mut emitted: HashMap<usize, (FuncId, KernelCode, KernelText)> = HashMap::default();
    let mut failed: HashMap<crate::ir::InstId, String> = HashMap::default();
    let mut fallbacks = Vec::new();
    // Results never share bytes with another buffer (`kernel::arena`), so a kernel's
    // block functions may write them directly.
    let results: rustc_hash::FxHashSet<_> = plan.result.leaves().into_iter().collect();
    let emit_options = codegen::EmitOptions {
        block_lanes: if options.block_math { super::block_math::native_lanes() } else { 0 },
        inline_half: options.inline_half_floats,
        listings: options.listings,
    };
    // Kernels that are the same code up to their buffers (the layers of a stack) are
    // compiled once: a kernel reads its buffers' addresses from the table it is called
    // with, so the first one's function serves them all. `shared[i]` is that first one.
    let keys: Vec<_> = plan.kernels.iter().map(|k| codegen::code_key(k, &results, emit_options)).collect();
    let firsts = kernel::first_of_same_code(&keys, codegen::CodeKey::bucket);
    drop(keys);
    let mut shared: HashMap<usize, usize> = HashMap::default();
    let mut pending = Vec::new();
    for (i, k) in plan.kernels.iter().enumerate() {
        if firsts[i] != i {
            shared.insert(i, firsts[i]);
            continue;
        }
        if let Some(prepared) = codegen::prepare_kernel(&mut jit, &helper_ids, k, i, &results, emit_options) {
            pending.push((i, prepared));
        }
    }
    // Cranelift's compiles, most of the time spent here, run on every core; the
    // functions are then defined in kernel order.
    let compiled = compile_all(jit.isa(), pending.iter_mut().filter_map(|(_, p)| p.as_mut().ok()).collect());
    let mut compiled = compiled.into_iter();
    let mut unusable: HashMap<usize, String> = HashMap::default();
    for (i, prepared) in pending {
        let k = &plan.kernels[i];
        let finished = prepared.and_then(|p| {
            let (e, n_inputs) = codegen::compiled_function(k).ok_or("a prepared kernel without a function")?;
            let outcome = compiled.next().ok_or("a prepared kernel was not compiled")?;
            p.finish(&mut jit, &helper_ids, e, n_inputs, emit_options, outcome)
        });
        match finished {
            Ok(em) => {
                let code = KernelCode {
                    index: 0,
                    name: String::new(),
                    fingerprint: 0,
                    shares: None,
                    code: em.code,
                    shape: if artifact { artifact::encode(&em.shape)? } else { Vec::new() },
                    clif: String::new(),
                    asm: String::new(),
                };
                let text = KernelText { shape: em.shape, clif: em.clif.into(), asm: em.asm.into(), shares: None };
                emitted.insert(i, (em.id, code, text));
            }
            Err(reason) => {
                unusable.insert(i, reason);
            }
        }
    }
    // A kernel whose code could not be made takes the kernels sharing it along.
    shared.retain(|&i, first| match unusable.get(first) {
        Some(reason) => {
            unusable.insert(i, reason.clone());
            false
        }
        None => true,
    });
    let mut unusable: Vec<(usize, String)> = unusable.into_iter().collect();
    unusable.sort();
    for (i, reason) in unusable {
        let source = plan.kernels[i].source;
        failed.entry(source).or_insert_with(|| {
            fallbacks.push((comp.inst(source).name.clone(), reason.clone()));
            reason
        });
    }
    if !failed.is_empty() {
        // The runs and the artifact use this final plan, its chains and its arena.
        let demoted: HashMap<_, _> =
            failed.into_iter().map(|(inst, reason)| (inst, format!("codegen: {reason}"))).collect();
        let moved = plan.demote_to_opaque(module, &demoted)?;
        (emitted, shared) = renumber_codes(emitted, shared, &moved);
    }
    jit.finalize_definitions().map_err(|e| format!("cannot finalize machine code: {e}"))?;

    let mut kernels = Vec::new();
    let mut funcs = HashMap::default();
    let mut texts: Vec<Option<KernelText>> = Vec::with_capacity(plan.kernels.len());
    for (i, k) in plan.kernels.iter().enumerate() {
        if let Some((id, mut kc, text)) = emitted.remove(&i) {
            funcs.insert(i, id);
            texts.push(Some(text));
            if artifact {
                kc.index = i as u32;
                kc.name = k.name.clone();
                kc.fingerprint = kernel_fingerprint(k);
                if let Some(Some(text)) = texts.last() {
                    (kc.clif, kc.asm) = (text.clif.to_string(), text.asm.to_string());
                }
                kernels.push(kc);
            }
        } else if let Some(&first) = shared.get(&i) {
            // The first kernel of a code comes before the kernels sharing it.
            let (Some(&id), Some(Some(text))) = (funcs.get(&first), texts.get(first)) else {
                return Err(format!("kernel {i} shares the code of kernel {first}, which has none"));
            };
            funcs.insert(i, id);
            texts.push(Some(KernelText { shares: Some(first), ..text.clone() }));
            if artifact {
                kernels.push(KernelCode::sharing(i as u32, k.name.clone(), kernel_fingerprint(k), first as u32));
            }
        } else {
            texts.push(None);
        }
    }
    let stored = if artifact {
        let buffers_fingerprint = artifact::hash_debug(&plan.buffers.values().collect::<Vec<_>>());
        Some((buffers_fingerprint, artifact::encode(&plan)?))
    } else {
        None
    };
    // The computations the plan's control flow runs compile first, in the order
    // `assemble` asks for them, so that the module can move into the executable then.
    let mut children = Vec::new();
    let mut compiled_children = std::collections::VecDeque::new();
    if depth < MAX_DEPTH {
        for k in &plan.kernels {
            let called = match &k.body {
                KernelBody::While { cond, body, .. } => vec![*cond, *body],
                KernelBody::Case { branches, .. } => branches.clone(),
                _ => continue,
            };
            for c in called {
                let (exe, a) = build(Cow::Borrowed(module), c, depth + 1, options, artifact)?;
                children.extend(a);
                compiled_children.push_back((c, exe));
            }
        }
    }
    let exe = assemble(owned.into_owned(), comp_id, depth, plan, jit, &funcs, texts, &mut |c| match compiled_children
        .pop_front()
    {
        Some((compiled, exe)) if compiled == c => Ok(exe),
        _ => Err(format!("computation {c} was not compiled before its kernel")),
    })?;
    let art = stored.map(|(buffers_fingerprint, plan)| CompArtifact {
        buffers_fingerprint,
        fallbacks,
        plan,
        kernels,
        children,
    });
    Ok((exe, art))
}

/// The compiled kernels and the kernels sharing their code, renumbered after a demotion
/// moved the plan's kernels (`moved[i]`: kernel `i`'s new position, `None` when it is
/// gone). When a code's first kernel is gone but kernels sharing it remain, the earliest
/// of those takes the code over: its function was compiled and stays valid.
fn renumber_codes<Code>(
    emitted: HashMap<usize, Code>,
    shared: HashMap<usize, usize>,
    moved: &[Option<usize>],
) -> (HashMap<usize, Code>, HashMap<usize, usize>) {
    let mut sharers: HashMap<usize, Vec<usize>> = HashMap::default();
    for (i, first) in shared {
        if let Some(i) = moved[i] {
            sharers.entry(first).or_default().push(i);
        }
    }
    let mut new_emitted = HashMap::default();
    let mut new_shared = HashMap::default();
    for (first, code) in emitted {
        let mut users = sharers.remove(&first).unwrap_or_default();
        users.sort_unstable();
        let new_first = match moved[first] {
            Some(f) => f,
            None if !users.is_empty() => users.remove(0),
            None => continue,
        };
        new_emitted.insert(new_first, code);
        new_shared.extend(users.into_iter().map(|u| (u, new_first)));
    }
    (new_emitted, new_shared)
}

/// Loads computation `comp_id` of `module` from its artifact `art`, compiled for CPU
/// `isa`: the stored plan is checked against the module and each kernel's machine code
/// against the plan, then handed to a JIT module, which only patches relocations.
fn load(module: Module, comp_id: CompId, depth: usize, art: CompArtifact, isa: &str) -> Result<CpuExecutable, String> {
    let plan: KernelPlan = artifact::decode("plan", &art.plan)?;
    kernel::verify::check_stored(&module, comp_id, &plan)?;
    let mut jit = new_jit()?;
    // The machine code embodies the options it was compiled with; only the CPU must match.
    let here = isa_description(&jit);
    let same_cpu = isa.strip_prefix(here.as_str()).is_some_and(|rest| rest.starts_with(" | block_math="));
    if !same_cpu {
        return Err(format!("compiled for another CPU ({isa}), this one is {here}"));
    }
    codegen::Helpers::declare(&mut jit)?;

    if art.buffers_fingerprint != artifact::hash_debug(&plan.buffers.values().collect::<Vec<_>>()) {
        return Err("stale artifact: the plan's buffers differ".into());
    }
    let elemental: Vec<usize> =
        (0..plan.kernels.len()).filter(|&i| codegen::compiled_function(&plan.kernels[i]).is_some()).collect();
    if elemental.len() != art.kernels.len() {
        return Err(format!(
            "stale artifact: {} compiled kernels, the plan has {}",
            art.kernels.len(),
            elemental.len()
        ));
    }
    let symbols: Vec<String> = elemental.iter().map(|i| format!("kernel{i}")).collect();
    let sig = codegen::signature(&jit);
    let mut ids = Vec::with_capacity(elemental.len());
    for ((&i, kc), symbol) in elemental.iter().zip(&art.kernels).zip(&symbols) {
        let k = &plan.kernels[i];
        if kc.index as usize != i || kc.name != k.name || kc.fingerprint != kernel_fingerprint(k) {
            return Err(format!("stale artifact: kernel {i} ({}) does not match the plan", k.name));
        }
        ids.push(match kc.shares {
            None => Some(jit.declare_function(symbol, Linkage::Local, &sig).map_err(|e| e.to_string())?),
            // Only an earlier compiled kernel with the same loops may lend its code.
            Some(first) => {
                let first = first as usize;
                if first >= i
                    || !elemental.contains(&first)
                    || loops_fingerprint(&plan.kernels[first]) != loops_fingerprint(k)
                {
                    return Err(format!(
                        "stale artifact: kernel {i} ({}) cannot run the code of kernel {first}",
                        k.name
                    ));
                }
                None
            }
        });
    }
    let blocks = super::block_math::block_symbols();
    let helper_names: Vec<&str> = helper_symbols().iter().chain(&blocks).map(|h| h.0).collect();
    let mut funcs = HashMap::default();
    for ((&i, kc), &id) in elemental.iter().zip(&art.kernels).zip(&ids) {
        let (Some(id), None) = (id, kc.shares) else {
            let first = kc.shares.map_or(i, |f| f as usize);
            let id = *funcs.get(&first).ok_or_else(|| format!("stale artifact: kernel {first} has no code for {i}"))?;
            funcs.insert(i, id);
            continue;
        };
        let mut lookup = |s: &str| -> Option<FuncId> {
            if !artifact::known_symbol(s, &helper_names, &symbols) {
                return None;
            }
            match jit.get_name(s) {
                Some(cranelift_module::FuncOrDataId::Func(f)) => Some(f),
                Some(_) => None,
                None if blocks.iter().any(|b| b.0 == s) => {
                    jit.declare_function(s, Linkage::Import, &codegen::block_signature(&jit, s)).ok()
                }
                None if helper_symbols().iter().any(|h| h.0 == s) => {
                    jit.declare_function(s, Linkage::Import, &codegen::helper_signature(&jit, s)?).ok()
                }
                None => {
                    // A C math function: imported with the signature the code assumes.
                    let sig = libm_signature(&jit, s)?;
                    jit.declare_function(s, Linkage::Import, &sig).ok()
                }
            }
        };
        let relocs = kc.code.module_relocs(id, &mut lookup).map_err(|e| format!("kernel {i}: {e}"))?;
        jit.define_function_bytes(id, kc.code.alignment, &kc.code.bytes, &relocs)
            .map_err(|e| format!("kernel {i}: {e}"))?;
        funcs.insert(i, id);
    }
    jit.finalize_definitions().map_err(|e| format!("cannot finalize machine code: {e}"))?;

    let mut texts: Vec<Option<KernelText>> = (0..plan.kernels.len()).map(|_| None).collect();
    for (&i, kc) in elemental.iter().zip(art.kernels) {
        texts[i] = Some(match kc.shares {
            Some(first) => {
                let text = texts[first as usize].clone().ok_or("stale artifact: a shared code without text")?;
                KernelText { shares: Some(first as usize), ..text }
            }
            None => {
                let shape = artifact::decode("code shape", &kc.shape)?;
                KernelText { shape, clif: kc.clif.into(), asm: kc.asm.into(), shares: None }
            }
        });
    }
    let mut stored = art.children.into_iter();
    // The children's executables keep a module of their own (the entry's gets wrappers).
    let shared = if needs_children(&plan, depth) { Some(module.clone()) } else { None };
    let exe = assemble(module, comp_id, depth, plan, jit, &funcs, texts, &mut |c| {
        let a = stored.next().ok_or("stale artifact: a computation is missing")?;
        let m = shared.as_ref().ok_or("stale artifact: an unexpected computation")?;
        load(m.clone(), c, depth + 1, a, isa)
    })?;
    if stored.next().is_some() {
        return Err("stale artifact: extra computations".into());
    }
    Ok(exe)
}

/// Whether the plan has while or conditional kernels compiled on their own at `depth`.
fn needs_children(plan: &KernelPlan, depth: usize) -> bool {
    depth < MAX_DEPTH
        && plan.kernels.iter().any(|k| matches!(k.body, KernelBody::While { .. } | KernelBody::Case { .. }))
}

/// A kernel's CLIF (with the header of how it runs) and machine code listing.
pub(super) type Listing = (std::sync::Arc<str>, std::sync::Arc<str>);

/// A compiled kernel's code as text: how it runs and its listings.
#[derive(Clone)]
struct KernelText {
    shape: CodeShape,
    /// The function alone (the executable's listing puts `shape.header()` above it);
    /// kernels sharing a code share its texts.
    clif: std::sync::Arc<str>,
    asm: std::sync::Arc<str>,
    /// The earlier kernel whose machine code this one runs (the same code up to the
    /// buffers), if any.
    shares: Option<usize>,
}

/// The executable of computation `comp_id` from its final `plan` and finalized `jit`
/// (`funcs`: the function of each compiled kernel): while and conditional computations
/// come from `child`, opaque kernels get a wrapper computation in `wrapped` (the
/// executable's own copy of the module).
#[allow(clippy::too_many_arguments)]
fn assemble(
    mut wrapped: Module,
    comp_id: CompId,
    depth: usize,
    plan: KernelPlan,
    jit: JITModule,
    funcs: &HashMap<usize, FuncId>,
    texts: Vec<Option<KernelText>>,
    child: &mut dyn FnMut(CompId) -> Result<CpuExecutable, String>,
) -> Result<CpuExecutable, String> {
    let mut code = Vec::with_capacity(plan.kernels.len());
    for (i, k) in plan.kernels.iter().enumerate() {
        code.push(match &k.body {
            KernelBody::Elemental(e) => {
                let f = function(&jit, funcs, i)?;
                let work = usize::try_from(e.work()).unwrap_or(usize::MAX);
                Code::Native { f, par_extent: codegen::par_extent(e), work }
            }
            KernelBody::Dot(spec) => Code::Dot(spec.clone()),
            KernelBody::Sort(spec) => Code::Sort { spec: (**spec).clone(), cmp: function(&jit, funcs, i)? },
            KernelBody::Scatter(spec) => Code::Scatter { spec: (**spec).clone(), combine: function(&jit, funcs, i)? },
            KernelBody::Opaque { inst, operands, result } => {
                let comp = kernel::host_computation(&mut wrapped, comp_id, *inst);
                Code::Interpret { comp, operands: operands.clone(), result: result.clone() }
            }
            KernelBody::While { cond, body, operands, result } if depth < MAX_DEPTH => Code::While {
                cond: Box::new(child(*cond)?),
                body: Box::new(child(*body)?),
                operands: operands.clone(),
                result: result.clone(),
            },
            KernelBody::Case { branches, branch_operands, operands, result } if depth < MAX_DEPTH => Code::Case {
                branches: branches.iter().map(|&b| child(b)).collect::<Result<_, _>>()?,
                branch_operands: branch_operands.clone(),
                operands: operands.clone(),
                result: result.clone(),
            },
            KernelBody::While { operands, result, .. } | KernelBody::Case { operands, result, .. } => {
                let comp = kernel::host_computation(&mut wrapped, comp_id, k.source);
                Code::Interpret { comp, operands: operands.clone(), result: result.clone() }
            }
        });
    }
    let chains = runtime::runnable_chains(&plan, &code);
    let epilogues = runtime::runnable_epilogues(&plan, &code);
    let summaries = plan
        .kernels
        .iter()
        .zip(&texts)
        .enumerate()
        .map(|(i, (k, text))| match &k.body {
            KernelBody::Elemental(_) => text.as_ref().map_or(String::new(), |t| match t.shares {
                Some(first) => format!("{}, code of kernel {first} ({})", t.shape, plan.kernels[first].name),
                None => t.shape.to_string(),
            }),
            KernelBody::Dot(_) if epilogues[i].is_some() => {
                format!("gemm, epilogue {} per block of rows", plan.kernels[i + 1].name)
            }
            KernelBody::Dot(_) => "gemm".into(),
            KernelBody::Sort(_) => "runtime sort, jit comparator".into(),
            KernelBody::Scatter(_) => "runtime scatter, jit combiner".into(),
            KernelBody::While { .. } | KernelBody::Case { .. } if depth < MAX_DEPTH => "runtime control flow".into(),
            KernelBody::Opaque { .. } | KernelBody::While { .. } | KernelBody::Case { .. } => "interpreter".into(),
        })
        .collect();
    // A code's listing is made once; the kernels sharing it point at it (their summary
    // names the kernel whose code they run).
    let mut listings: Vec<Listing> = Vec::with_capacity(texts.len());
    for t in &texts {
        let listing = match t {
            Some(KernelText { shares: Some(first), .. }) => listings.get(*first).cloned().unwrap_or_default(),
            // Compiled without listings (`CompileOptions::listings`): none.
            Some(t) if t.clif.is_empty() => Listing::default(),
            Some(t) => (format!("{}{}", t.shape.header(), t.clif).into(), t.asm.clone()),
            None => Listing::default(),
        };
        listings.push(listing);
    }
    Ok(CpuExecutable {
        plan,
        code,
        module: wrapped,
        listings,
        summaries,
        jit: Some(jit),
        arena: Default::default(),
        chains,
        chain_bytes: std::sync::atomic::AtomicUsize::new(super::default_chain_bytes()),
        epilogues,
        tile_epilogues: std::sync::atomic::AtomicBool::new(true),
    })
}

/// Kernel `i`'s finalized function.
fn function(jit: &JITModule, funcs: &HashMap<usize, FuncId>, i: usize) -> Result<KernelFn, String> {
    let id = funcs.get(&i).ok_or("a compiled kernel without code")?;
    let ptr = jit.get_finalized_function(*id);
    // SAFETY: emitted with signature `fn(*const *mut u8, i64, i64)` by `codegen::emit`
    // (or loaded from an artifact of this compiler and CPU whose plan matched).
    Ok(unsafe { std::mem::transmute::<*const u8, KernelFn>(ptr) })
}

/// The signature of C math function `name`, from [`super::math::C_FUNCTIONS`].
fn libm_signature(jit: &JITModule, name: &str) -> Option<cranelift_codegen::ir::Signature> {
    use cranelift_codegen::ir::{types, AbiParam};
    let &(_, arity, wide) = super::math::C_FUNCTIONS.iter().find(|c| c.0 == name)?;
    let ty = if wide { types::F64 } else { types::F32 };
    let mut sig = jit.make_signature();
    sig.params.extend((0..arity).map(|_| AbiParam::new(ty)));
    sig.returns.push(AbiParam::new(ty));
    Some(sig)
}

pub use crate::targets::{optimize, PIPELINE};

#[cfg(test)]
mod tests {
    use super::renumber_codes;
    use super::HashMap;

    fn map<V, const N: usize>(pairs: [(usize, V); N]) -> HashMap<usize, V> {
        pairs.into_iter().collect()
    }

    #[test]
    fn a_demoted_first_hands_its_code_to_the_earliest_remaining_sharer() {
        // Kernels 0..6: code A first at 1 (shared by 3 and 5), code B first at 2 (shared
        // by 4). A demotion removes kernels 1 and 4 and moves the rest down.
        let emitted = map([(1, "A"), (2, "B")]);
        let shared = map([(3, 1), (5, 1), (4, 2)]);
        let moved = [Some(0), None, Some(1), Some(2), None, Some(3)];
        let (emitted, shared) = renumber_codes(emitted, shared, &moved);
        assert_eq!(emitted, map([(2, "A"), (1, "B")]));
        assert_eq!(shared, map([(3, 2)]));
    }

    #[test]
    fn a_code_with_no_kernel_left_is_dropped() {
        let (emitted, shared) = renumber_codes(map([(0, "A")]), map([(1, 0)]), &[None, None]);
        assert!(emitted.is_empty() && shared.is_empty());
    }
}
