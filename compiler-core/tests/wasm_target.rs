//! The WebAssembly target: every module it emits for the conformance and JAX corpora
//! validates with wasmparser (no engine needed); and, with feature `wasm-run`
//! (wasmtime), the semantic cases, the approximations' ulp bounds, the conformance
//! corpus (by its own `check.*` expectations) and the JAX corpus (against the
//! interpreter) run on the target, and the same modules give the same bytes in Node's
//! V8 (the browser's engine) as under wasmtime.

use hloscope_core::ir::Module;
use hloscope_core::targets::{optimize, wasm};
use std::path::Path;

#[cfg(feature = "wasm-run")]
use crate::checks;
use crate::corpus;
#[cfg(feature = "wasm-run")]
use crate::selection;

/// wasmparser's verdict on a module, with every feature the browsers ship (SIMD128,
/// saturating conversions, sign extension, bulk memory).
fn validate(bytes: &[u8]) -> Result<(), String> {
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::default())
        .validate_all(bytes)
        .map(|_| ())
        .map_err(|e| e.to_string())
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
fn every_conformance_module_validates() {
    let cases = corpus::collect_cases(&corpus::corpus_dir());
    let (mut modules, mut kernels, mut failures) = (0, 0, Vec::new());
    for case in &cases {
        let Ok(module) = hloscope_core::parse::mlir::parse(&case.text) else { continue };
        if hloscope_core::verify::verify(&module).is_err() {
            continue;
        }
        // As written (constant inputs are buffers) and after the target's pipeline.
        for m in [Some(module.clone()), optimize(&module).ok()].into_iter().flatten() {
            let Ok(program) = wasm::compile(&m) else { continue };
            match validate(&program.bytes) {
                Ok(()) => {
                    modules += 1;
                    kernels += program.counts().0;
                }
                Err(e) => failures.push(format!("{}: {e}", case.name)),
            }
        }
    }
    println!("{modules} conformance modules ({kernels} kernels) validate");
    assert!(
        failures.is_empty(),
        "{} modules do not validate:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
    assert!(kernels > 1500, "only {kernels} kernels were emitted");
}

#[test]
fn every_jax_corpus_module_validates() {
    let mut kernels = 0;
    for (name, module) in jax_corpus() {
        let program = wasm::compile(&optimize(&module).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        validate(&program.bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        kernels += program.counts().0;
    }
    assert!(kernels >= 80, "only {kernels} kernels were emitted");
}

#[test]
fn a_module_is_the_same_bytes_every_time() {
    // Emitting never depends on a hash map's order: every JAX corpus program, compiled
    // three times in this process, gives one module.
    for (name, module) in jax_corpus() {
        let optimized = optimize(&module).unwrap();
        let first = wasm::compile(&optimized).unwrap().bytes;
        for _ in 0..2 {
            assert!(wasm::compile(&optimized).unwrap().bytes == first, "{name}: the module's bytes changed");
        }
    }
}

/// Each function body of a module, in function-index order, as its operators.
fn function_bodies(bytes: &[u8]) -> Vec<Vec<wasmparser::Operator<'_>>> {
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::CodeSectionEntry(body) = payload.unwrap() {
            let ops = body.get_operators_reader().unwrap().into_iter().map(|op| op.unwrap()).collect();
            out.push(ops);
        }
    }
    out
}

/// How many function types the module declares, and its exported functions' names.
fn types_and_exported_functions(bytes: &[u8]) -> (u32, Vec<String>) {
    let (mut types, mut functions) = (0, Vec::new());
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.unwrap() {
            wasmparser::Payload::TypeSection(reader) => types = reader.count(),
            wasmparser::Payload::ExportSection(reader) => functions.extend(
                reader
                    .into_iter()
                    .map(|e| e.unwrap())
                    .filter(|e| e.kind == wasmparser::ExternalKind::Func)
                    .map(|e| e.name.to_string()),
            ),
            _ => {}
        }
    }
    (types, functions)
}

/// The module's imports, as (module, name, kind).
fn imports(bytes: &[u8]) -> Vec<(String, String, &'static str)> {
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::ImportSection(reader) = payload.unwrap() {
            for import in reader.into_imports() {
                let import = import.unwrap();
                let kind = match import.ty {
                    wasmparser::TypeRef::Func(_) => "function",
                    wasmparser::TypeRef::Memory(_) => "memory",
                    wasmparser::TypeRef::Table(_) => "table",
                    _ => "other",
                };
                out.push((import.module.to_string(), import.name.to_string(), kind));
            }
        }
    }
    out
}

/// The module's active data segments: (address, bytes).
fn data_segments(bytes: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::DataSection(reader) = payload.unwrap() {
            for data in reader {
                let data = data.unwrap();
                let wasmparser::DataKind::Active { offset_expr, .. } = data.kind else { continue };
                let Ok(wasmparser::Operator::I32Const { value }) = offset_expr.get_operators_reader().read() else {
                    continue;
                };
                out.push((value as u32 as u64, data.data.to_vec()));
            }
        }
    }
    out
}

/// Three f32 dots in a row, of different shapes: a batch, a transposed rhs, more than
/// one block of rows.
const THREE_DOTS: &str = "HloModule m
ENTRY %main (a: f32[2,37,9], b: f32[2,9,13], c: f32[13,70], e: f32[6,70]) -> f32[2,37,6] {
  %a = f32[2,37,9] parameter(0)
  %b = f32[2,9,13] parameter(1)
  %c = f32[13,70] parameter(2)
  %e = f32[6,70] parameter(3)
  %d1 = f32[2,37,13] dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  %d2 = f32[2,37,70] dot(%d1, %c), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT %d3 = f32[2,37,6] dot(%d2, %e), lhs_contracting_dims={2}, rhs_contracting_dims={1}
}";

#[test]
fn the_f32_dots_of_a_module_call_the_gemm_library() {
    // Three dots ([`THREE_DOTS`]): each is a descriptor in the program's data (the host
    // writes it), which `kernel` passes to the GEMM library's driver; the driver
    // and the body it calls (the packing, the register tiles) live in the library. The
    // module imports its memory and the library's table and calls the driver through
    // it. A module without an f32 dot imports nothing.
    let module = optimize(&hloscope_core::parse::parse_module(THREE_DOTS).unwrap()).unwrap();
    let program = wasm::compile(&module).unwrap();
    validate(&program.bytes).unwrap();
    assert!(program.gemm && program.imports_memory());
    let library = wasm::gemm::library(false);
    validate(&library).unwrap();
    assert_eq!(
        imports(&program.bytes),
        [("env".into(), "memory".into(), "memory"), ("gemm".into(), "table".into(), "table")]
    );
    assert_eq!(imports(&library), [("env".into(), "memory".into(), "memory")]);
    let dots: Vec<usize> =
        (0..program.kernels.len()).filter(|&i| program.kernels[i].as_ref().is_some_and(|k| k.dot)).collect();
    assert_eq!(dots.len(), 3, "{}", program.summary());
    // Each dot's descriptor, past the arena, holds its operands' and output's places and
    // its m, n and k. The host writes it: the module has no data, its standalone form has
    // the program's data as its segments.
    let data = &program.data;
    assert!(data_segments(&program.bytes).is_empty());
    assert_eq!(&data_segments(&program.standalone()), data);
    validate(&program.standalone()).unwrap();
    for &d in &dots {
        let (k, kernel) = (program.kernels[d].as_ref().unwrap(), &program.plan.kernels[d]);
        assert!(k.library && k.shares.is_none() && k.table >= program.plan.arena.arena_bytes, "{k:?}");
        let hloscope_core::kernel::KernelBody::Dot(spec) = &kernel.body else { panic!("kernel {d} is a dot") };
        let (_, bytes) = data.iter().find(|(at, _)| *at == k.table).expect("data at the descriptor");
        let words: Vec<u32> = bytes.chunks(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
        let place = |b| program.plan.arena.offset(b) as u32;
        assert_eq!(words[..3], [place(kernel.inputs[0]), place(kernel.inputs[1]), place(kernel.outputs[0])]);
        assert_eq!(words[3..6], [spec.m as u32, spec.n as u32, spec.k as u32]);
    }
    let driver_calls = |ops: &[wasmparser::Operator]| {
        let gemm_call = |op: &&wasmparser::Operator| {
            matches!(op, wasmparser::Operator::CallIndirect { type_index, table_index: 0 }
                if *type_index == wasm::GEMM_DOT_TYPE)
        };
        ops.iter().filter(gemm_call).count()
    };
    // Without f16 or bf16 values the module has no helpers, and with only f32 dots no
    // kernel function: its one function is `kernel`, the one export (wasmtime compiles a
    // trampoline per export and per declared function type), which calls the driver from
    // one arm of its dispatch, whatever the number of dots. Two types: `kernel`'s and the
    // driver's.
    let bodies = function_bodies(&program.bytes);
    assert_eq!(bodies.len(), 1);
    assert_eq!(types_and_exported_functions(&program.bytes), (2, vec![wasm::KERNEL.to_string()]));
    assert_eq!(driver_calls(&bodies[0]), 1);
    let library_bodies = function_bodies(&library);
    assert_eq!(library_bodies.len(), 3, "the GEMM body, the driver and the library's own kernel");
    // A program of f32 dots only runs on the library's `kernel` (no module to compile):
    // its directory (the module's too) gives each plan kernel's descriptor, extent and
    // arm of the module's dispatch (1: the driver).
    assert!(program.runs_on_library());
    let (_, directory) = data.iter().find(|(at, _)| *at == program.directory).expect("data at the directory");
    let words: Vec<u32> = directory.chunks(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
    assert_eq!(words.len() as u64 * 4, wasm::DIRECTORY_ENTRY * program.kernels.len() as u64);
    for (i, k) in program.kernels.iter().enumerate() {
        let k = k.as_ref().unwrap();
        assert_eq!(words[3 * i..3 * i + 3], [k.table as u32, k.extent as u32, 1], "kernel {i}");
    }
    assert!(bodies[0].len() * 4 < library_bodies[0].len(), "no GEMM body in the program's module");
    // Without an f32 dot the module imports nothing.
    let plain = "HloModule m
ENTRY %main (a: f32[7]) -> f32[7] {
  %a = f32[7] parameter(0)
  ROOT %t = f32[7] tanh(%a)
}";
    let program = wasm::compile(&optimize(&hloscope_core::parse::parse_module(plain).unwrap()).unwrap()).unwrap();
    assert!(!program.gemm && !program.imports_memory() && !program.runs_on_library());
    assert!(imports(&program.bytes).is_empty());
    // Types: the kernels' and `(f32) -> f32`, the tail's tanh (7 elements: a tail).
    assert_eq!(types_and_exported_functions(&program.bytes), (2, vec![wasm::KERNEL.to_string()]));
}

#[test]
fn the_gemm_library_broadcasts_in_each_engines_form() {
    // The portable library (V8, `compile --emit`) broadcasts the tile's lhs values with
    // `v128.load32_splat`, wasmtime's with `f32.load` and `f32x4.splat`: four of them in
    // the block function, nothing else differs (the bits are compared in V8 against
    // wasmtime in `v8_gives_the_bytes_wasmtime_gives`).
    use wasm::gemm::{library_for, Splat};
    use wasmparser::Operator;
    // (ops, `v128.load32_splat`s, `f32x4.splat`s)
    let census = |bytes: &[u8]| {
        let features = wasmparser::WasmFeatures::default() | wasmparser::WasmFeatures::THREADS;
        wasmparser::Validator::new_with_features(features).validate_all(bytes).unwrap();
        let bodies = function_bodies(bytes);
        let ops: Vec<&Operator> = bodies.iter().flatten().collect();
        let load_splats = ops.iter().filter(|op| matches!(op, Operator::V128Load32Splat { .. })).count();
        let splats = ops.iter().filter(|op| matches!(op, Operator::F32x4Splat)).count();
        (ops.len(), load_splats, splats)
    };
    for shared in [false, true] {
        let (v8, cranelift) = (library_for(shared, Splat::Load), library_for(shared, Splat::LoadThenSplat));
        assert_eq!(v8, wasm::gemm::library(shared));
        let ((n8, l8, s8), (nc, lc, sc)) = (census(&v8), census(&cranelift));
        assert_eq!((l8, s8, lc, sc), (4, 0, 0, 4));
        assert_eq!(nc, n8 + 4, "one more instruction per broadcast");
    }
}

#[test]
fn scalar_approximations_are_functions_of_the_module() {
    // Scalar code calls each f32 approximation as a function of the module, compiled
    // once however many kernels compute it: two rank-0 kernels with a pow each (an Adam
    // update's bias corrections) and a vector loop's tail with an exp call the same two
    // functions. Vector code keeps its approximations inline, and an op that only vector
    // code without a tail computes has no function.
    let calls = |body: &[wasmparser::Operator], f: u32| {
        body.iter()
            .filter(|op| matches!(op, wasmparser::Operator::Call { function_index } if *function_index == f))
            .count()
    };
    let hlo = "HloModule m
ENTRY %main (a: f32[], b: f32[], c: f32[], x: f32[37]) -> (f32[], f32[], f32[37]) {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = f32[] parameter(2)
  %x = f32[37] parameter(3)
  %p = f32[] power(%a, %b)
  %q = f32[] power(%b, %c)
  %r = f32[] negate(%q)
  %e = f32[37] exponential(%x)
  ROOT %t = (f32[], f32[], f32[37]) tuple(%p, %r, %e)
}";
    let program = wasm::compile(&optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap()).unwrap();
    let bodies = function_bodies(&program.bytes);
    // pow and exp, then three kernels and `kernel`.
    assert_eq!((bodies.len(), program.kernels.len()), (6, 3), "{}", program.summary());
    let callers = |f: u32| bodies[2..5].iter().filter(|b| calls(b, f) == 1).count();
    assert_eq!((callers(0), callers(1)), (2, 1), "{}", program.summary());
    assert!(bodies[2..4].iter().all(|b| b.len() * 3 < bodies[0].len()), "neither rank-0 kernel inlines pow");
    // Types: the kernels', pow's and exp's.
    assert_eq!(types_and_exported_functions(&program.bytes).0, 3);
    let vector_only = "HloModule m
ENTRY %main (x: f32[4,1024]) -> f32[4,1024] {
  %x = f32[4,1024] parameter(0)
  ROOT %e = f32[4,1024] exponential(%x)
}";
    let program = wasm::compile(&optimize(&hloscope_core::parse::parse_module(vector_only).unwrap()).unwrap()).unwrap();
    assert_eq!(function_bodies(&program.bytes).len(), 2, "{}", program.summary());
    assert_eq!(types_and_exported_functions(&program.bytes).0, 1);
}

#[test]
fn a_vector_loop_over_the_parallel_variable_has_no_tail_where_the_lanes_divide_it() {
    // A one-dimensional loop's parallel variable is its vector variable. Where the lanes
    // divide its extent, the host calls it on whole vector steps only, so it has no
    // scalar tail, and with no tail no scalar exp or tanh to call: the module is the
    // kernel and `kernel`. Two more elements bring the tail and its two functions back.
    let hlo = |n: usize| {
        format!(
            "HloModule m\nENTRY %main (x: f32[{n}]) -> f32[{n}] {{\n  %x = f32[{n}] parameter(0)\n  %e = f32[{n}] exponential(%x)\n  %t = f32[{n}] tanh(%x)\n  ROOT %m = f32[{n}] multiply(%e, %t)\n}}"
        )
    };
    let compile = |n: usize, threads: u32| {
        let module = optimize(&hloscope_core::parse::parse_module(&hlo(n)).unwrap()).unwrap();
        wasm::compile_threaded(&module, threads).unwrap()
    };
    let whole = compile(1 << 18, 2);
    let k = whole.kernels[0].as_ref().expect("a kernel in WebAssembly");
    assert_eq!((whole.kernels.len(), k.step), (1, 4), "{}", whole.summary());
    assert!(whole.summary().contains("range 0..262144 in steps of 4"), "{}", whole.summary());
    let bodies = function_bodies(&whole.bytes);
    assert_eq!(bodies.len(), 2, "the kernel and `kernel`, no approximation: {}", whole.summary());
    assert!(!bodies[0].iter().any(|op| matches!(op, wasmparser::Operator::F32Mul)), "no scalar multiply");
    let pieces = wasm::host::chunks(k, 2);
    assert!(pieces.len() > 1 && pieces.iter().all(|&(b, e)| b % 4 == 0 && e % 4 == 0), "{pieces:?}");
    let tail = compile((1 << 18) + 2, 2);
    assert_eq!(tail.kernels[0].as_ref().unwrap().step, 1);
    assert_eq!(function_bodies(&tail.bytes).len(), 4, "exp, tanh, the kernel and `kernel`: {}", tail.summary());
    assert!(tail.bytes.len() > whole.bytes.len() * 3 / 2, "{} against {} bytes", tail.bytes.len(), whole.bytes.len());
}

#[test]
fn vector_constants_are_globals_each_function_reads_once_at_its_entry() {
    // V8 rematerializes a `v128.const` at each use, inside loops too; a mutable global
    // it must load. Every nonzero vector constant of an exp, a tanh and a clamp is a
    // mutable `v128` global holding it, one per distinct value, and the kernel reads each
    // one once, before its loop: no `v128.const` but zero and no splat of a constant in
    // any function.
    let n = 1 << 12;
    let hlo = format!(
        "HloModule m\nENTRY %main (x: f32[{n}]) -> f32[{n}] {{\n  %x = f32[{n}] parameter(0)\n  %e = f32[{n}] exponential(%x)\n  %t = f32[{n}] tanh(%x)\n  %k = f32[] constant(2.5)\n  %b = f32[{n}] broadcast(%k), dimensions={{}}\n  %c = f32[{n}] minimum(%t, %b)\n  ROOT %m = f32[{n}] multiply(%e, %c)\n}}"
    );
    let module = optimize(&hloscope_core::parse::parse_module(&hlo).unwrap()).unwrap();
    let program = wasm::compile(&module).unwrap();
    let mut globals = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(&program.bytes) {
        if let wasmparser::Payload::GlobalSection(reader) = payload.unwrap() {
            for g in reader {
                let g = g.unwrap();
                let init: Vec<_> = g.init_expr.get_operators_reader().into_iter().map(|op| op.unwrap()).collect();
                globals.push((g.ty, init));
            }
        }
    }
    assert!(globals.len() > 20, "scratch and the constants of exp, tanh and the clamp: {}", globals.len());
    let mut values = std::collections::HashSet::new();
    for (ty, init) in &globals[1..] {
        assert!(ty.mutable && ty.content_type == wasmparser::ValType::V128, "{ty:?}");
        let [wasmparser::Operator::V128Const { value }, wasmparser::Operator::End] = init[..] else {
            panic!("{init:?}")
        };
        assert!(values.insert(value.i128()), "{value:?} is declared twice");
    }
    assert!(values.contains(&i128::from_le_bytes([0x00, 0x00, 0x20, 0x40].repeat(4).try_into().unwrap())), "2.5");
    let bodies = function_bodies(&program.bytes);
    assert_eq!(bodies.len(), 2, "the kernel and `kernel`: {}", program.summary());
    let kernel = &bodies[0];
    let first_loop = kernel.iter().position(|op| matches!(op, wasmparser::Operator::Loop { .. })).unwrap();
    let mut read = std::collections::HashSet::new();
    for (at, op) in kernel.iter().enumerate() {
        match op {
            wasmparser::Operator::GlobalGet { global_index } if *global_index > 0 => {
                assert!(at < first_loop && read.insert(*global_index), "global {global_index} at {at}");
            }
            wasmparser::Operator::V128Const { value } => assert_eq!(value.i128(), 0, "at {at}"),
            wasmparser::Operator::F32x4Splat | wasmparser::Operator::I32x4Splat => panic!("a splat at {at}"),
            _ => {}
        }
    }
    assert_eq!(read.len(), globals.len() - 1, "every constant is the kernel's");
}

/// `layers` layers of one integer block (exact, so the bits are the interpreter's): the
/// layers' kernels are the same code up to their buffers.
fn layers(layers: usize) -> String {
    let mut hlo = String::from(
        "HloModule m\n%max (a: s32[], b: s32[]) -> s32[] {\n  %a = s32[] parameter(0)\n  %b = s32[] parameter(1)\n  ROOT %m = s32[] maximum(%a, %b)\n}\nENTRY %main (x: s32[8,64]) -> s32[8,64] {\n  %v0 = s32[8,64] parameter(0)\n  %lo = s32[] constant(-2147483648)\n  %three = s32[] constant(3)\n  %t = s32[8,64] broadcast(%three), dimensions={}\n",
    );
    for l in 1..=layers {
        let p = l - 1;
        hlo += &format!(
            "  %m{l} = s32[8] reduce(%v{p}, %lo), dimensions={{1}}, to_apply=%max\n  %b{l} = s32[8,64] broadcast(%m{l}), dimensions={{0}}\n  %y{l} = s32[8,64] multiply(%v{p}, %t)\n  %v{l} = s32[8,64] subtract(%y{l}, %b{l})\n"
        );
    }
    hlo + &format!("  ROOT %r = s32[8,64] add(%v{layers}, %v0)\n}}")
}

#[test]
fn kernels_dispatch_is_the_same_size_at_every_depth() {
    // `kernel` reads each plan kernel's table, extent and dispatch arm from the program's
    // directory: one arm per function, not per kernel, so a deeper stack of the same
    // layers (more kernels, the same functions) has the same `kernel`, which calls each
    // function once.
    let program = |depth: usize| {
        let module = optimize(&hloscope_core::parse::parse_module(&layers(depth)).unwrap()).unwrap();
        wasm::compile(&module).unwrap()
    };
    let (shallow, deep) = (program(3), program(12));
    assert!(deep.kernels.len() >= shallow.kernels.len() + 9, "{}", deep.summary());
    let (shallow_bodies, deep_bodies) = (function_bodies(&shallow.bytes), function_bodies(&deep.bytes));
    assert_eq!(shallow_bodies.len(), deep_bodies.len(), "the same functions\n{}", deep.summary());
    let dispatch = |bodies: &[Vec<wasmparser::Operator>]| bodies.last().unwrap().len();
    assert_eq!(dispatch(&shallow_bodies), dispatch(&deep_bodies));
    let kernel = deep_bodies.last().unwrap();
    let functions = deep_bodies.len() as u32 - 1;
    for f in 0..functions {
        let calls = kernel
            .iter()
            .filter(|op| matches!(op, wasmparser::Operator::Call { function_index } if *function_index == f));
        assert_eq!(calls.count(), 1, "function {f}");
    }
    // The directory: per plan kernel its table (0: static offsets), extent and arm
    // (its function's index + 1, no GEMM here).
    let directory = deep.data.last().map(|(_, bytes)| bytes).unwrap();
    let words: Vec<u32> = directory.chunks(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
    assert_eq!(words.len() as u64 * 4, wasm::DIRECTORY_ENTRY * deep.kernels.len() as u64);
    let mut own = 0..;
    let mut arms = Vec::new();
    for (i, k) in deep.kernels.iter().enumerate() {
        let k = k.as_ref().unwrap();
        let arm = match k.shares {
            Some(first) => arms[first],
            None => own.next().unwrap() + 1,
        };
        arms.push(arm);
        assert_eq!(words[3 * i..3 * i + 3], [k.table as u32, k.extent as u32, arm], "kernel {i}");
    }
}

#[cfg(feature = "wasm-run")]
mod on_wasmtime {
    use super::*;
    use hloscope_approx::ulps;
    use hloscope_core::interp::Interpreter;
    use hloscope_core::ir::{Literal, Value};
    use hloscope_core::kernel::semantics::{cases, same_result};
    use hloscope_core::targets::wasm::runtime::WasmExecutable;

    fn wasm_run(module: &Module, args: &[Value]) -> (Value, wasm::WasmProgram) {
        let program = wasm::compile(module).unwrap_or_else(|e| panic!("{e}"));
        let exe = WasmExecutable::new(module, program.clone()).unwrap_or_else(|e| panic!("{e}"));
        (exe.run(args).unwrap_or_else(|e| panic!("{e}")).0, program)
    }

    #[test]
    fn the_semantic_cases_hold_in_webassembly() {
        let (mut compiled, mut failures) = (0, Vec::new());
        for c in cases().iter().flat_map(|c| [c.clone(), c.repeated(70)]) {
            let module = hloscope_core::parse::parse_module(&c.hlo).unwrap();
            let args: Vec<Value> = c.inputs.iter().cloned().map(Value::Array).collect();
            let (got, program) = wasm_run(&module, &args);
            if program.counts() == (1, 0) {
                compiled += 1;
            }
            match got {
                Value::Array(l) if same_result(&l, &c.want) => {}
                other => failures.push(format!("{}: got {other:?}, want {:?}\n{}", c.name, c.want, program.summary())),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert!(compiled >= 60, "only {compiled} cases were compiled");
    }

    #[test]
    fn the_approximations_meet_their_bounds() {
        // hloscope-approx's algorithms in WebAssembly (`targets/wasm/approx.rs`), on every
        // 4099th f32 bit pattern against the f64 library rounded to f32: the CPU target's
        // unfused bounds (`tests/cpu_math.rs`), subnormals counted absolutely.
        let x: Vec<f32> = (0..=u32::MAX / 4099).map(|k| f32::from_bits(k * 4099)).collect();
        let n = x.len();
        let input = Literal::from_f64s(
            hloscope_core::ir::Shape::new(hloscope_core::ir::ElementType::F32, [n as i64]),
            &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        );
        let logistic = |v: f64| 1.0 / (1.0 + (-v).exp());
        type Check = (&'static str, fn(f64) -> f64, u64);
        let checks: [Check; 7] = [
            ("exponential", f64::exp, 1),
            ("exponential-minus-one", f64::exp_m1, 1),
            ("log", f64::ln, 1),
            ("log-plus-one", f64::ln_1p, 1),
            ("tanh", f64::tanh, 2),
            ("logistic", logistic, 2),
            ("erf", libm::erf, 2),
        ];
        let mut failures = Vec::new();
        for (op, reference, bound) in checks {
            let hlo = format!(
                "HloModule m\nENTRY %main (x: f32[{n}]) -> f32[{n}] {{\n  %x = f32[{n}] parameter(0)\n  ROOT %y = f32[{n}] {op}(%x)\n}}"
            );
            let module = hloscope_core::parse::parse_module(&hlo).unwrap();
            let (got, program) = wasm_run(&module, &[Value::Array(input.clone())]);
            assert_eq!(program.counts(), (1, 0), "{op} is compiled");
            let Value::Array(got) = got else { panic!("{op}: not an array") };
            let got = got.to_f64_vec();
            let (mut worst, mut at) = (0, 0.0f32);
            for (i, &xi) in x.iter().enumerate() {
                let want = reference(xi as f64) as f32;
                let g = got[i] as f32;
                let tiny = |v: f32| v != 0.0 && v.abs() < f32::MIN_POSITIVE;
                if tiny(xi) || tiny(want) {
                    if (g - want).abs() > f32::MIN_POSITIVE {
                        failures.push(format!("{op}({xi:e}) = {g:e}, want {want:e}"));
                    }
                    continue;
                }
                let u = ulps(g, want);
                if u > worst {
                    (worst, at) = (u, xi);
                }
            }
            println!("{op:22} max {worst} ulp (at x = {at:e}) over {n} inputs");
            if worst > bound {
                failures.push(format!("{op}: {worst} ulp at x = {at:e}, bound {bound}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
    }

    #[test]
    fn the_circular_functions_are_the_shared_algorithms_bit_for_bit() {
        // sin, cos, tan, cbrt, pow and atan2 in WebAssembly (SIMD128 with scalar tails)
        // give the bits of hloscope-approx's native unfused lanes on every 4099th f32
        // bit pattern (pairs: against the same patterns reversed); within the CPU
        // target's unfused bounds where the table states them (`targets/cpu/math.rs`).
        use hloscope_approx::{circular, Scalar};
        let x: Vec<f32> = (0..=u32::MAX / 4099).map(|k| f32::from_bits(k * 4099)).collect();
        let y: Vec<f32> = x.iter().rev().copied().collect();
        let n = x.len();
        let f32s = |v: &[f32]| {
            Literal::from_f64s(
                hloscope_core::ir::Shape::new(hloscope_core::ir::ElementType::F32, [n as i64]),
                &v.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            )
        };
        let (xs, ys) = (f32s(&x), f32s(&y));
        let mut l = Scalar::<false>;
        type Unary = fn(&mut Scalar<false>, f32) -> f32;
        type Binary = fn(&mut Scalar<false>, f32, f32) -> f32;
        /// The op, its algorithm, its reference, its bound in ulp and the domain of it.
        type Check = (&'static str, Unary, fn(f64) -> f64, u64, f32);
        let unary: [Check; 4] = [
            ("sine", circular::sin, f64::sin, 2, 4096.0),
            ("cosine", circular::cos, f64::cos, 2, 4096.0),
            ("tan", circular::tan, f64::tan, 4, 4096.0),
            ("cbrt", circular::cbrt, f64::cbrt, 1, f32::MAX),
        ];
        let binary: [(&str, Binary); 2] = [("power", circular::pow), ("atan2", circular::atan2)];
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let mut failures = Vec::new();
        let run = |op: &str, arity: usize| {
            let params = (0..arity).map(|i| format!("p{i}: f32[{n}]")).collect::<Vec<_>>().join(", ");
            let decls: String = (0..arity).map(|i| format!("  %p{i} = f32[{n}] parameter({i})\n")).collect();
            let uses = (0..arity).map(|i| format!("%p{i}")).collect::<Vec<_>>().join(", ");
            let hlo = format!(
                "HloModule m\nENTRY %main ({params}) -> f32[{n}] {{\n{decls}  ROOT %r = f32[{n}] {op}({uses})\n}}"
            );
            let module = hloscope_core::parse::parse_module(&hlo).unwrap();
            let args = [Value::Array(xs.clone()), Value::Array(ys.clone())];
            let (got, program) = wasm_run(&module, &args[..arity]);
            assert_eq!(program.counts(), (1, 0), "{op} is compiled:\n{}", program.summary());
            let Value::Array(got) = got else { panic!("{op}: not an array") };
            got.to_f64_vec().into_iter().map(|v| v as f32).collect::<Vec<_>>()
        };
        for (op, f, reference, bound, domain) in unary {
            let got = run(op, 1);
            let (mut worst, mut at) = (0, 0.0f32);
            for (i, &xi) in x.iter().enumerate() {
                let want = f(&mut l, xi);
                if !same(got[i], want) {
                    failures.push(format!("{op}({xi:e}) = {:e} in wasm, {want:e} natively", got[i]));
                }
                let exact = reference(xi as f64) as f32;
                if xi.abs() <= domain && exact.abs() >= 1e-3 && exact.abs() >= f32::MIN_POSITIVE {
                    let u = ulps(got[i], exact);
                    if u > worst {
                        (worst, at) = (u, xi);
                    }
                }
            }
            println!("{op:8} max {worst} ulp (at x = {at:e}) for |x| <= {domain:e}");
            if worst > bound {
                failures.push(format!("{op}: {worst} ulp at x = {at:e}, bound {bound}"));
            }
        }
        for (op, f) in binary {
            let got = run(op, 2);
            for i in 0..n {
                let want = f(&mut l, x[i], y[i]);
                if !same(got[i], want) {
                    failures.push(format!("{op}({:e}, {:e}) = {:e} in wasm, {want:e} natively", x[i], y[i], got[i]));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
    }

    #[test]
    fn loops_and_row_reductions_run_in_simd128_with_scalar_tails() {
        // Rows of 4k + 3 elements: every vector path and its tail. A loop (exp, a
        // compare, a select, a convert), a row max (exact in any order) and a row sum
        // (reassociated: within rounding) against the interpreter.
        let hlo = "HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
ENTRY %main (x: f32[5,39], y: s32[5,39]) -> (f32[5,39], f32[5], s32[5]) {
  %x = f32[5,39] parameter(0)
  %y = s32[5,39] parameter(1)
  %e = f32[5,39] exponential(%x)
  %z = f32[] constant(0)
  %zs = f32[5,39] broadcast(%z), dimensions={}
  %p = pred[5,39] compare(%x, %zs), direction=GT
  %c = f32[5,39] convert(%y)
  %s = f32[5,39] select(%p, %e, %c)
  %l = f32[] constant(-inf)
  %m = f32[5] reduce(%x, %l), dimensions={1}, to_apply=%max
  %zi = s32[] constant(0)
  %r = s32[5] reduce(%y, %zi), dimensions={1}, to_apply=%add
  ROOT %t = (f32[5,39], f32[5], s32[5]) tuple(%s, %m, %r)
}";
        let module = optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap();
        let args = hloscope_core::interp::random_inputs(&module, 3);
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        let (got, program) = wasm_run(&module, &args);
        let shapes: Vec<&str> = program.kernels.iter().flatten().map(|k| k.shape.as_str()).collect();
        assert!(shapes.iter().all(|s| s.starts_with("simd128")), "{shapes:?}");
        // Fusion makes one kernel: the loop is stored inside the row reductions' loop.
        assert_eq!(shapes, ["simd128 4 lanes, row reduction (maximum, add)"]);
        let got = got.flatten();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!(close(g, w, 2e-7), "got {g:?}, want {w:?}");
        }
        // A loop kernel alone.
        let loop_only =
            hlo.replace("ROOT %t = (f32[5,39], f32[5], s32[5]) tuple(%s, %m, %r)", "ROOT %t = f32[5,39] tuple(%s)");
        let loop_only = loop_only
            .replace("-> (f32[5,39], f32[5], s32[5])", "-> f32[5,39]")
            .replace("ROOT %t = f32[5,39] tuple(%s)", "ROOT %o = f32[5,39] negate(%s)");
        let module = optimize(&hloscope_core::parse::parse_module(&loop_only).unwrap()).unwrap();
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        let (got, program) = wasm_run(&module, &args);
        let shapes: Vec<&str> = program.kernels.iter().flatten().map(|k| k.shape.as_str()).collect();
        assert_eq!(shapes, ["simd128 4 lanes"]);
        // exp is the approximation (within its ulp bound), the rest exact.
        let got = got.flatten();
        assert!(close(&got[0], &want[0], 2e-7), "{got:?}\n{want:?}");
    }

    #[test]
    fn max_and_min_with_constants_keep_nans_and_signed_zeros() {
        // `max(x, k)` / `min(x, k)` with a constant `k` are one `f32x4.pmax`/`pmin` (and
        // the scalar tail a compare and select), as on the CPU target; the interpreter's
        // rules still hold: a NaN operand is the result, max(-0, +0) = +0, min(-0, +0) =
        // -0, constants on either side. Inputs mix ±0, ±inf, NaN and ordinary values; 5
        // elements run scalar, 1002 run vectors with a tail.
        let specials = [0.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5, -1.5, 3.0, -7.25, 1e-30];
        for t in ["f32", "f64"] {
            for n in [5usize, 1002] {
                let mut lines = String::new();
                let mut outs = Vec::new();
                for (i, k) in ["0", "-0", "1.5", "-3", "inf", "-inf", "nan"].iter().enumerate() {
                    lines += &format!(
                        "  %k{i} = {t}[] constant({k})\n  %b{i} = {t}[{n}] broadcast(%k{i}), dimensions={{}}\n"
                    );
                    lines +=
                        &format!("  %mx{i} = {t}[{n}] maximum(%a, %b{i})\n  %xm{i} = {t}[{n}] maximum(%b{i}, %a)\n");
                    lines +=
                        &format!("  %mn{i} = {t}[{n}] minimum(%a, %b{i})\n  %nm{i} = {t}[{n}] minimum(%b{i}, %a)\n");
                    outs.extend([format!("%mx{i}"), format!("%xm{i}"), format!("%mn{i}"), format!("%nm{i}")]);
                }
                let types = vec![format!("{t}[{n}]"); outs.len()].join(", ");
                let hlo = format!(
                    "HloModule m\nENTRY %main (a: {t}[{n}]) -> ({types}) {{\n  %a = {t}[{n}] parameter(0)\n{lines}  ROOT %r = ({types}) tuple({})\n}}",
                    outs.join(", ")
                );
                let module = optimize(&hloscope_core::parse::parse_module(&hlo).unwrap()).unwrap();
                let values: Vec<f64> = (0..n).map(|i| specials[i % specials.len()]).collect();
                let elem =
                    if t == "f32" { hloscope_core::ir::ElementType::F32 } else { hloscope_core::ir::ElementType::F64 };
                let args = [Value::Array(Literal::from_f64s(hloscope_core::ir::Shape::new(elem, [n as i64]), &values))];
                let want = Interpreter::new(&module).run(&args).unwrap().flatten();
                let (got, program) = wasm_run(&module, &args);
                assert_eq!(program.counts().1, 0, "{}", program.summary());
                let got = got.flatten();
                assert_eq!(got.len(), outs.len());
                for (o, (g, w)) in got.iter().zip(&want).enumerate() {
                    for (i, x) in values.iter().enumerate() {
                        // Bit for bit; NaNs (the generic min/max may change their payload) as NaN.
                        let (a, b) = (g.get(i).as_f64(), w.get(i).as_f64());
                        assert!(
                            g.bits(i) == w.bits(i) || (a.is_nan() && b.is_nan()),
                            "{t}[{n}] {}: element {i} = {x} -> {a}, want {b}",
                            outs[o]
                        );
                    }
                }
                if t == "f32" && n > 5 {
                    let ops = function_bodies(&program.bytes).concat();
                    let count = |f: fn(&wasmparser::Operator) -> bool| ops.iter().filter(|op| f(op)).count();
                    // The simplifier may fold the infinite constants' and merge the two
                    // operand orders; the finite constants' ops stay, and only the NaN
                    // constant's and min(x, -0)'s keep the IEEE forms.
                    let (pmax, pmin) = (
                        count(|op| matches!(op, wasmparser::Operator::F32x4PMax)),
                        count(|op| matches!(op, wasmparser::Operator::F32x4PMin)),
                    );
                    let (max, min) = (
                        count(|op| matches!(op, wasmparser::Operator::F32x4Max)),
                        count(|op| matches!(op, wasmparser::Operator::F32x4Min)),
                    );
                    assert!(pmax >= 4 && pmin >= 3 && max <= 2 && min <= 4, "{pmax} {pmin} {max} {min}");
                }
            }
        }
    }

    #[test]
    fn a_vector_loop_computes_what_it_does_not_move_once_before_it() {
        // `x[r, c] * (s[r] + 1)²`: the row's factor is loaded and computed once per row,
        // in scalar code before the vector loop over `c`, and both the vector steps and
        // the scalar tail (1026 columns) read it.
        let hlo = "HloModule m
ENTRY %main (x: f32[8,1026], s: f32[8]) -> f32[8,1026] {
  %x = f32[8,1026] parameter(0)
  %s = f32[8] parameter(1)
  %one = f32[] constant(1)
  %ones = f32[8] broadcast(%one), dimensions={}
  %t = f32[8] add(%s, %ones)
  %q = f32[8] multiply(%t, %t)
  %b = f32[8,1026] broadcast(%q), dimensions={0}
  ROOT %y = f32[8,1026] multiply(%x, %b)
}";
        let module = optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap();
        let args = hloscope_core::interp::random_inputs(&module, 5);
        let want = Interpreter::new(&module).run(&args).unwrap().flatten();
        let (got, program) = wasm_run(&module, &args);
        assert_eq!(program.counts(), (1, 0), "{}", program.summary());
        assert_eq!(got.flatten()[0].to_f64_vec(), want[0].to_f64_vec(), "exact ops: the interpreter's bits");
        let bodies = function_bodies(&program.bytes);
        let kernel = &bodies[0];
        let at = |f: fn(&wasmparser::Operator) -> bool| {
            kernel.iter().enumerate().filter(|(_, op)| f(op)).map(|(i, _)| i).collect::<Vec<_>>()
        };
        // The rows' loop, the vector loop, the tail's loop (which loads `x` scalar).
        let loops = at(|op| matches!(op, wasmparser::Operator::Loop { .. }));
        let loads = at(|op| matches!(op, wasmparser::Operator::F32Load { .. }));
        let adds = at(|op| matches!(op, wasmparser::Operator::F32Add));
        assert_eq!(loads.iter().filter(|&&l| l < loops[2]).count(), 1, "{loads:?}, the loops at {loops:?}");
        assert!(loads[0] < loops[1] && loads[1] > loops[2], "{loads:?}, the loops at {loops:?}");
        assert!(adds.len() == 1 && adds[0] < loops[1], "{adds:?}, the loops at {loops:?}");
        assert_eq!(at(|op| matches!(op, wasmparser::Operator::F32x4Splat)).len(), 1, "one splat, before the loop");
    }

    #[test]
    fn the_gemm_gives_the_interpreters_bits() {
        // Edge tiles (m, n not multiples of 4 and 8), a batch, a transposed lhs, a
        // transposed rhs, a long k and batch dims apart from each other: every f32
        // output summed in k order, as the interpreter sums it.
        let dots = [
            ("f32[7,9]", "f32[9,13]", "f32[7,13]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
            ("f32[9,7]", "f32[9,13]", "f32[7,13]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
            ("f32[7,9]", "f32[13,9]", "f32[7,13]", "lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
            (
                "f32[3,5,300]",
                "f32[3,300,17]",
                "f32[3,5,17]",
                "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}",
            ),
            // Attention's heads read in place: batch dims (0, 2) of [b, s, h, d] on both
            // sides, then on the rhs only (the weighted sum of values); f64 through the
            // plain loop.
            (
                "f32[2,5,3,4]",
                "f32[2,6,3,4]",
                "f32[2,3,5,6]",
                "lhs_batch_dims={0,2}, rhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_contracting_dims={3}",
            ),
            (
                "f32[2,3,5,6]",
                "f32[2,6,3,4]",
                "f32[2,3,5,4]",
                "lhs_batch_dims={0,1}, rhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_contracting_dims={1}",
            ),
            (
                "f64[2,3,5,6]",
                "f64[2,6,3,4]",
                "f64[2,3,5,4]",
                "lhs_batch_dims={0,1}, rhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_contracting_dims={1}",
            ),
            ("f64[6,5]", "f64[5,3]", "f64[6,3]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
            ("bf16[6,5]", "bf16[5,3]", "bf16[6,3]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        ];
        for (a, b, out, dims) in dots {
            let hlo = format!(
                "HloModule m\nENTRY %main (a: {a}, b: {b}) -> {out} {{\n  %a = {a} parameter(0)\n  %b = {b} parameter(1)\n  ROOT %d = {out} dot(%a, %b), {dims}\n}}"
            );
            let module = hloscope_core::parse::parse_module(&hlo).unwrap();
            let args = hloscope_core::interp::random_inputs(&module, 11);
            let want = Interpreter::new(&module).run(&args).unwrap();
            let (got, program) = wasm_run(&module, &args);
            assert_eq!(program.counts(), (1, 0), "{hlo}\n{}", program.summary());
            // An f32 dot alone runs on the GEMM library's own `kernel`, without a module.
            assert_eq!(program.runs_on_library(), a.starts_with("f32"), "{hlo}");
            let (Value::Array(g), Value::Array(w)) = (&got, &want) else { panic!("not arrays") };
            assert!(same_result(g, w), "{hlo}: got {g:?}, want {w:?}");
        }
    }

    #[test]
    fn a_program_of_f32_dots_runs_on_the_library_alone() {
        // Three dots in a row ([`THREE_DOTS`]): no module of its own, the GEMM
        // library's `kernel` runs each on its directory entry, one call per kernel when
        // timed and one call for the stretch of all three when not, on one thread and
        // on two. With an elementwise kernel after them the program has its module.
        let mixed = THREE_DOTS.replace(
            "ROOT %d3 = f32[2,37,6] dot(%d2, %e), lhs_contracting_dims={2}, rhs_contracting_dims={1}",
            "%d3 = f32[2,37,6] dot(%d2, %e), lhs_contracting_dims={2}, rhs_contracting_dims={1}\n  ROOT %t = f32[2,37,6] abs(%d3)",
        );
        for (hlo, on_library) in [(THREE_DOTS, true), (mixed.as_str(), false)] {
            let module = optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap();
            let args = hloscope_core::interp::random_inputs(&module, 5);
            let want = Interpreter::new(&module).run(&args).unwrap();
            let want = want.flatten();
            for threads in [1, 2] {
                let program = wasm::compile_threaded(&module, threads).unwrap();
                assert_eq!(program.runs_on_library(), on_library, "{}", program.summary());
                if on_library && threads == 1 {
                    assert_eq!(
                        wasm::host::stretches(&program),
                        vec![std::ops::Range { start: 0, end: 3 }],
                        "one stretch"
                    );
                }
                let exe = WasmExecutable::new(&module, program).unwrap();
                for (how, got) in [("untimed", exe.run(&args)), ("timed", exe.run_timed(&args))] {
                    let got = got.unwrap().0.flatten();
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        assert!(same_result(g, w), "{how} on {threads} threads (library {on_library}): {g:?} {w:?}");
                    }
                }
            }
        }
    }

    /// Programs whose kernels are large enough to split across threads: single and
    /// batched f32 GEMMs (edge tiles, a transposed rhs, more rows than one block), an
    /// f64 dot (the plain loop, split by rows), an elementwise loop, a row reduction,
    /// and a sort on the host between split kernels. Each with the interpreter's result
    /// when every op is exact.
    const THREADED: [(&str, &str, bool); 6] = [
        (
            "gemm",
            "HloModule m\nENTRY %main (a: f32[200,96], b: f32[96,163]) -> f32[200,163] {\n  %a = f32[200,96] parameter(0)\n  %b = f32[96,163] parameter(1)\n  ROOT %d = f32[200,163] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
            true,
        ),
        (
            "batched_gemm_transposed_rhs",
            "HloModule m\nENTRY %main (a: f32[3,70,50], b: f32[3,41,50]) -> f32[3,70,41] {\n  %a = f32[3,70,50] parameter(0)\n  %b = f32[3,41,50] parameter(1)\n  ROOT %d = f32[3,70,41] dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}\n}",
            true,
        ),
        (
            "f64_dot",
            "HloModule m\nENTRY %main (a: f64[150,60], b: f64[60,90]) -> f64[150,90] {\n  %a = f64[150,60] parameter(0)\n  %b = f64[60,90] parameter(1)\n  ROOT %d = f64[150,90] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
            true,
        ),
        (
            "elementwise",
            "HloModule m\nENTRY %main (x: f32[300001], y: f32[300001]) -> f32[300001] {\n  %x = f32[300001] parameter(0)\n  %y = f32[300001] parameter(1)\n  %e = f32[300001] exponential(%x)\n  %m = f32[300001] multiply(%e, %y)\n  ROOT %a = f32[300001] add(%m, %x)\n}",
            false,
        ),
        (
            "row_reduction",
            "HloModule m\n%max (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %m = f32[] maximum(%a, %b)\n}\nENTRY %main (x: f32[1999,301]) -> f32[1999] {\n  %x = f32[1999,301] parameter(0)\n  %l = f32[] constant(-inf)\n  ROOT %m = f32[1999] reduce(%x, %l), dimensions={1}, to_apply=%max\n}",
            true,
        ),
        (
            "host_sort_between",
            "HloModule m\n%lt (a: f32[], b: f32[]) -> pred[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %c = pred[] compare(%a, %b), direction=LT\n}\nENTRY %main (x: f32[100000], y: f32[100000]) -> f32[100000] {\n  %x = f32[100000] parameter(0)\n  %y = f32[100000] parameter(1)\n  %n = f32[100000] multiply(%x, %y)\n  %so = f32[100000] sort(%n), dimensions={0}, to_apply=%lt\n  %s = f32[100000] subtract(%so, %y)\n  ROOT %r = f32[100000] multiply(%s, %x)\n}",
            true,
        ),
    ];

    #[test]
    fn kernels_that_are_the_same_code_share_one_function() {
        let module = optimize(&hloscope_core::parse::parse_module(&layers(6)).unwrap()).unwrap();
        let args = hloscope_core::interp::random_inputs(&module, 11);
        let want = Interpreter::new(&module).run(&args).unwrap();
        for threads in [1, 2] {
            let program = wasm::compile_threaded(&module, threads).unwrap();
            let sharers: Vec<(usize, usize)> =
                program.kernels.iter().enumerate().filter_map(|(i, k)| Some((i, k.as_ref()?.shares?))).collect();
            assert!(sharers.len() >= 2, "{}", program.summary());
            for &(i, first) in &sharers {
                let (k, of) = (program.kernels[i].as_ref().unwrap(), program.kernels[first].as_ref().unwrap());
                // An earlier kernel with its own function; each one called with its own
                // table of offsets, past the arena.
                assert!(first < i && of.shares.is_none(), "{}", program.summary());
                assert!(k.table != of.table && k.table >= program.plan.arena.arena_bytes && of.table > 0);
                assert!(k.shape.ends_with(&format!("code of kernel {first}")), "{}", k.shape);
            }
            // A function per kernel with its own code, and the export.
            let own = program.kernels.iter().flatten().filter(|k| k.shares.is_none() && !k.library).count();
            assert_eq!(function_bodies(&program.bytes).len(), own + 1);
            if threads > 1 {
                validate_threaded(&program.bytes).unwrap();
            } else {
                validate(&program.bytes).unwrap();
            }
            let exe = WasmExecutable::new(&module, program).unwrap();
            let (got, _) = exe.run(&args).unwrap();
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{threads} threads against the interpreter");
        }
    }

    #[test]
    fn kernel_traps_past_the_kernels_and_whole_stops_at_the_last() {
        // `kernel` straight from wasmtime, on the standalone module: an index past the
        // plan's kernels (or negative) traps rather than reading past the directory, and
        // `kernel(WHOLE, 0, last)` with `last` past the kernels runs them all, as each
        // called by its index over its range does (the arena filled with the same bytes).
        let module = optimize(&hloscope_core::parse::parse_module(&layers(3)).unwrap()).unwrap();
        let program = wasm::compile(&module).unwrap();
        let engine = wasm::runtime::engine();
        let compiled = wasmtime::Module::new(engine, program.standalone()).unwrap();
        let n = program.kernels.len() as i32;
        let arena = program.plan.arena.arena_bytes as usize;
        let run = |calls: &[(i32, i32, i32)]| -> Result<Vec<u8>, String> {
            let mut store = wasmtime::Store::new(engine, ());
            let instance = wasmtime::Instance::new(&mut store, &compiled, &[]).map_err(|e| e.to_string())?;
            let kernel = instance.get_typed_func::<(i32, i32, i32), ()>(&mut store, wasm::KERNEL).unwrap();
            let memory = instance.get_memory(&mut store, "memory").unwrap();
            for (i, b) in memory.data_mut(&mut store)[..arena].iter_mut().enumerate() {
                *b = (i as u32).wrapping_mul(2654435761).rotate_right(13) as u8;
            }
            for &call in calls {
                kernel.call(&mut store, call).map_err(|e| format!("{call:?}: {e:?}"))?;
            }
            Ok(memory.data(&store)[..arena].to_vec())
        };
        for bad in [n, n + 1, -5, i32::MAX] {
            assert!(run(&[(bad, 0, 1)]).is_err(), "kernel {bad} of {n}");
        }
        let by_index: Vec<_> =
            program.kernels.iter().enumerate().map(|(i, k)| (i as i32, 0, k.as_ref().unwrap().extent as i32)).collect();
        let each = run(&by_index).unwrap();
        assert_ne!(each, run(&[]).unwrap(), "the kernels change the arena");
        assert_eq!(run(&[(wasm::WHOLE, 0, i32::MAX)]).unwrap(), each);
        assert_eq!(run(&[(wasm::WHOLE, 0, n)]).unwrap(), each);
        assert_eq!(run(&[(wasm::WHOLE, -1, n)]).unwrap(), run(&[]).unwrap(), "a negative first runs nothing");
    }

    #[test]
    fn threads_give_the_one_thread_bits() {
        for (name, hlo, exact) in THREADED {
            let module = optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap();
            let args = hloscope_core::interp::random_inputs(&module, 5);
            let (one, single) = wasm_run(&module, &args);
            assert_eq!(single.threads, 1);
            if exact {
                let want = Interpreter::new(&module).run(&args).unwrap();
                assert_eq!(format!("{one:?}"), format!("{want:?}"), "{name}: one thread against the interpreter");
            }
            for threads in [2, 3] {
                let program = wasm::compile_threaded(&module, threads).unwrap();
                validate_threaded(&program.bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
                // Some kernel really is split, and the host kernels stay on the host.
                let split = program.kernels.iter().flatten().filter(|k| wasm::host::chunks(k, threads).len() > 1);
                assert!(split.count() >= 1, "{name}: nothing split\n{}", program.summary());
                assert_eq!(program.counts(), single.counts(), "{name}");
                let exe = WasmExecutable::new(&module, program).unwrap();
                assert_eq!(exe.threads(), threads);
                // Twice: the second run reuses the sleeping or spinning workers.
                for _ in 0..2 {
                    let (got, _) = exe.run(&args).unwrap();
                    assert_eq!(format!("{got:?}"), format!("{one:?}"), "{name}: {threads} threads against one");
                }
            }
        }
        // A small kernel stays on the calling thread.
        let small = THREADED[3].1.replace("300001", "1000");
        let program =
            wasm::compile_threaded(&optimize(&hloscope_core::parse::parse_module(&small).unwrap()).unwrap(), 2);
        assert!(program.unwrap().kernels.iter().flatten().all(|k| wasm::host::chunks(k, 2) == [(0, k.extent as u32)]));
    }

    #[test]
    fn whole_stretches_run_the_kernels_between_host_kernels() {
        // Untimed runs call consecutive kernels in one call of the module's export (index
        // `WHOLE`), timed runs call it once per kernel: the same bytes, and the interpreter's (every
        // op here is exact). A sort (on the host) sits between two pairs of kernels.
        let hlo = "HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
ENTRY %main (x: f32[64,1000]) -> (f32[64,1000], f32[64,1000]) {
  %x = f32[64,1000] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[64] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %bm = f32[64,1000] broadcast(%m), dimensions={0}
  %d = f32[64,1000] subtract(%x, %bm)
  %s = f32[64,1000] sort(%d), dimensions={1}, to_apply=%lt
  %t = f32[64,1000] multiply(%s, %s)
  %m2 = f32[64] reduce(%t, %ninf), dimensions={1}, to_apply=%max
  %b2 = f32[64,1000] broadcast(%m2), dimensions={0}
  %o = f32[64,1000] divide(%t, %b2)
  ROOT %r = (f32[64,1000], f32[64,1000]) tuple(%d, %o)
}";
        let module = optimize(&hloscope_core::parse::parse_module(hlo).unwrap()).unwrap();
        let args = hloscope_core::interp::random_inputs(&module, 9);
        let want = format!("{:?}", Interpreter::new(&module).run(&args).unwrap());
        for threads in [1, 2] {
            let program = wasm::compile_threaded(&module, threads).unwrap();
            // Kernels in WebAssembly (W) and on the host (H), in plan order.
            let kinds: String = program.kernels.iter().map(|k| if k.is_some() { 'W' } else { 'H' }).collect();
            assert!(kinds.contains("WWH") && kinds.contains("HWW"), "{kinds}\n{}", program.summary());
            let exe = WasmExecutable::new(&module, program).unwrap();
            for _ in 0..2 {
                let (batched, _) = exe.run(&args).unwrap();
                assert_eq!(format!("{batched:?}"), want, "{threads} threads, through run");
                let (each, times) = exe.run_timed(&args).unwrap();
                assert_eq!(times.kernels.map(|k| k.len()), Some(kinds.len()));
                assert_eq!(format!("{each:?}"), want, "{threads} threads, kernel by kernel");
            }
        }
    }

    /// wasmparser's verdict on a threaded module (shared memory: the threads feature).
    fn validate_threaded(bytes: &[u8]) -> Result<(), String> {
        let features = wasmparser::WasmFeatures::default() | wasmparser::WasmFeatures::THREADS;
        wasmparser::Validator::new_with_features(features).validate_all(bytes).map(|_| ()).map_err(|e| e.to_string())
    }

    /// Equal within `rel` relative (plus a tiny absolute) error; NaN matches NaN;
    /// integers and preds bit for bit.
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
    fn the_jax_corpus_matches_the_interpreter() {
        let mut failures = Vec::new();
        let (mut compiled, mut host, mut simd) = (0, 0, 0);
        for (name, module) in jax_corpus() {
            let optimized = optimize(&module).unwrap();
            let args = hloscope_core::interp::random_inputs(&module, 7);
            let want = Interpreter::new(&module).run(&args).unwrap().flatten();
            let (got, program) = wasm_run(&optimized, &args);
            let (c, h) = program.counts();
            compiled += c;
            host += h;
            simd += program.kernels.iter().flatten().filter(|k| k.shape.starts_with("simd128")).count();
            let got = got.flatten();
            if got.len() != want.len() || got.iter().zip(&want).any(|(g, w)| !close(g, w, 2e-4)) {
                failures.push(format!("{name}: the outputs differ from the interpreter's\n{}", program.summary()));
            }
        }
        println!("JAX corpus: {compiled} kernels in WebAssembly ({simd} of them SIMD128), {host} on the host");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(simd >= 40, "only {simd} kernels were vectorized");
        assert!(compiled >= 80, "only {compiled} kernels were compiled");
    }

    /// Runs the manifest's programs in Node (V8): each module instantiated as it is (one
    /// with an f32 dot on a memory of its pages, with the GEMM library's instance on it),
    /// its parameters written at their offsets, its kernels called in order, its result's
    /// bytes written beside it.
    const NODE_RUNNER: &str = r#"
const fs = require('fs');
const dir = process.argv[2];
(async () => {
  const library = new WebAssembly.Module(fs.readFileSync(`${dir}/gemm.wasm`));
  for (const p of JSON.parse(fs.readFileSync(dir + '/programs.json'))) {
    const imports = {};
    if (p.gemm) {
      const memory = new WebAssembly.Memory({ initial: p.pages });
      imports.env = { memory };
      imports.gemm = { table: new WebAssembly.Instance(library, { env: { memory } }).exports.table };
    }
    const { instance } = await WebAssembly.instantiate(fs.readFileSync(`${dir}/${p.name}.wasm`), imports);
    const mem = new Uint8Array(instance.exports.memory.buffer);
    for (const [offset, file] of p.params) mem.set(fs.readFileSync(`${dir}/${file}`), offset);
    for (const [index, extent] of p.calls) instance.exports.kernel(index, 0, extent);
    const out = p.result.map(([offset, len]) => Buffer.from(mem.subarray(offset, offset + len)));
    fs.writeFileSync(`${dir}/${p.name}.out`, Buffer.concat(out));
  }
})().catch((e) => { console.error(e); process.exit(1); });
"#;

    #[test]
    fn v8_gives_the_bytes_wasmtime_gives() {
        // Every JAX corpus program whose kernels are all WebAssembly, and every semantic
        // case: one Node process runs them all.
        let node = std::process::Command::new("node").arg("--version").output();
        assert!(node.is_ok_and(|o| o.status.success()), "this test needs Node.js (`node`) on the PATH");
        let dir = std::env::temp_dir().join(format!("hloscope-wasm-v8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut programs: Vec<(String, Module, Vec<Value>)> = jax_corpus()
            .into_iter()
            .map(|(name, m)| {
                let args = hloscope_core::interp::random_inputs(&m, 7);
                (name, optimize(&m).unwrap(), args)
            })
            .collect();
        for (i, c) in cases().iter().enumerate() {
            let m = hloscope_core::parse::parse_module(&c.repeated(9).hlo).unwrap();
            let args = c.repeated(9).inputs.iter().cloned().map(Value::Array).collect();
            programs.push((format!("case{i}"), m, args));
        }
        // Kernels sharing one function, each with its own table of offsets.
        let layers = optimize(&hloscope_core::parse::parse_module(&layers(6)).unwrap()).unwrap();
        let args = hloscope_core::interp::random_inputs(&layers, 13);
        programs.push(("layers".into(), layers, args));
        let mut manifest = Vec::new();
        let mut wanted = Vec::new();
        let mut gemm_programs = 0;
        std::fs::write(dir.join("gemm.wasm"), wasm::gemm::library(false)).unwrap();
        for (name, m, args) in &programs {
            let program = wasm::compile(m).unwrap();
            if program.counts().1 > 0 {
                continue;
            }
            let plan = &program.plan;
            let mut params = Vec::new();
            for (k, (p, v)) in plan.params.iter().zip(args).enumerate() {
                let Value::Array(l) = v else { continue };
                let [b] = p.leaves()[..] else { continue };
                let file = format!("{name}.p{k}");
                std::fs::write(dir.join(&file), l.to_le_bytes()).unwrap();
                params.push(format!("[{}, \"{file}\"]", plan.arena.offset(b)));
            }
            let calls: Vec<String> = (program.kernels.iter().enumerate())
                .filter_map(|(i, k)| Some(format!("[{i}, {}]", k.as_ref()?.extent)))
                .collect();
            let result: Vec<String> = plan
                .result
                .leaves()
                .iter()
                .map(|&b| format!("[{}, {}]", plan.arena.offset(b), plan.buffers[b].shape.byte_size()))
                .collect();
            // A module with its data (the runner below has none of the host's steps).
            std::fs::write(dir.join(format!("{name}.wasm")), program.standalone()).unwrap();
            gemm_programs += program.gemm as usize;
            manifest.push(format!(
                "{{\"name\": \"{name}\", \"gemm\": {}, \"pages\": {}, \"params\": [{}], \"calls\": [{}], \"result\": [{}]}}",
                program.gemm,
                program.pages,
                params.join(", "),
                calls.join(", "),
                result.join(", ")
            ));
            let exe = WasmExecutable::new(m, program.clone()).unwrap();
            let got = exe.run(args).unwrap().0.flatten();
            wanted.push((name.clone(), got));
        }
        std::fs::write(dir.join("programs.json"), format!("[{}]", manifest.join(",\n"))).unwrap();
        std::fs::write(dir.join("run.js"), NODE_RUNNER).unwrap();
        let out = std::process::Command::new("node").arg(dir.join("run.js")).arg(&dir).output().unwrap();
        assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
        let mut failures = Vec::new();
        for (name, want) in &wanted {
            let bytes = std::fs::read(dir.join(format!("{name}.out"))).unwrap();
            let mut at = 0;
            for w in want {
                let n = w.to_le_bytes().len();
                let got = Literal::from_le_bytes(w.shape.clone(), &bytes[at..at + n]).unwrap();
                at += n;
                if !same_result(&got, w) {
                    failures.push(format!("{name}: V8 and wasmtime differ"));
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        println!("{} programs give the same results in V8 and wasmtime", wanted.len());
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(wanted.len() >= 50, "only {} programs ran in V8", wanted.len());
        assert!(gemm_programs >= 5, "only {gemm_programs} of them imported the GEMM library");
    }

    /// One conformance program on the target, after its pipeline without constant
    /// folding (the programs' inputs are constants, which folding would evaluate on the
    /// host), checked by its own `check.*` custom calls: (kernels in WebAssembly, why
    /// each other kernel is on the host, the checks aside).
    fn conformance_program(dir: &Path, path: &str) -> Result<(usize, Vec<String>), String> {
        use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig};
        let text = std::fs::read_to_string(dir.join(path)).unwrap();
        let mut module = hloscope_core::parse::parse_module(&text).map_err(|e| format!("parse: {e:?}"))?;
        let spec = format!("{},-constant-fold", hloscope_core::targets::PIPELINE);
        let passes = parse_pipeline_spec(&spec).map_err(|e| e.to_string())?;
        let config = PipelineConfig { passes, snapshots: false, ..Default::default() };
        run_pipeline(&mut module, &config).map_err(|e| e.to_string())?;
        let program = wasm::compile(&module).map_err(|e| format!("compile: {e}"))?;
        let compiled = program.counts().0;
        let host: Vec<String> = program
            .plan
            .kernels
            .iter()
            .zip(&program.kernels)
            .filter(|(k, w)| w.is_none() && !k.kind.to_string().contains("custom-call"))
            .map(|(k, _)| k.kind.to_string())
            .collect();
        let summary = program.summary();
        let exe = WasmExecutable::new(&module, program)?;
        let mut failures = Vec::new();
        exe.run_with_custom_calls(&[], &mut |inst, args| {
            if let Err(e) = checks::run_check(inst, args, "testdata") {
                failures.push(e);
            }
            Ok(Value::Tuple(vec![]))
        })?;
        if let Some(first) = failures.first() {
            return Err(format!("check: {first}\n{summary}"));
        }
        Ok((compiled, host))
    }

    #[test]
    fn conformance_programs_pass_their_checks() {
        // Every program using only the ops the compiled targets take (the CPU test's
        // selection, `conformance/selection.rs`): every one must pass.
        let dir = corpus::corpus_dir();
        let programs = selection::compiled_programs(&dir);
        assert!(programs.len() > 1000, "only {} programs selected", programs.len());
        let (mut compiled, mut ran) = (0, 0);
        let mut host: std::collections::BTreeMap<String, usize> = Default::default();
        let mut failures = Vec::new();
        for p in &programs {
            match conformance_program(&dir, p) {
                Ok((c, h)) => {
                    (compiled, ran) = (compiled + c, ran + 1);
                    for why in h {
                        *host.entry(why).or_default() += 1;
                    }
                }
                Err(e) => failures.push(format!("{p}: {e}")),
            }
        }
        let on_host: usize = host.values().sum();
        println!(
            "{} programs: {ran} ran ({compiled} kernels in WebAssembly, {on_host} on the host besides the checks), {} failed",
            programs.len(),
            failures.len()
        );
        let mut reasons: Vec<(&String, &usize)> = host.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1));
        for (why, n) in reasons.iter().take(12) {
            println!("  {n:5} on the host: {why}");
        }
        assert!(failures.is_empty(), "{} programs fail on wasm:\n{}", failures.len(), failures.join("\n\n"));
        assert!(ran > 1200 && compiled > 1000, "only {ran} programs ran, {compiled} kernels compiled");
    }
}
