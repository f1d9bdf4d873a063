//! Ahead-of-time compilation: a module as a relocatable object file (ELF/Mach-O/COFF for
//! the host) with one C entry point, plus the C header that declares it.
//!
//! ```c
//! int NAME_run(const void *const *inputs, void *const *outputs, void *scratch);
//! ```
//!
//! `inputs[i]` is entry parameter i (tuples flattened), `outputs[j]` result array j, in
//! the interpreter's byte encoding (row major, little endian, pred one byte, f16/bf16
//! their 16-bit patterns); `scratch` holds `NAME_SCRATCH_BYTES` bytes for the
//! temporaries (the header says how many; NULL when 0). The entry point runs every
//! kernel in program order and returns 0. Constants live in the object's read-only data.
//!
//! Only Cranelift-compiled kernels can go into a C object. Dots are planned as
//! reductions (multiply, then a sequential sum: correct, not GEMM-fast) and kept out of
//! fusions ([`optimize`]); an interpreted (opaque) kernel, a while loop or conditional
//! is refused with an error naming the kernel and why. f32 transcendentals and f16/bf16
//! conversions are inline; f64 transcendentals call the C math library by name, so
//! programs link with `-lm`. Kernels run on the calling thread.

use super::codegen;
use crate::ir::Module;
use crate::kernel::{self, BufferId, KernelBody};
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_entity::EntityRef;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataDescription, Linkage, Module as _};
use cranelift_object::{ObjectBuilder, ObjectModule};
use std::collections::HashMap;

/// An object file and its C header.
pub struct AotOutput {
    pub object: Vec<u8>,
    pub header: String,
    pub scratch_bytes: usize,
}

/// Alignment of every scratch temporary.
const ALIGN: usize = 64;

/// Where a buffer lives at run time.
#[derive(Clone, Copy)]
enum Place {
    Input(usize),
    Output(usize),
    Scratch(usize),
    Const(cranelift_module::DataId),
}

/// The passes run before [`compile_object`]: the cpu target's pipeline without
/// epilogue fusion, so that dots stay on their own (planned as reductions here).
pub fn optimize(module: &Module) -> Result<Module, String> {
    use crate::passes::fusion::FusionConfig;
    use crate::passes::pipeline::{parse_pipeline_spec, run_passes, PipelineConfig};
    let mut m = module.clone();
    let passes = parse_pipeline_spec(super::PIPELINE).map_err(|e| e.to_string())?;
    let fusion = FusionConfig::from_spec("no-epilogue").map_err(|e| e.to_string())?;
    let config = PipelineConfig { passes, fusion, snapshots: false, ..Default::default() };
    run_passes(&mut m, &config).map_err(|e| e.to_string())?;
    Ok(m)
}

/// Compiles `module` (normally after [`optimize`]) into an object whose entry
/// point is `NAME_run`.
pub fn compile_object(module: &Module, name: &str) -> Result<AotOutput, String> {
    if name.is_empty()
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || name.starts_with(|c: char| c.is_ascii_digit())
    {
        return Err(format!("`{name}` is not a C identifier (letters, digits, _; not starting with a digit)"));
    }
    let plan = kernel::plan_computation_with(module, module.entry, &kernel::TargetCaps::cpu_object())?;
    for k in &plan.kernels {
        let why = match &k.body {
            KernelBody::Elemental(_) => continue,
            KernelBody::Dot(_) => "a float dot runs through the GEMM library, which a C object cannot call".to_string(),
            KernelBody::Opaque { .. } => "it runs in the reference interpreter".to_string(),
            KernelBody::While { .. } => "while loops run from the Rust runtime".to_string(),
            KernelBody::Case { .. } => "conditionals run from the Rust runtime".to_string(),
            KernelBody::Sort(_) => "sorts run from the Rust runtime".to_string(),
            KernelBody::Scatter(_) => "scatters run from the Rust runtime".to_string(),
        };
        return Err(format!("kernel {} ({}) cannot go into a C object: {why}", k.name, k.kind));
    }

    let mut flags = settings::builder();
    for (k, v) in [("opt_level", "speed"), ("is_pic", "true"), ("enable_verifier", super::CRANELIFT_VERIFIER)] {
        flags.set(k, v).map_err(|e| format!("cranelift flag {k}: {e}"))?;
    }
    let isa = cranelift_native::builder()
        .map_err(|e| format!("this CPU is not supported: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| format!("cannot set up the code generator: {e}"))?;
    let builder = ObjectBuilder::new(isa, name.to_string(), cranelift_module::default_libcall_names())
        .map_err(|e| format!("cannot set up the object writer: {e}"))?;
    let mut obj = ObjectModule::new(builder);
    let helpers = codegen::Helpers::declare(&mut obj)?;

    // Kernels.
    let mut funcs = Vec::new();
    for (i, k) in plan.kernels.iter().enumerate() {
        let KernelBody::Elemental(e) = &k.body else { return Err(format!("kernel {} is not elemental", k.name)) };
        let em = codegen::emit(
            &mut obj,
            &helpers,
            e,
            &format!("{name}_kernel{i}"),
            k.inputs.len(),
            // No Rust in a C object: inline f16/bf16 conversions and transcendentals.
            codegen::EmitOptions { block_lanes: 0, inline_half: true, listings: false },
            &[],
        )
        .map_err(|r| format!("kernel {} cannot be compiled: {r}", k.name))?;
        funcs.push((em.id, em.par_extent));
    }

    // Buffers: parameters from `inputs`, results to `outputs`, constants in read-only
    // data, the rest in scratch.
    let inputs: Vec<BufferId> = plan.params.iter().flat_map(|p| p.leaves()).collect();
    let outputs: Vec<BufferId> = plan.result.leaves();
    let mut place: HashMap<BufferId, Place> = HashMap::new();
    for (i, &b) in inputs.iter().enumerate() {
        place.insert(b, Place::Input(i));
    }
    for (b, lit) in &plan.constants {
        let id = obj
            .declare_data(&format!("{name}_const{}", b.index()), Linkage::Local, false, false)
            .map_err(|e| e.to_string())?;
        let mut d = DataDescription::new();
        let mut bytes = lit.to_le_bytes();
        bytes.resize(bytes.len().max(1), 0);
        d.define(bytes.into_boxed_slice());
        d.set_align(16);
        obj.define_data(id, &d).map_err(|e| e.to_string())?;
        place.insert(*b, Place::Const(id));
    }
    // A result that is also a parameter, a constant or an earlier result is copied into
    // its output after the kernels.
    let mut copies = Vec::new();
    for (j, &b) in outputs.iter().enumerate() {
        if let std::collections::hash_map::Entry::Vacant(e) = place.entry(b) {
            e.insert(Place::Output(j));
        } else {
            copies.push((j, b));
        }
    }
    let mut scratch = 0usize;
    for (b, buf) in plan.buffers.iter() {
        if let std::collections::hash_map::Entry::Vacant(e) = place.entry(b) {
            e.insert(Place::Scratch(scratch));
            scratch += buf.shape.byte_size().div_ceil(ALIGN) * ALIGN;
        }
    }

    // The entry point.
    let ptr = obj.target_config().pointer_type();
    let mut ctx = obj.make_context();
    for _ in 0..3 {
        ctx.func.signature.params.push(AbiParam::new(ptr));
    }
    ctx.func.signature.returns.push(AbiParam::new(types::I32));
    let run_id = obj
        .declare_function(&format!("{name}_run"), Linkage::Export, &ctx.func.signature)
        .map_err(|e| e.to_string())?;
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let (ins, outs, scr) = (b.block_params(entry)[0], b.block_params(entry)[1], b.block_params(entry)[2]);
        let flags = MemFlagsData::new().with_notrap();
        let addr = |b: &mut FunctionBuilder, obj: &mut ObjectModule, buf: BufferId| match place[&buf] {
            Place::Input(i) => b.ins().load(ptr, flags, ins, (i * 8) as i32),
            Place::Output(j) => b.ins().load(ptr, flags, outs, (j * 8) as i32),
            Place::Scratch(off) => b.ins().iadd_imm_s(scr, off as i64),
            Place::Const(id) => {
                let gv = obj.declare_data_in_func(id, b.func);
                b.ins().symbol_value(ptr, gv)
            }
        };
        let most = plan.kernels.iter().map(|k| k.inputs.len() + k.outputs.len()).max().unwrap_or(0).max(1);
        let table = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, (most * 8) as u32, 3));
        for (k, &(f, par_extent)) in plan.kernels.iter().zip(&funcs) {
            for (slot, &buf) in k.inputs.iter().chain(&k.outputs).enumerate() {
                let a = addr(&mut b, &mut obj, buf);
                b.ins().stack_store(ptr, a, table, (slot * 8) as i32);
            }
            let t = b.ins().stack_addr(ptr, table, 0);
            let fref = obj.declare_func_in_func(f, b.func);
            // The whole range of the parallel variable, on this thread.
            let begin = b.ins().iconst(types::I64, 0);
            let end = b.ins().iconst(types::I64, par_extent);
            b.ins().call(fref, &[t, begin, end]);
        }
        for (j, buf) in copies {
            let src = addr(&mut b, &mut obj, buf);
            let dst = b.ins().load(ptr, flags, outs, (j * 8) as i32);
            let size = b.ins().iconst(ptr, plan.buffers[buf].shape.byte_size() as i64);
            b.call_memcpy(obj.target_config(), dst, src, size);
        }
        let zero = b.ins().iconst(types::I32, 0);
        b.ins().return_(&[zero]);
        b.seal_all_blocks();
        b.finalize(obj.isa().frontend_config());
    }
    obj.define_function(run_id, &mut ctx).map_err(|e| format!("cranelift: {e:?}"))?;

    let header = header(module, name, &plan, &inputs, &outputs, scratch);
    let object = obj.finish().emit().map_err(|e| format!("cannot write the object: {e}"))?;
    Ok(AotOutput { object, header, scratch_bytes: scratch })
}

/// The C header declaring `NAME_run`, with every input and output described.
fn header(
    module: &Module,
    name: &str,
    plan: &kernel::KernelPlan,
    inputs: &[BufferId],
    outputs: &[BufferId],
    scratch: usize,
) -> String {
    let upper = name.to_ascii_uppercase();
    let describe = |bs: &[BufferId], what: &str| -> String {
        bs.iter()
            .enumerate()
            .map(|(i, &b)| {
                let s = &plan.buffers[b].shape;
                format!(" *   {what}[{i}]: {s} ({} bytes) -- {}\n", s.byte_size(), plan.buffers[b].name)
            })
            .collect()
    };
    let sizes = |bs: &[BufferId]| -> String {
        if bs.is_empty() {
            return "0".into();
        }
        bs.iter().map(|&b| plan.buffers[b].shape.byte_size().to_string()).collect::<Vec<_>>().join(", ")
    };
    format!(
        "/* {name}.h: generated by hloscope {} from module `{}`; do not edit.\n \
*\n * Buffers are row-major, little endian, 8-byte aligned (pred: one byte per element;\n \
* f16/bf16: their 16-bit patterns).\n *\n * Inputs:\n{} *\n * Outputs:\n{} */\n\
#ifndef {upper}_H\n#define {upper}_H\n\n#include <stddef.h>\n\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n\
#define {upper}_NUM_INPUTS {}\n#define {upper}_NUM_OUTPUTS {}\n\
/* Bytes of scratch memory {name}_run needs, aligned to 64 (0: pass NULL). */\n#define {upper}_SCRATCH_BYTES {scratch}\n\n\
static const size_t {name}_input_bytes[] = {{{}}};\nstatic const size_t {name}_output_bytes[] = {{{}}};\n\n\
/* Runs the module: inputs[i] and outputs[j] point to buffers of the sizes above,\n \
* scratch to {upper}_SCRATCH_BYTES bytes. Returns 0. Link with -lm. */\n\
int {name}_run(const void *const *inputs, void *const *outputs, void *scratch);\n\n\
#ifdef __cplusplus\n}}\n#endif\n\n#endif\n",
        env!("CARGO_PKG_VERSION"),
        module.name,
        describe(inputs, "inputs"),
        describe(outputs, "outputs"),
        inputs.len(),
        outputs.len(),
        sizes(inputs),
        sizes(outputs),
    )
}
