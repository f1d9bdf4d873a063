//! Strip-mined transcendental loops on the CPU target: vector loops and row reductions
//! whose exp, tanh, log, logistic, ... run in blocks through native functions with
//! wider vectors (`targets/cpu/block_math.rs`) must give the same bits as the same
//! kernels with the inline 4-lane approximations, at lengths that leave a short last
//! block and a scalar tail, split across threads, through an artifact, with ops whose arguments
//! themselves need a blocked op (two stages), and agree with the interpreter; and on
//! random graphs of transcendentals, reductions and data movement (`common/random_graphs.rs`)
//! with rows of 512 or more (every loop strip-mined), block math on and off give the same bits. Needs the `cpu`
//! feature.

#![cfg(feature = "cpu")]

use crate::common;
use crate::random_graphs;

use common::{f32s, ulps, Rng};
use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{Literal, Module, Value};
use hloscope_core::targets::cpu;
use proptest::prelude::*;
use random_graphs::{program, same_bits, step, Ops};

/// Whether this machine's native block functions are wider than Cranelift's vectors
/// (otherwise no loop is strip-mined, and the tests only check that).
fn wide() -> bool {
    cpu::block_math::native_lanes() > 4
}

/// A chain over f32[n]: exp and tanh of independent arguments (one stage), and a
/// logistic of an exp (two stages), plus a log.
fn chain(n: i64) -> String {
    format!(
        "HloModule chain
ENTRY e {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  xx = f32[{n}] multiply(x, x)
  nxx = f32[{n}] negate(xx)
  ex = f32[{n}] exponential(nxx)
  th = f32[{n}] tanh(x)
  a = f32[{n}] multiply(ex, y)
  b = f32[{n}] add(a, th)
  half = f32[] constant(0.5)
  h = f32[{n}] broadcast(half), dimensions={{}}
  ey = f32[{n}] exponential(h)
  s = f32[{n}] multiply(ey, y)
  lg = f32[{n}] logistic(s)
  es = f32[{n}] exponential(lg)
  one = f32[] constant(1)
  o = f32[{n}] broadcast(one), dimensions={{}}
  yy = f32[{n}] multiply(y, y)
  yy1 = f32[{n}] add(yy, o)
  l = f32[{n}] log(yy1)
  c = f32[{n}] add(b, es)
  ROOT r = f32[{n}] subtract(c, l)
}}"
    )
}

/// Softmax over the rows of f32[rows, cols]: a row reduction of exp (max, then
/// exp-and-sum) and a loop kernel dividing exp by the sum.
fn softmax(rows: i64, cols: i64) -> String {
    format!(
        "HloModule softmax
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
max {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}}
ENTRY e {{
  x = f32[{rows},{cols}] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mb = f32[{rows},{cols}] broadcast(m), dimensions={{0}}
  d = f32[{rows},{cols}] subtract(x, mb)
  ex = f32[{rows},{cols}] exponential(d)
  zero = f32[] constant(0)
  s = f32[{rows}] reduce(ex, zero), dimensions={{1}}, to_apply=add
  sb = f32[{rows},{cols}] broadcast(s), dimensions={{0}}
  ROOT r = f32[{rows},{cols}] divide(ex, sb)
}}"
    )
}

fn random(dims: &[i64], seed: u64, lo: f32, hi: f32) -> Literal {
    let n: i64 = dims.iter().product();
    let mut rng = Rng(seed | 1);
    f32s(dims, &(0..n).map(|_| rng.uniform(lo, hi) as f64).collect::<Vec<_>>())
}

/// Compiles `module` with strip-mining on or off; returns the executable and whether
/// any kernel's listing says it was strip-mined.
fn compile(module: &Module, on: bool) -> (cpu::CpuExecutable, bool) {
    let options = cpu::CompileOptions { block_math: on, ..Default::default() };
    let exe = cpu::compile_with(&cpu::optimize(module).unwrap(), options).unwrap();
    let mined = (0..exe.plan().kernels.len()).filter_map(|i| exe.clif(i)).any(|c| c.contains("; strip-mined"));
    (exe, mined)
}

/// Compiles `module` with strip-mining off and on, runs both on `args` and asserts that
/// they give the same bits (`what` names the case). Returns the strip-mined executable,
/// whether any of its kernels was strip-mined, and its result.
fn on_and_off(module: &Module, args: &[Value], what: &str) -> (cpu::CpuExecutable, bool, Value) {
    let (inline, mined_off) = compile(module, false);
    assert!(!mined_off, "{what}: strip-mined with block math off");
    let (blocked, mined) = compile(module, true);
    let (a, b) = (inline.run(args).unwrap(), blocked.run(args).unwrap());
    assert!(
        bits(&a) == bits(&b),
        "{what}: results differ with block math on and off\nplan:\n{}",
        blocked.plan().summary()
    );
    (blocked, mined, b)
}

fn bits(v: &Value) -> Vec<Vec<u8>> {
    v.clone().flatten().iter().map(|l| l.to_le_bytes()).collect()
}

/// Every element of `got` within `max_ulp` of the interpreter's `want`, or within
/// `atol` where the result is near zero (sums of values of both signs cancel).
fn assert_close(what: &str, got: &Value, want: &Value, max_ulp: u64, atol: f64) {
    for (g, w) in got.clone().flatten().iter().zip(&want.clone().flatten()) {
        for i in 0..w.num_elements() {
            let (a, b) = (g.get(i).as_f64() as f32, w.get(i).as_f64() as f32);
            assert!(
                ulps(a, b) <= max_ulp || (a as f64 - b as f64).abs() <= atol,
                "{what} [{i}]: cpu {a} vs interpreter {b} ({} ulp)",
                ulps(a, b)
            );
        }
    }
}

#[test]
fn strip_mined_chains_give_the_inline_bits() {
    // 100: too short to strip-mine; 128: one short block; 512: exactly one block; 513:
    // one block and a scalar tail; 1000 and 4113: full blocks, a shorter last one and a
    // tail; 70001: split across threads, each range with its own blocks and tail.
    for n in [100i64, 128, 511, 512, 513, 1000, 4096 + 17, 70_001] {
        let module = hloscope_core::parse::parse_module(&chain(n)).unwrap();
        let args = vec![Value::Array(random(&[n], 11, -6.0, 6.0)), Value::Array(random(&[n], 12, -3.0, 3.0))];
        let (blocked, mined_on, b) = on_and_off(&module, &args, &format!("chain n = {n}"));
        assert_eq!(mined_on, wide() && n >= 128, "n = {n}: {}", blocked.clif(0).unwrap_or(""));
        if mined_on {
            // tanh(x) reads its block of x itself; exp(-x*x) is computed into its buffer.
            let clif = blocked.clif(0).unwrap();
            assert!(clif.contains("hs_block_tanh_f32 (stage 1, from input 0)"), "{}", clif.lines().nth(2).unwrap());
            assert!(clif.contains("hs_block_exp_f32 (stage 1),"), "{}", clif.lines().nth(2).unwrap());
        }
        let want = Interpreter::new(&module).run(&args).unwrap();
        // Each transcendental is within 2 ulp; the sums of terms of both signs cancel.
        assert_close(&format!("chain n = {n}"), &b, &want, 16, 1e-5);
    }
}

#[test]
fn strip_mined_softmax_rows_give_the_inline_bits() {
    // Rows too short to strip-mine, of one short block, of exactly one block, of blocks
    // plus a shorter one and a tail; enough rows to split across threads.
    for (rows, cols) in [(3i64, 100i64), (3, 300), (5, 512), (7, 1500), (300, 1027)] {
        let module = hloscope_core::parse::parse_module(&softmax(rows, cols)).unwrap();
        let args = vec![Value::Array(random(&[rows, cols], 5, -20.0, 20.0))];
        let (blocked, mined, b) = on_and_off(&module, &args, &format!("softmax {rows}x{cols}"));
        assert_eq!(mined, wide() && cols >= 128, "{rows}x{cols}:\n{}", blocked.plan().summary());
        let want = Interpreter::new(&module).run(&args).unwrap();
        assert_close(&format!("softmax {rows}x{cols}"), &b, &want, 64, 1e-7);
    }
}

#[test]
fn at_most_sixteen_ops_per_kernel_are_blocked() {
    // 24 exponentials of different arguments summed in one loop kernel: 16 take block
    // buffers (2 KiB of stack each), the other 8 stay inline; same bits either way.
    let n = 1000;
    let mut body = String::new();
    let mut sum = "x".to_string();
    for i in 0..24 {
        body += &format!(
            "  k{i} = f32[] constant({})\n  b{i} = f32[{n}] broadcast(k{i}), dimensions={{}}\n",
            i as f32 / 8.0
        );
        body += &format!("  a{i} = f32[{n}] subtract(x, b{i})\n  e{i} = f32[{n}] exponential(a{i})\n");
        body += &format!("  s{i} = f32[{n}] add({sum}, e{i})\n");
        sum = format!("s{i}");
    }
    let hlo =
        format!("HloModule many\nENTRY e {{\n  x = f32[{n}] parameter(0)\n{body}  ROOT r = f32[{n}] negate({sum})\n}}");
    let module = hloscope_core::parse::parse_module(&hlo).unwrap();
    let args = vec![Value::Array(random(&[n], 9, -3.0, 3.0))];
    let (blocked, mined, _) = on_and_off(&module, &args, "24 exponentials");
    assert_eq!(mined, wide());
    if wide() {
        let clif = blocked.clif(0).unwrap();
        let note = clif.lines().find(|l| l.starts_with("; strip-mined")).unwrap();
        assert_eq!(note.matches("hs_block_exp_f32").count(), 16, "{note}");
    }
}

#[test]
fn strip_mined_kernels_survive_an_artifact_and_stay_out_of_objects() {
    let n = 3000;
    let module = cpu::optimize(&hloscope_core::parse::parse_module(&chain(n)).unwrap()).unwrap();
    let args = vec![Value::Array(random(&[n], 3, -4.0, 4.0)), Value::Array(random(&[n], 4, -2.0, 2.0))];
    let (fresh, artifact) = cpu::compile_to_artifact(&module).unwrap();
    // The loaded code resolves its calls of the native block functions by name.
    let loaded = cpu::load_artifact(&artifact).unwrap();
    assert_eq!(loaded.clif(0).unwrap().contains("; strip-mined"), wide());
    assert!(bits(&fresh.run(&args).unwrap()) == bits(&loaded.run(&args).unwrap()));
    // An artifact keeps the options it was compiled with: strip-mining off loads as such.
    let off = cpu::CompileOptions { block_math: false, ..Default::default() };
    let (_, plain) = cpu::compile_to_artifact_with(&module, off).unwrap();
    let plain = cpu::load_artifact(&plain).unwrap();
    assert!(!plain.clif(0).unwrap().contains("; strip-mined"));
    assert!(bits(&fresh.run(&args).unwrap()) == bits(&plain.run(&args).unwrap()));
    // A C object must not depend on Rust functions: its loops keep the inline math.
    let object = cpu::aot::compile_object(&module, "chain").unwrap().object;
    assert!(!object.windows(8).any(|w| w == b"hs_block"), "the object calls a native block function");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_give_the_same_bits_strip_mined(
        n in prop::sample::select(vec![512usize, 515, 600]),
        steps in prop::collection::vec(step(Ops::All), 1..16),
        seed in any::<u64>(),
    ) {
        let text = program(n, &steps);
        let module = hloscope_core::parse::mlir::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let args = hloscope_core::interp::random_inputs(&module, seed);
        let (inline, _) = compile(&module, false);
        let (blocked, _) = compile(&module, true);
        let (a, b) = (inline.run(&args).unwrap(), blocked.run(&args).unwrap());
        prop_assert!(same_bits(&a, &b), "strip-mined results differ for\n{}\nplan:\n{}", text, blocked.plan().summary());
    }
}

/// Block functions that write a result directly, and the division by a value the
/// vector loop does not change. Kernels: `exp(x)` as a result (the last stage has
/// nothing left, the kernel is native calls only); `x / s` by a broadcast row value
/// into a result and into an intermediate (which, not a result, goes through its
/// buffer and the last stage); and a row reduction whose exp is both a result and
/// summed (the last stage reads the sum's terms from the result). Bit for bit with
/// block math off, and the interpreter's bits (exp within its ulp bound).
#[test]
fn block_functions_write_results_and_divide() {
    for (rows, cols) in [(3i64, 100i64), (5, 513), (3, 4113), (70, 1001)] {
        let hlo = format!(
            "HloModule direct
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY e {{
  x = f32[{rows},{cols}] parameter(0)
  v = f32[{rows}] parameter(1)
  ex = f32[{rows},{cols}] exponential(x)
  vb = f32[{rows},{cols}] broadcast(v), dimensions={{0}}
  q = f32[{rows},{cols}] divide(x, vb)
  q2 = f32[{rows},{cols}] divide(ex, vb)
  one = f32[] constant(1)
  ones = f32[{rows},{cols}] broadcast(one), dimensions={{}}
  t = f32[{rows},{cols}] add(q2, ones)
  zero = f32[] constant(0)
  s = f32[{rows}] reduce(ex, zero), dimensions={{1}}, to_apply=add
  ROOT r = (f32[{rows},{cols}], f32[{rows},{cols}], f32[{rows},{cols}], f32[{rows}]) tuple(ex, q, t, s)
}}"
        );
        let module = hloscope_core::parse::parse_module(&hlo).unwrap();
        // A zero, an infinity and a NaN divisor among the rows.
        let mut rng = Rng(7);
        let v: Vec<f64> = (0..rows)
            .map(|i| {
                [0.0, f64::INFINITY, f64::NAN].get(i as usize).copied().unwrap_or_else(|| rng.uniform(-3.0, 3.0) as f64)
            })
            .collect();
        let args = vec![Value::Array(random(&[rows, cols], 8, -5.0, 5.0)), Value::Array(f32s(&[rows], &v))];
        let (blocked, mined, b) = on_and_off(&module, &args, &format!("{rows}x{cols}"));
        let notes: String = (0..blocked.plan().kernels.len())
            .filter_map(|i| blocked.clif(i))
            .flat_map(|c| c.lines().take(4))
            .filter(|l| l.starts_with(';'))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(mined, wide() && cols >= 128, "{rows}x{cols}:\n{notes}");
        if mined {
            assert!(notes.contains("hs_block_div_f32 (stage 1, from input 0, into output"), "{notes}");
            assert!(notes.contains("hs_block_exp_f32 (stage 1, from input 0, into output"), "{notes}");
            // q2 = ex / v feeds t: through the division's buffer, not into an output.
            assert!(notes.contains("hs_block_div_f32 (stage 2)"), "{notes}");
        }
        let want = Interpreter::new(&module).run(&args).unwrap();
        let (got, want) = (b.flatten(), want.flatten());
        // The division is exact; exp within 2 ulp; the sums reassociated.
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            for i in 0..w.num_elements() {
                let (x, y) = (g.get(i).as_f64() as f32, w.get(i).as_f64() as f32);
                let ok = match k {
                    1 => g.bits(i) == w.bits(i) || (x.is_nan() && y.is_nan()),
                    // ex/v + 1: exp's error, relative to ex/v.
                    2 => (x - y).abs() <= 5e-7 * ((y - 1.0).abs() + 1.0) || (x.is_nan() && y.is_nan()) || x == y,
                    3 => (x - y).abs() <= 1e-5 * y.abs().max(1.0) || (x.is_nan() && y.is_nan()),
                    _ => ulps(x, y) <= 4 || (x.is_nan() && y.is_nan()) || x == y,
                };
                assert!(ok, "{rows}x{cols} output {k} [{i}]: cpu {x} vs interpreter {y}");
            }
        }
    }
}
