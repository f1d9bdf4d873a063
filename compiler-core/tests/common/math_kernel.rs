//! A JIT-compiled loop applying one of the CPU target's f32 lowerings
//! (`targets::cpu::math`) over arrays, scalar or 4 lanes at a time, with or without fma:
//! the harness the math tests and the block-math bench share.
#![allow(dead_code)]

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module};
use hloscope_core::ir::{BinaryOp, UnaryOp};
use hloscope_core::targets::cpu::math;

#[derive(Copy, Clone, Debug)]
pub enum Op {
    U(UnaryOp),
    B(BinaryOp),
}

/// `(x, y, out, n)`: a unary op ignores `y`.
pub type Kernel = extern "C" fn(*const f32, *const f32, *mut f32, i64);

/// JIT-compiles `out[i] = op(x[i], y[i])` for `n` elements (a multiple of 4 when `lanes`),
/// fused multiply-adds as `fma` says, or as this CPU allows when `None`.
pub fn compile(op: Op, lanes: bool, fma: Option<bool>) -> (JITModule, Kernel) {
    let builder = JITBuilder::with_flags(&[("opt_level", "speed")], cranelift_module::default_libcall_names()).unwrap();
    let mut jit = JITModule::new(builder);
    let fma = fma.unwrap_or_else(|| math::has_fma(jit.isa()));
    let ptr = jit.target_config().pointer_type();
    let mut ctx = jit.make_context();
    for _ in 0..3 {
        ctx.func.signature.params.push(AbiParam::new(ptr));
    }
    ctx.func.signature.params.push(AbiParam::new(types::I64));
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        let header = b.create_block();
        let body = b.create_block();
        let exit = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        let zero = b.ins().iconst(types::I64, 0);
        b.append_block_param(header, types::I64);
        b.ins().jump(header, &[zero.into()]);
        b.switch_to_block(header);
        let i = b.block_params(header)[0];
        let c = b.ins().icmp(IntCC::SignedLessThan, i, p[3]);
        b.ins().brif(c, body, &[], exit, &[]);
        b.switch_to_block(body);
        let ty = if lanes { types::F32X4 } else { types::F32 };
        let off = b.ins().imul_imm_s(i, 4);
        let flags = MemFlagsData::new().with_notrap();
        let xa = b.ins().iadd(p[0], off);
        let ya = b.ins().iadd(p[1], off);
        let oa = b.ins().iadd(p[2], off);
        let x = b.ins().load(ty, flags, xa, 0);
        let y = b.ins().load(ty, flags, ya, 0);
        let mut call = |_: &mut FunctionBuilder,
                        name: &'static str,
                        _: &[cranelift_codegen::ir::Value]|
         -> cranelift_codegen::ir::Value { panic!("f32 {op:?} called {name}") };
        let r = match op {
            Op::U(u) => math::unary(&mut b, fma, u, x, &mut call),
            Op::B(o) => math::binary(&mut b, fma, o, x, y, &mut call),
        }
        .expect("lowered");
        b.ins().store(flags, r, oa, 0);
        let next = b.ins().iadd_imm_s(i, if lanes { 4 } else { 1 });
        b.ins().jump(header, &[next.into()]);
        b.switch_to_block(exit);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(jit.isa().frontend_config());
    }
    let id = jit.declare_function("k", Linkage::Local, &ctx.func.signature).unwrap();
    jit.define_function(id, &mut ctx).unwrap_or_else(|e| panic!("{op:?}: {e:?}\n{}", ctx.func.display()));
    jit.finalize_definitions().unwrap();
    let f = jit.get_finalized_function(id);
    // SAFETY: defined above with this signature.
    (jit, unsafe { std::mem::transmute::<*const u8, Kernel>(f) })
}
