//! The WebAssembly target's compilation artifact (feature `wasm-run`): what a later
//! process needs to run a program under wasmtime without parsing, running the passes,
//! planning, emitting or compiling again (the backend's compilation cache stores these).
//!
//! It holds the optimized module (the host kernels interpret parts of it), the
//! [`WasmProgram`] (plan, kernels, module bytes) and the module as wasmtime compiled it
//! (`wasmtime::Module::serialize`), so a hit also skips wasmtime's Cranelift. The
//! envelope is [`crate::targets::envelope`]'s with magic `HSWASMAR`; the payload is
//! postcard. Loading checks the envelope, the compiler version, the module against the
//! limits and the plan against the module ([`kernel::verify::check_stored`]); wasmtime
//! refuses code compiled by another version or configuration of itself. The compiled
//! code is native machine code and is trusted on the same grounds as the CPU target's
//! artifacts: the checksum guards it, and the cache folder is the user's own.

use super::runtime::{self, engine, WasmExecutable};
use super::WasmProgram;
use crate::ir::Module;
use crate::kernel;
use crate::targets::envelope::{self, compiler_version};
use std::time::Instant;

/// Bumped whenever the payload's layout or the serde form of its types changes.
pub const FORMAT_VERSION: u32 = 7;

const MAGIC: &[u8; 8] = b"HSWASMAR";

#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    compiler: String,
    module: Module,
    program: WasmProgram,
    /// The module as wasmtime compiled it.
    compiled: Vec<u8>,
}

/// Instantiates `program` (compiled from `module`) as [`WasmExecutable::new`] does, and
/// returns its artifact as bytes too ([`load`] turns them back into an executable).
pub fn compile(module: &Module, program: WasmProgram) -> Result<(WasmExecutable, Vec<u8>), String> {
    let start = Instant::now();
    let compiled = runtime::compile_module(&program)?;
    let serialized = match &compiled {
        Some(c) => c.serialize().map_err(|e| format!("wasmtime cannot serialize the module: {e:?}"))?,
        None => Vec::new(),
    };
    let payload = Payload {
        compiler: compiler_version(),
        module: module.clone(),
        program: program.clone(),
        compiled: serialized,
    };
    let bytes = envelope::seal(MAGIC, FORMAT_VERSION, &envelope::encode(&payload)?);
    let exe = WasmExecutable::instantiate(module, program, compiled.as_ref(), start)?;
    Ok((exe, bytes))
}

/// The executable and its optimized module from an artifact made by [`compile`]: corrupt,
/// truncated or stale bytes (another format, another compiler, another wasmtime) give an
/// error saying why.
pub fn load(bytes: &[u8]) -> Result<(WasmExecutable, Module), String> {
    let start = Instant::now();
    let payload: Payload = envelope::decode("payload", envelope::open(MAGIC, FORMAT_VERSION, "wasm artifact", bytes)?)?;
    if payload.compiler != compiler_version() {
        return Err(format!("built by `{}`, this is `{}`", payload.compiler, compiler_version()));
    }
    let Payload { module, program, compiled, .. } = payload;
    crate::limits::check_module(&module, &crate::limits::Limits::default()).map_err(|e| e.to_string())?;
    kernel::verify::check_stored(&module, module.entry, &program.plan)?;
    if program.kernels.len() != program.plan.kernels.len() {
        return Err("stale artifact: the kernels do not match the plan".into());
    }
    if !(1..=super::MAX_THREADS).contains(&program.threads) {
        return Err(format!("the artifact is built for {} threads", program.threads));
    }
    // SAFETY: the bytes passed the checksum and come from `compile` above, by this very
    // compiler (its version matched): `serialize` of a module this engine compiled.
    // wasmtime itself refuses code from another version or configuration. A program the
    // GEMM library runs has none.
    let compiled = if program.runs_on_library() {
        None
    } else {
        let compiled = unsafe { wasmtime::Module::deserialize(engine(), &compiled) }
            .map_err(|e| format!("wasmtime refuses the compiled module: {e:?}"))?;
        Some(compiled)
    };
    let exe = WasmExecutable::instantiate(&module, program, compiled.as_ref(), start)?;
    Ok((exe, module))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = r#"
func.func public @main(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<64xf32>
  %1 = stablehlo.exponential %0 : tensor<64xf32>
  %2 = stablehlo.add %1, %x : tensor<64xf32>
  return %2 : tensor<64xf32>
}
"#;

    fn optimized() -> Module {
        let module = crate::parse::parse_module(PROGRAM).unwrap();
        crate::targets::optimize(&module).unwrap()
    }

    #[test]
    fn a_loaded_artifact_gives_the_compiled_programs_bits() {
        let module = optimized();
        let (exe, bytes) = compile(&module, super::super::compile(&module).unwrap()).unwrap();
        let args = crate::interp::random_inputs(&module, 7);
        let (want, _) = exe.run(&args).unwrap();
        let (loaded, loaded_module) = load(&bytes).unwrap();
        let print = crate::print::hlo::print_module;
        assert_eq!(print(&loaded_module), print(&module));
        let (got, _) = loaded.run(&args).unwrap();
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
        // And right: exp is the shared approximation, within a few ulps of the interpreter's.
        let expected = crate::interp::Interpreter::new(&module).run(&args).unwrap();
        let values = |v: crate::ir::Value| v.flatten().iter().flat_map(|l| l.to_f64_vec()).collect::<Vec<_>>();
        for (g, e) in values(got).into_iter().zip(values(expected)) {
            assert!((g - e).abs() <= 1e-6 * e.abs().max(1.0), "{g} against the interpreter's {e}");
        }
    }

    #[test]
    fn damaged_or_foreign_bytes_are_refused_with_the_reason() {
        let module = optimized();
        let (_, bytes) = compile(&module, super::super::compile(&module).unwrap()).unwrap();
        let err = |b: &[u8]| load(b).err().expect("refused");
        assert!(err(&bytes[..bytes.len() / 2]).contains("truncated"));
        let mut flipped = bytes.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0x40;
        assert!(err(&flipped).contains("checksum mismatch"));
        assert!(err(b"HSCPUART and more bytes than a header").contains("not an hloscope wasm artifact"));
        let mut newer = bytes.clone();
        newer[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        assert!(err(&newer).contains("format"));
        // Another compiler, under a valid envelope.
        let mut payload: Payload = envelope::decode("payload", &bytes[28..]).unwrap();
        payload.compiler = "hloscope-core 0.0.0 source elsewhere".into();
        let forged = envelope::seal(MAGIC, FORMAT_VERSION, &envelope::encode(&payload).unwrap());
        assert!(err(&forged).contains("built by `hloscope-core 0.0.0"));
    }
}
