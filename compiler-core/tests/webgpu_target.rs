//! The WebGPU target: every shader it generates for the conformance and JAX corpora
//! parses and validates with naga (no GPU needed); golden WGSL for two kernels; and,
//! with feature `webgpu` and an adapter (lavapipe in CI), the semantic cases and the JAX
//! corpus run on the device against the interpreter, and timed runs time every kernel.

use hloscope_core::ir::Module;
use hloscope_core::targets::{optimize, webgpu};
use std::path::Path;

#[path = "common/corpus.rs"]
mod corpus;

/// naga's verdict on one shader (WGSL front end, then the full validator).
fn validate(source: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// Compiles `module` for WebGPU and validates each shader: the number of shaders.
fn shaders_validate(name: &str, module: &Module) -> Result<usize, String> {
    let Ok(program) = webgpu::compile(module) else { return Ok(0) };
    let mut n = 0;
    for (i, s) in program.shaders.iter().enumerate() {
        if let Some(s) = s {
            validate(&s.source).map_err(|e| format!("{name}: kernel {i}: {e}\n{}", s.source))?;
            n += 1;
        }
    }
    Ok(n)
}

fn jax_corpus() -> Vec<(String, Module)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend/tests/corpus");
    let mut programs: Vec<_> = std::fs::read_dir(&dir).expect("the JAX corpus").map(|e| e.unwrap().path()).collect();
    programs.sort();
    assert!(programs.len() >= 20, "the JAX corpus is missing");
    programs
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p.join("module.mlir")).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, hloscope_core::parse::parse_module(&text).unwrap())
        })
        .collect()
}

#[test]
fn every_conformance_shader_validates_with_naga() {
    let cases = corpus::collect_cases(&corpus::corpus_dir());
    let (mut shaders, mut failures) = (0, Vec::new());
    for case in &cases {
        let Ok(module) = hloscope_core::parse::mlir::parse(&case.text) else { continue };
        if hloscope_core::verify::verify(&module).is_err() {
            continue;
        }
        for m in [Some(module.clone()), optimize(&module).ok()].into_iter().flatten() {
            match shaders_validate(&case.name, &m) {
                Ok(n) => shaders += n,
                Err(e) => failures.push(e),
            }
        }
    }
    println!("{shaders} conformance shaders validate");
    assert!(
        failures.is_empty(),
        "{} shaders do not validate:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n\n")
    );
    assert!(shaders > 1500, "only {shaders} shaders were generated");
}

#[test]
fn every_jax_corpus_shader_validates_with_naga() {
    let mut shaders = 0;
    for (name, module) in jax_corpus() {
        for m in [module.clone(), optimize(&module).unwrap()] {
            shaders += shaders_validate(&name, &m).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(shaders >= 100, "only {shaders} shaders");
}

#[test]
fn a_fused_loop_kernel_as_wgsl() {
    let m = hloscope_core::parse::parse_module(
        "HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  b = f32[3] parameter(1)
  bb = f32[2,3] broadcast(b), dimensions={1}
  s = f32[2,3] add(x, bb)
  ROOT t = f32[2,3] maximum(s, x)
}",
    )
    .unwrap();
    let program = webgpu::compile(&optimize(&m).unwrap()).unwrap();
    assert_eq!(program.counts(), (1, 0));
    let source = &program.shaders[0].as_ref().unwrap().source;
    validate(source).unwrap();
    expect_test::expect![[r#"
        // %fusion.3 (loop): 6 invocations
        // fuses %param_1.2, %param_0.1, %s, %t
        @group(0) @binding(0) var<storage, read_write> arena: array<u32>;

        fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
        fn total_key(x: f32) -> i32 { let k = bitcast<i32>(x); return select(k, k ^ 0x7fffffff, k < 0); }

        @compute @workgroup_size(64)
        fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
          for (var t: u32 = gid.x; t < 6u; t += groups.x * 64u) {
            let v1 = i32(t % 3u);
            let q1 = t / 3u;
            let v0 = i32(q1);
    "#]]
    .assert_eq(&source[..source.find("    let e0").unwrap()]);
}

#[cfg(feature = "webgpu")]
mod on_a_device {
    use super::*;
    use hloscope_core::interp::Interpreter;
    use hloscope_core::ir::{Literal, Value};
    use hloscope_core::kernel::semantics::{cases, same_result};
    use hloscope_core::targets::webgpu::runtime::{TimingMethod, WebGpuExecutable};

    fn device_run(module: &Module, args: &[Value]) -> (Value, webgpu::WebGpuProgram) {
        let program = webgpu::compile(module).unwrap();
        let exe = WebGpuExecutable::new(module, program.clone()).unwrap_or_else(|e| panic!("{e}"));
        (exe.run(args).unwrap_or_else(|e| panic!("{e}")).0, program)
    }

    #[test]
    fn the_semantic_cases_hold_on_the_device() {
        let (mut on_gpu, mut failures) = (0, Vec::new());
        for c in cases().iter().flat_map(|c| [c.clone(), c.repeated(70)]) {
            let module = hloscope_core::parse::parse_module(&c.hlo).unwrap();
            let args: Vec<Value> = c.inputs.iter().cloned().map(Value::Array).collect();
            let (got, program) = device_run(&module, &args);
            if program.counts().0 == 1 {
                on_gpu += 1;
            }
            match got {
                Value::Array(l) if same_result(&l, &c.want) => {}
                other => failures.push(format!("{}: got {other:?}, want {:?}\n{}", c.name, c.want, program.listing())),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert!(on_gpu >= 40, "only {on_gpu} cases ran on the device");
    }

    /// Equal within `rel` relative (plus a tiny absolute) error; NaN matches NaN.
    fn close(got: &Literal, want: &Literal, rel: f64) -> bool {
        if got.shape.dims != want.shape.dims || got.shape.elem != want.shape.elem {
            return false;
        }
        if !want.shape.elem.is_float() {
            return got.to_le_bytes() == want.to_le_bytes();
        }
        got.to_f64_vec()
            .iter()
            .zip(want.to_f64_vec())
            .all(|(&g, w)| (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-6 + rel * w.abs())
    }

    #[test]
    fn the_jax_corpus_runs_on_the_device() {
        let mut failures = Vec::new();
        let (mut gpu, mut host) = (0, 0);
        for (name, module) in jax_corpus() {
            let optimized = optimize(&module).unwrap();
            let args = hloscope_core::interp::random_inputs(&module, 7);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, program) = device_run(&optimized, &args);
            let (g, h) = program.counts();
            gpu += g;
            host += h;
            let got = got.flatten();
            if got.len() != want.len() || got.iter().zip(&want).any(|(g, w)| !close(g, w, 2e-4)) {
                failures.push(format!("{name}: the device's outputs differ from the interpreter's"));
            }
        }
        println!("{gpu} kernels on the device, {host} on the host");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(gpu >= 75, "only {gpu} kernels ran on the device");
    }

    /// A device kernel (exp over 64K elements), a host kernel (the sort) and a device
    /// reduction (negate and sum, fused), in that order.
    const DEVICE_HOST_DEVICE: &str = "HloModule m
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[65536]) -> (f32[65536], f32[]) {
  %x = f32[65536] parameter(0)
  %e = f32[65536] exponential(%x)
  %s = f32[65536] sort(%e), dimensions={0}, to_apply=%lt
  %n = f32[65536] negate(%s)
  %z = f32[] constant(0)
  %r = f32[] reduce(%n, %z), dimensions={0}, to_apply=%add
  ROOT %t = (f32[65536], f32[]) tuple(%s, %r)
}";

    #[test]
    fn a_timed_run_times_every_plan_kernel_in_order() {
        let module = optimize(&hloscope_core::parse::parse_module(DEVICE_HOST_DEVICE).unwrap()).unwrap();
        let program = webgpu::compile(&module).unwrap();
        let on_host: Vec<bool> = program.shaders.iter().map(Option::is_none).collect();
        assert_eq!(on_host, [false, true, false], "{}", program.plan);
        let exe = WebGpuExecutable::new(&module, program.clone()).unwrap_or_else(|e| panic!("{e}"));
        let args = hloscope_core::interp::random_inputs(&module, 3);
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        // The sorted exponentials within a few ulps; their sum of 64K terms, added in
        // f32 one by one on the device, within its rounding.
        let matches = |got: Value| {
            let got = got.flatten();
            close(&got[0], &want[0], 1e-5) && close(&got[1], &want[1], 1e-3)
        };
        let (plain, times) = exe.run(&args).unwrap();
        assert!(times.kernels.is_none(), "a plain run times no kernel");
        assert!(matches(plain));
        let mut methods = vec![TimingMethod::SubmitAndWait];
        if exe.timing_method() == TimingMethod::GpuTimestamps {
            methods.push(TimingMethod::GpuTimestamps);
        }
        println!("{}: best timing {}", exe.adapter.name, exe.timing_method().label());
        for method in methods {
            let (got, times) = exe.run_timed(&args, method).unwrap_or_else(|e| panic!("{}: {e}", method.label()));
            assert!(matches(got), "{}", method.label());
            let k = times.kernels.expect("a timed run times its kernels");
            assert_eq!(k.method, method);
            let names: Vec<&str> = k.kernels.iter().map(|t| t.name.as_str()).collect();
            let plan_names: Vec<&str> = program.plan.kernels.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names, plan_names, "{}", method.label());
            assert_eq!(k.kernels.iter().map(|t| t.on_host).collect::<Vec<_>>(), on_host);
            // Every kernel ran inside the run, and sorting 64K floats in the interpreter
            // and exponentials of 64K floats take measurable time.
            let sum: std::time::Duration = k.kernels.iter().map(|t| t.time).sum();
            assert!(sum <= times.total, "{}: kernels {sum:?} in a run of {:?}", method.label(), times.total);
            assert!(k.kernels[0].time > std::time::Duration::ZERO, "{}: {:?}", method.label(), k.kernels);
            assert!(k.kernels[1].time > std::time::Duration::ZERO, "{}: {:?}", method.label(), k.kernels);
        }
        assert_eq!(TimingMethod::GpuTimestamps.label(), "gpu timestamps");
        assert_eq!(TimingMethod::SubmitAndWait.label(), "submit and wait per kernel");
    }

    #[test]
    fn runs_again_on_loaded_inputs() {
        // Constants are written once and parameters are pinned: executing again without
        // loading gives the same result, and new inputs a new one.
        let module = optimize(&hloscope_core::parse::parse_module(DEVICE_HOST_DEVICE).unwrap()).unwrap();
        let exe = WebGpuExecutable::new(&module, webgpu::compile(&module).unwrap()).unwrap_or_else(|e| panic!("{e}"));
        let (a, b) =
            (hloscope_core::interp::random_inputs(&module, 1), hloscope_core::interp::random_inputs(&module, 2));
        let first = exe.run(&a).unwrap().0;
        exe.execute(None).unwrap();
        assert_eq!(exe.read_result().unwrap(), first);
        let other = exe.run(&b).unwrap().0;
        assert_ne!(other, first);
    }
}
