//! The CPU target's code for a chosen machine, as text, without running it: for each
//! kernel of a module's entry plan, the CLIF the emitter writes and the machine code
//! Cranelift makes of it, or how the kernel runs when it is not compiled code (a GEMM
//! library call, the interpreter, the runtime's control flow).
//!
//! This is the emitter the JIT uses ([`super::codegen::emit_kernel`]), given a module
//! that only compiles (no memory is made executable), so it builds for wasm32 and the
//! explorer shows the listings in the browser for either machine, whatever the host.
//! Both listings come from Cranelift itself: the CLIF as built, and the machine
//! instructions after register allocation (`set_disasm`), before encoding.

use super::codegen::{self, EmitOptions, Helpers};
use crate::ir::Module;
use crate::kernel::{self, KernelBody, KernelKind};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir;
use cranelift_codegen::isa::{self, OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_module::{DataDescription, DataId, FuncId, Linkage, ModuleDeclarations, ModuleReloc, ModuleResult};
use serde::Serialize;

/// A machine to list code for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Machine {
    /// x86-64 with AVX2 and FMA (x86-64-v3, most servers): the native block functions
    /// run 8 f32 lanes, so loops with transcendentals are strip-mined as on such a host.
    X86_64V3,
    /// AArch64 with NEON: 4 lanes, as Cranelift's own vectors, so nothing strip-mined.
    Aarch64,
}

impl Machine {
    pub const ALL: [Machine; 2] = [Machine::X86_64V3, Machine::Aarch64];

    /// Its name in the explorer and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Machine::X86_64V3 => "x86-64-v3",
            Machine::Aarch64 => "aarch64",
        }
    }

    /// The machine named `name`; else an error listing the known names.
    pub fn parse(name: &str) -> Result<Machine, String> {
        Machine::ALL.into_iter().find(|m| m.name() == name).ok_or_else(|| {
            let known: Vec<&str> = Machine::ALL.iter().map(|m| m.name()).collect();
            format!("unknown (known: {})", known.join(", "))
        })
    }

    fn isa(self) -> Result<OwnedTargetIsa, String> {
        let (triple, features): (&str, &[&str]) = match self {
            Machine::X86_64V3 => (
                "x86_64-unknown-linux-gnu",
                &[
                    "has_sse3",
                    "has_ssse3",
                    "has_sse41",
                    "has_sse42",
                    "has_popcnt",
                    "has_avx",
                    "has_avx2",
                    "has_fma",
                    "has_bmi1",
                    "has_bmi2",
                    "has_lzcnt",
                ],
            ),
            Machine::Aarch64 => ("aarch64-unknown-linux-gnu", &[]),
        };
        let mut builder = isa::lookup_by_name(triple)
            .map_err(|e| format!("{}: this build has no code generator for it ({e})", self.name()))?;
        for f in features {
            builder.enable(f).map_err(|e| format!("{}: {f}: {e}", self.name()))?;
        }
        let mut shared = settings::builder();
        shared.set("opt_level", "speed").map_err(|e| e.to_string())?;
        shared.set("enable_verifier", super::CRANELIFT_VERIFIER).map_err(|e| e.to_string())?;
        builder.finish(settings::Flags::new(shared)).map_err(|e| format!("{}: {e}", self.name()))
    }

    /// The f32 lanes of the native block functions on this machine.
    fn block_lanes(self) -> u32 {
        match self {
            Machine::X86_64V3 => 8,
            Machine::Aarch64 => 4,
        }
    }
}

/// One kernel's code.
#[derive(Clone, Debug, Serialize)]
pub struct KernelListing {
    /// Its position in the plan (the order kernels run).
    pub index: usize,
    /// The instruction it comes from (a fusion's name for each of its kernels).
    pub name: String,
    /// What kind of kernel, as the plan says it: `loop`, `reduction(row)`, `library(dot)`, ...
    pub kind: String,
    /// How it runs, in a few words: `simd 4x4`, `simd 4x4 + native exp`, `scalar`,
    /// `gemm library call`, `interpreter`, ...
    pub runs: String,
    /// Why, in sentences: how it was vectorized (or why not), what it strip-mined, why
    /// it is not compiled code.
    pub notes: Vec<String>,
    /// The CLIF (empty when the kernel is not compiled code).
    pub clif: String,
    /// Per line of `clif`: the HLO instruction (of the kernel's computation: a fusion's
    /// member, or the kernel's own instruction) that line implements, or "" when the
    /// emitter knows none (loop control, loads of inputs shared by several).
    pub clif_hlo: Vec<String>,
    /// The machine instructions (empty when the kernel is not compiled code).
    pub asm: String,
    /// Bytes of machine code.
    pub code_bytes: usize,
}

/// The listing of every kernel of `module`'s entry computation on `machine`. A kernel
/// Cranelift refuses is listed with the reason (the JIT then interprets its source).
pub fn list(module: &Module, machine: Machine) -> Result<Vec<KernelListing>, String> {
    let plan = kernel::plan_computation(module, module.entry)?;
    let mut m = ListingModule { isa: machine.isa()?, declarations: ModuleDeclarations::default() };
    let helpers = Helpers::declare(&mut m)?;
    let results: rustc_hash::FxHashSet<_> = plan.result.leaves().into_iter().collect();
    let options = EmitOptions { block_lanes: machine.block_lanes(), inline_half: false, listings: true };
    let mut out = Vec::with_capacity(plan.kernels.len());
    // The first kernel of each distinct code: the JIT compiles it once for all.
    let keys: Vec<_> = plan.kernels.iter().map(|k| codegen::code_key(k, &results, options)).collect();
    let firsts = kernel::first_of_same_code(&keys, codegen::CodeKey::bucket);
    for (index, k) in plan.kernels.iter().enumerate() {
        let shares = Some(firsts[index]).filter(|&first| first != index);
        let (mut runs, mut notes, clif, asm, code_bytes) =
            match codegen::emit_kernel(&mut m, &helpers, k, index, &results, options) {
                Some(Ok(em)) => {
                    // The pane's listings end without a newline.
                    let clif = em.clif.lines().collect::<Vec<_>>().join("\n");
                    // Cranelift's listing interleaves its unwind-info pseudo-instructions.
                    let asm: Vec<&str> = em.asm.lines().filter(|l| !l.trim_start().starts_with("unwind ")).collect();
                    (em.shape.to_string(), em.shape.notes(), clif, asm.join("\n"), em.code.bytes.len())
                }
                Some(Err(reason)) => (
                    "interpreter".to_string(),
                    vec![format!("Cranelift cannot compile it ({reason}): the JIT runs its source in the interpreter")],
                    String::new(),
                    String::new(),
                    0,
                ),
                None => {
                    let (runs, note) = not_compiled(&k.body, &k.kind);
                    (runs, vec![note], String::new(), String::new(), 0)
                }
            };
        if let Some(first) = shares.filter(|_| code_bytes > 0) {
            let name = &plan.kernels[first].name;
            runs += &format!(", code of kernel {first} ({name})");
            notes.push(format!(
                "The same code as kernel {first} ({name}) up to the buffers it reads and writes: the JIT compiles that one and runs its function here too."
            ));
        }
        let origins = codegen::compiled_function(k).map(|(e, _)| e.origin_names.as_slice()).unwrap_or_default();
        let clif_hlo = clif.lines().map(|l| line_origin(l, origins).unwrap_or_default().to_string()).collect();
        out.push(KernelListing {
            index,
            name: k.name.clone(),
            kind: k.kind.to_string(),
            runs,
            notes,
            clif,
            clif_hlo,
            asm,
            code_bytes,
        });
    }
    Ok(out)
}

/// The HLO instruction a CLIF line implements: Cranelift prints an instruction's source
/// location first (`@0003 v7 = fadd v5, v6`), and the emitter's locations index `origins`.
fn line_origin<'a>(line: &str, origins: &'a [String]) -> Option<&'a str> {
    let hex = line.trim_start().strip_prefix('@')?.split_whitespace().next()?;
    origins.get(u32::from_str_radix(hex, 16).ok()? as usize).map(String::as_str)
}

/// How a kernel without a function of its own runs, and why.
fn not_compiled(body: &KernelBody, kind: &KernelKind) -> (String, String) {
    match (body, kind) {
        (KernelBody::Dot(d), _) => (
            "gemm library call".into(),
            format!(
                "A batched GEMM through the gemm crate: {} product(s) of {}×{} by {}×{} in {}, split into row blocks across threads when large.",
                d.batch, d.m, d.k, d.k, d.n, d.elem
            ),
        ),
        (KernelBody::While { .. }, _) => {
            ("runtime".into(), "The runtime runs the loop; its condition and body are plans of their own.".into())
        }
        (KernelBody::Case { .. }, _) => {
            ("runtime".into(), "The runtime picks the branch; each branch is a plan of its own.".into())
        }
        (_, KernelKind::Opaque { reason }) => ("interpreter".into(), format!("Interpreted: {reason}.")),
        _ => ("interpreter".into(), "Interpreted.".into()),
    }
}

/// A module that compiles functions and keeps nothing: the emitter reads each
/// function's listing from its context.
struct ListingModule {
    isa: OwnedTargetIsa,
    declarations: ModuleDeclarations,
}

impl cranelift_module::Module for ListingModule {
    fn isa(&self) -> &dyn TargetIsa {
        &*self.isa
    }

    fn declarations(&self) -> &ModuleDeclarations {
        &self.declarations
    }

    fn declare_function(&mut self, name: &str, linkage: Linkage, signature: &ir::Signature) -> ModuleResult<FuncId> {
        Ok(self.declarations.declare_function(name, linkage, signature)?.0)
    }

    fn declare_anonymous_function(&mut self, signature: &ir::Signature) -> ModuleResult<FuncId> {
        self.declarations.declare_anonymous_function(signature)
    }

    fn declare_data(&mut self, name: &str, linkage: Linkage, writable: bool, tls: bool) -> ModuleResult<DataId> {
        Ok(self.declarations.declare_data(name, linkage, writable, tls)?.0)
    }

    fn declare_anonymous_data(&mut self, writable: bool, tls: bool) -> ModuleResult<DataId> {
        self.declarations.declare_anonymous_data(writable, tls)
    }

    fn define_function_with_control_plane(
        &mut self,
        _func: FuncId,
        ctx: &mut cranelift_codegen::Context,
        ctrl_plane: &mut ControlPlane,
    ) -> ModuleResult<()> {
        ctx.compile(&*self.isa, ctrl_plane)?;
        Ok(())
    }

    fn define_function_bytes(&mut self, _: FuncId, _: u64, _: &[u8], _: &[ModuleReloc]) -> ModuleResult<()> {
        Ok(())
    }

    fn define_data(&mut self, _: DataId, _: &DataDescription) -> ModuleResult<()> {
        Ok(())
    }
}

// Both machines' code generators: feature `listing`.
#[cfg(all(test, feature = "listing"))]
mod tests {
    use super::*;

    fn module(text: &str) -> Module {
        crate::parse::parse_module(text).unwrap()
    }

    const SOFTMAX: &str = r#"
HloModule softmax
max_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT m = f32[] maximum(a, b) }
add_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY main {
  x = f32[64,256] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mb = f32[64,256] broadcast(mx), dimensions={0}
  d = f32[64,256] subtract(x, mb)
  e = f32[64,256] exponential(d)
  zero = f32[] constant(0)
  s = f32[64] reduce(e, zero), dimensions={1}, to_apply=add_f32
  sb = f32[64,256] broadcast(s), dimensions={0}
  ROOT r = f32[64,256] divide(e, sb)
}
"#;

    #[test]
    fn lists_clif_and_machine_code_of_each_kernel_on_both_machines() {
        let m = module(SOFTMAX);
        for machine in Machine::ALL {
            let kernels = list(&m, machine).unwrap();
            let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
            for name in ["mx", "e", "s", "r"] {
                assert!(names.contains(&name), "{machine:?}: no kernel {name} in {names:?}");
            }
            let exp = kernels.iter().find(|k| k.name == "e").unwrap();
            assert!(exp.clif.contains("function") && exp.clif.contains("f32x4"), "{}", exp.clif);
            assert!(exp.code_bytes > 0 && !exp.asm.is_empty());
            // Lines link to the instructions they implement: the exponential's code to
            // `e`, the loads of its input to `d`.
            assert_eq!(exp.clif_hlo.len(), exp.clif.lines().count());
            let linked: std::collections::BTreeSet<&str> = exp.clif_hlo.iter().map(String::as_str).collect();
            assert!(linked.iter().copied().eq(["", "d", "e"]), "{linked:?}");
            for (line, origin) in exp.clif.lines().zip(&exp.clif_hlo) {
                assert_eq!(!origin.is_empty(), line.trim_start().starts_with('@'), "{line}");
            }
            let reduce = kernels.iter().find(|k| k.name == "mx").unwrap();
            assert_eq!(reduce.kind, "reduction(row)");
            assert!(reduce.notes[0].starts_with("vectorized:"), "{:?}", reduce.notes);
            match machine {
                // SSE/AVX registers and instructions; the exponential strip-mined into
                // 8-lane block calls as on an AVX2 host.
                Machine::X86_64V3 => {
                    assert!(exp.asm.contains("%xmm") && !exp.asm.contains("unwind"), "{}", exp.asm);
                    assert!(exp.runs.contains("native exp"), "{}", exp.runs);
                }
                // NEON registers; nothing strip-mined at 4 lanes.
                Machine::Aarch64 => {
                    assert!(exp.asm.contains(".4s") || exp.asm.contains("v0"), "{}", exp.asm);
                    assert!(!exp.runs.contains("native"), "{}", exp.runs);
                }
            }
        }
    }

    #[test]
    fn a_fused_kernels_lines_link_to_the_members_they_implement() {
        let mut m = module(SOFTMAX);
        crate::passes::pipeline::run_pipeline(&mut m, &Default::default()).unwrap();
        let kernels = list(&m, Machine::X86_64V3).unwrap();
        let fusion = m.comp(m.entry).order.iter().map(|&i| m.comp(m.entry).inst(i)).find(|i| {
            let crate::ir::Op::Fusion { body, .. } = i.op else { return false };
            m.comp(body).order.iter().any(|&j| m.comp(body).inst(j).name == "e")
        });
        let fusion = fusion.expect("a fusion holding the exponential");
        let k = kernels.iter().find(|k| k.name == fusion.name).unwrap();
        let linked: std::collections::BTreeSet<&str> = k.clif_hlo.iter().map(String::as_str).collect();
        // The exponential, the subtraction before it and the sum after it, in one kernel.
        for name in ["e", "d", "s"] {
            assert!(linked.contains(name), "{name} not in {linked:?}");
        }
    }

    #[test]
    fn a_dot_is_listed_as_a_library_call() {
        let m = module(
            "HloModule d\nENTRY main {\n  a = f32[8,16] parameter(0)\n  b = f32[16,4] parameter(1)\n  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
        );
        let kernels = list(&m, Machine::X86_64V3).unwrap();
        assert_eq!(kernels.len(), 1);
        assert_eq!((kernels[0].kind.as_str(), kernels[0].runs.as_str()), ("library(dot)", "gemm library call"));
        assert!(kernels[0].notes[0].contains("8×16 by 16×4"), "{:?}", kernels[0].notes);
        assert!(kernels[0].clif.is_empty());
    }
}
