//! The native block functions of the CPU target (`targets::cpu::block_math`) against the
//! JIT's 4-lane inline code: exp and tanh over 4096 f32, at each dispatch level this CPU
//! has. Throughput is in elements, so criterion's time divided by 4096 is the time per
//! element. A block iteration copies the inputs into the buffer first (the functions
//! work in place), as the JIT loop reads its inputs and writes its outputs; the inputs
//! are in exp's fast range and tanh's main path, the common case. Needs `cpu`.

#[path = "../tests/common/math_kernel.rs"]
mod math_kernel;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hloscope_core::ir::UnaryOp;
use hloscope_core::targets::cpu::block_math::{self, Level};
use math_kernel::{compile, Op};
use std::hint::black_box;

const N: usize = 4096;

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
        // The JIT's loop, 4 lanes at a time, with the host's fma setting.
        let (jit, k) = compile(Op::U(op), true, None);
        let mut out = vec![0f32; N];
        group.bench_function(BenchmarkId::from_parameter("jit_4_lanes"), |b| {
            b.iter(|| k(black_box(src.as_ptr()), src.as_ptr(), out.as_mut_ptr(), N as i64))
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
