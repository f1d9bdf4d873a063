//! The native block functions of the CPU target (`targets::cpu::block_math`) against the
//! JIT's 4-lane inline code: exp and tanh over 4096 f32, at each dispatch level this CPU
//! has. Throughput is in elements, so criterion's time divided by 4096 is the time per
//! element. A block iteration copies the inputs into the buffer first (the functions
//! work in place), as the JIT loop reads its inputs and writes its outputs; the inputs
//! are in exp's fast range and tanh's main path, the common case. Needs `cpu`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module};
use hloscope_core::ir::UnaryOp;
use hloscope_core::targets::cpu::block_math::{self, Level};
use hloscope_core::targets::cpu::math;
use std::hint::black_box;

const N: usize = 4096;

type Kernel = extern "C" fn(*const f32, *mut f32, i64);

/// The JIT's loop `out[i] = op(x[i])`, 4 lanes at a time, with the host's fma setting.
fn compile(op: UnaryOp) -> (JITModule, Kernel) {
    let builder = JITBuilder::with_flags(&[("opt_level", "speed")], cranelift_module::default_libcall_names()).unwrap();
    let mut jit = JITModule::new(builder);
    let fma = math::has_fma(jit.isa());
    let ptr = jit.target_config().pointer_type();
    let mut ctx = jit.make_context();
    ctx.func.signature.params.extend([AbiParam::new(ptr), AbiParam::new(ptr), AbiParam::new(types::I64)]);
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let (entry, header, body, exit) = (b.create_block(), b.create_block(), b.create_block(), b.create_block());
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        let zero = b.ins().iconst(types::I64, 0);
        b.append_block_param(header, types::I64);
        b.ins().jump(header, &[zero.into()]);
        b.switch_to_block(header);
        let i = b.block_params(header)[0];
        let c = b.ins().icmp(IntCC::SignedLessThan, i, p[2]);
        b.ins().brif(c, body, &[], exit, &[]);
        b.switch_to_block(body);
        let off = b.ins().imul_imm_s(i, 4);
        let flags = MemFlagsData::new().with_notrap();
        let xa = b.ins().iadd(p[0], off);
        let oa = b.ins().iadd(p[1], off);
        let x = b.ins().load(types::F32X4, flags, xa, 0);
        let mut call = |_: &mut FunctionBuilder, name: &'static str, _: &[cranelift_codegen::ir::Value]| -> cranelift_codegen::ir::Value {
            panic!("f32 {op:?} called {name}")
        };
        let r = math::unary(&mut b, fma, op, x, &mut call).expect("lowered");
        b.ins().store(flags, r, oa, 0);
        let next = b.ins().iadd_imm_s(i, 4);
        b.ins().jump(header, &[next.into()]);
        b.switch_to_block(exit);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(jit.isa().frontend_config());
    }
    let id = jit.declare_function("k", Linkage::Local, &ctx.func.signature).unwrap();
    jit.define_function(id, &mut ctx).unwrap();
    jit.finalize_definitions().unwrap();
    let f = jit.get_finalized_function(id);
    // SAFETY: defined above with this signature.
    (jit, unsafe { std::mem::transmute::<*const u8, Kernel>(f) })
}

fn bench(c: &mut Criterion) {
    // Deterministic inputs in [-20, 20).
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let src: Vec<f32> = (0..N)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 40.0 - 20.0
        })
        .collect();
    for (name, op) in [("exp", UnaryOp::Exp), ("tanh", UnaryOp::Tanh)] {
        let mut group = c.benchmark_group(format!("block_{name}_4096"));
        group.throughput(Throughput::Elements(N as u64));
        let (jit, k) = compile(op);
        let mut out = vec![0f32; N];
        group.bench_function(BenchmarkId::from_parameter("jit_4_lanes"), |b| {
            b.iter(|| k(black_box(src.as_ptr()), out.as_mut_ptr(), N as i64))
        });
        for level in Level::ALL.into_iter().filter(|l| l.available()) {
            let mut buf = vec![0f32; N];
            group.bench_function(BenchmarkId::from_parameter(format!("{level:?}")), |b| {
                b.iter(|| {
                    buf.copy_from_slice(black_box(&src));
                    block_math::apply(op, level, &mut buf).unwrap();
                })
            });
        }
        group.finish();
        // SAFETY: `k` is not used after this.
        unsafe { jit.free_memory() };
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
