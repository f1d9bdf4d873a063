//! The compilation artifact: a compiled module as bytes that a later process loads
//! without parsing, verifying, running the pass pipeline, planning or running Cranelift
//! again (the backend's compilation cache stores these).
//!
//! What it holds: the optimized module and, for the entry computation and every
//! while/conditional computation compiled on its own, its final kernel plan (opaque
//! kernels substituted for refused ones, arena offsets assigned) — both in binary form
//! (serde derives of the IR and plan types, `postcard` encoding) — plus the machine code
//! of each Cranelift kernel with its relocations, how that code runs (its `CodeShape`, a
//! postcard section too), its CLIF and assembly listings, and a fingerprint of the
//! kernel it was compiled for. Loading decodes the module and the
//! plans, checks each plan against the module and each fingerprint against the plan,
//! and hands the bytes to a JIT module (`define_function_bytes`), which only patches
//! relocations.
//!
//! Relocations name their targets by symbol (a helper, a C math function, a kernel of
//! the same computation, or the function itself), never by the numbering of the module
//! that compiled them; a symbol outside the known set is refused, so a loaded artifact
//! never makes the JIT look up an arbitrary name.
//!
//! Encoding: `HSCPUART`, the format version (u32), the payload length (u64), an xxh3
//! checksum of the payload (u64), then the payload, little endian and length-prefixed
//! (the module and each plan are length-prefixed postcard sections). Bytes that are
//! truncated, corrupt, of another format version, another compiler version or another
//! CPU give an `Err` with the reason: they are never trusted and never panic. The
//! checksum is what guards the binary sections against corruption (the decoder would
//! reject most bad bytes too, but not all): the machine code beside them is trusted on
//! the same grounds.

use cranelift_codegen::binemit::Reloc;
use cranelift_codegen::ir::LibCall;
use cranelift_module::{FuncId, Module, ModuleReloc, ModuleRelocTarget};

/// Bumped whenever the byte layout below changes, or the serde form of the IR or plan
/// types (2: the module and plans as postcard sections instead of HLO text; 3: plans
/// carry their row chains; 4: kernels carry how their code runs, and their CLIF without
/// the comments that said so).
pub const FORMAT_VERSION: u32 = 5;

const MAGIC: &[u8; 8] = b"HSCPUART";

pub use crate::targets::envelope::{compiler_version, decode, encode};

/// Where a relocation points.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// A named function: a helper, a C math function or another kernel.
    Symbol(String),
    /// A Cranelift library call (floorf, fmaf, ...), by its C name.
    LibCall(String),
    /// An offset into the function itself.
    SelfOffset(u32),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Relocation {
    pub offset: u32,
    pub kind: Reloc,
    pub target: Target,
    pub addend: i64,
}

/// One compiled function: machine code and what to patch in it.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionCode {
    pub alignment: u64,
    pub bytes: Vec<u8>,
    pub relocs: Vec<Relocation>,
}

/// One kernel's code in an artifact.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCode {
    /// Position in the computation's final plan.
    pub index: u32,
    pub name: String,
    /// Hash of the kernel as planned (its elemental body, buffers): must match on load.
    pub fingerprint: u64,
    /// The earlier kernel (by plan position) whose code this one runs, the same code up
    /// to its buffers (`codegen::CodeKey`): then the code, shape and listings are that
    /// kernel's and stored only there (a stack's layers store one copy, not one each).
    pub shares: Option<u32>,
    pub code: FunctionCode,
    /// How the code runs (a `CodeShape`), postcard-encoded ([`encode`]).
    pub shape: Vec<u8>,
    /// The function's CLIF, without the header of notes listings put above it.
    pub clif: String,
    pub asm: String,
}

impl KernelCode {
    /// Kernel `index` running the code of kernel `first` (nothing of its own stored).
    pub fn sharing(index: u32, name: String, fingerprint: u64, first: u32) -> KernelCode {
        KernelCode {
            index,
            name,
            fingerprint,
            shares: Some(first),
            code: FunctionCode { alignment: 1, bytes: Vec::new(), relocs: Vec::new() },
            shape: Vec::new(),
            clif: String::new(),
            asm: String::new(),
        }
    }
}

/// The compiled form of one computation (the entry, a while cond/body, a branch).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompArtifact {
    /// Hash of the plan's buffers.
    pub buffers_fingerprint: u64,
    /// Entry instructions whose kernels the emitter refused (they run interpreted), with
    /// the reason.
    pub fallbacks: Vec<(String, String)>,
    /// The computation's final `KernelPlan`, postcard-encoded ([`encode`]).
    pub plan: Vec<u8>,
    pub kernels: Vec<KernelCode>,
    /// The computations of while and conditional kernels, in kernel order (cond then
    /// body; branches in order).
    pub children: Vec<CompArtifact>,
}

/// A whole compiled module.
#[derive(Clone, Debug, PartialEq)]
pub struct Artifact {
    pub compiler: String,
    /// The CPU the code is for: triple and Cranelift flags.
    pub isa: String,
    /// The optimized module, postcard-encoded ([`encode`]).
    pub module: Vec<u8>,
    pub entry: CompArtifact,
}

/// A 64-bit hash of `s` (fingerprints; not for security).
pub fn hash_str(s: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(s.as_bytes())
}

/// The 64-bit xxh3 of a value's `Debug` text, streamed (no string is built): the
/// fingerprint of planned kernels and buffers.
pub fn hash_debug(v: &dyn std::fmt::Debug) -> u64 {
    struct Stream(xxhash_rust::xxh3::Xxh3);
    impl std::fmt::Write for Stream {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut h = Stream(xxhash_rust::xxh3::Xxh3::new());
    // Writing into a hasher cannot fail.
    let _ = std::fmt::write(&mut h, format_args!("{v:?}"));
    h.0.digest()
}

/// Reads the code and relocations of the function just compiled in `ctx` (by
/// `define_function`), with relocation targets named through `m`'s declarations.
pub fn capture<M: Module>(m: &M, ctx: &cranelift_codegen::Context, id: FuncId) -> Result<FunctionCode, String> {
    let compiled = ctx.compiled_code().ok_or("no compiled code to capture")?;
    let mut relocs = Vec::new();
    for r in compiled.buffer.relocs() {
        let target = match ModuleReloc::from_mach_reloc(r, &ctx.func, id).name {
            ModuleRelocTarget::User { namespace: 0, index } => {
                let decl = m.declarations().get_function_decl(FuncId::from_u32(index));
                Target::Symbol(decl.name.clone().ok_or("a relocation to an anonymous function")?)
            }
            ModuleRelocTarget::LibCall(l) => Target::LibCall((cranelift_module::default_libcall_names())(l)),
            ModuleRelocTarget::FunctionOffset(f, off) if f == id => Target::SelfOffset(off),
            other => return Err(format!("a relocation the artifact cannot name: {other:?}")),
        };
        relocs.push(Relocation { offset: r.offset, kind: r.kind, target, addend: r.addend });
    }
    Ok(FunctionCode { alignment: compiled.buffer.alignment as u64, bytes: compiled.code_buffer().to_vec(), relocs })
}

/// Relocation kinds the JIT patches (without PIC), by their code in the encoding.
const RELOC_KINDS: &[Reloc] = &[
    Reloc::Abs4,
    Reloc::Abs8,
    Reloc::X86PCRel4,
    Reloc::X86CallPCRel4,
    Reloc::Arm64Call,
    Reloc::Aarch64AdrPrelPgHi21,
    Reloc::Aarch64AddAbsLo12Nc,
];

/// C math functions kernels may call by name (f64 and f32 forms).
const LIBM: &[&str] = &[
    "exp",
    "expm1",
    "exp2",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "cbrt",
    "pow",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "erfc",
    "fmod",
    "round",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "nearbyint",
    "hypot",
    "fma",
    "lgamma",
    "tgamma",
];

/// Whether a loaded artifact may name `symbol`: a helper, a C math function, or one of
/// its own kernels.
pub fn known_symbol(symbol: &str, helpers: &[&str], kernels: &[String]) -> bool {
    helpers.contains(&symbol)
        || LIBM.iter().any(|&f| f == symbol || symbol.strip_suffix('f') == Some(f))
        || kernels.iter().any(|k| k == symbol)
}

/// The library call named `name` (as `default_libcall_names` spells it).
fn libcall(name: &str) -> Option<LibCall> {
    LibCall::all_libcalls().iter().copied().find(|&l| (cranelift_module::default_libcall_names())(l) == name)
}

impl FunctionCode {
    /// The relocations for `define_function_bytes`, with symbols resolved by `lookup`
    /// (None: unknown symbol); every offset is checked to lie inside the code.
    pub fn module_relocs(
        &self,
        self_id: FuncId,
        lookup: &mut dyn FnMut(&str) -> Option<FuncId>,
    ) -> Result<Vec<ModuleReloc>, String> {
        let mut out = Vec::with_capacity(self.relocs.len());
        for r in &self.relocs {
            let width = match r.kind {
                Reloc::Abs8 => 8,
                _ => 4,
            };
            if r.offset as usize + width > self.bytes.len() {
                return Err(format!(
                    "a relocation at offset {} lies outside the code ({} bytes)",
                    r.offset,
                    self.bytes.len()
                ));
            }
            let name = match &r.target {
                Target::Symbol(s) => {
                    let f = lookup(s).ok_or_else(|| format!("unknown symbol `{s}`"))?;
                    ModuleRelocTarget::user(0, f.as_u32())
                }
                Target::LibCall(s) => {
                    ModuleRelocTarget::LibCall(libcall(s).ok_or_else(|| format!("unknown library call `{s}`"))?)
                }
                Target::SelfOffset(o) if (*o as usize) < self.bytes.len() => {
                    ModuleRelocTarget::FunctionOffset(self_id, *o)
                }
                Target::SelfOffset(o) => return Err(format!("a self relocation to offset {o} outside the code")),
            };
            out.push(ModuleReloc { offset: r.offset, kind: r.kind, name, addend: r.addend });
        }
        Ok(out)
    }
}

// ---- encoding ----

struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn comp(&mut self, c: &CompArtifact) {
        self.u64(c.buffers_fingerprint);
        self.u32(c.fallbacks.len() as u32);
        for (a, b) in &c.fallbacks {
            self.str(a);
            self.str(b);
        }
        self.bytes(&c.plan);
        self.u32(c.kernels.len() as u32);
        for k in &c.kernels {
            self.u32(k.index);
            self.str(&k.name);
            self.u64(k.fingerprint);
            if let Some(first) = k.shares {
                self.u32(first + 1);
                continue;
            }
            self.u32(0);
            self.u64(k.code.alignment);
            self.bytes(&k.code.bytes);
            self.u32(k.code.relocs.len() as u32);
            for r in &k.code.relocs {
                self.u32(r.offset);
                let kind = RELOC_KINDS.iter().position(|&x| x == r.kind).map_or(u32::MAX, |p| p as u32);
                self.u32(kind);
                match &r.target {
                    Target::Symbol(s) => {
                        self.u32(0);
                        self.str(s);
                    }
                    Target::LibCall(s) => {
                        self.u32(1);
                        self.str(s);
                    }
                    Target::SelfOffset(o) => {
                        self.u32(2);
                        self.u32(*o);
                    }
                }
                self.u64(r.addend as u64);
            }
            self.bytes(&k.shape);
            self.str(&k.clif);
            self.str(&k.asm);
        }
        self.u32(c.children.len() as u32);
        for ch in &c.children {
            self.comp(ch);
        }
    }
}

struct Reader<'a> {
    at: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.at.len() {
            return Err("the payload ends early".into());
        }
        let (a, b) = self.at.split_at(n);
        self.at = b;
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// A count of items each at least `min` bytes long: bounded by what is left, so a
    /// corrupt count cannot make us allocate.
    fn count(&mut self, min: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min) > self.at.len() {
            return Err(format!("a count of {n} items exceeds the payload"));
        }
        Ok(n)
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u64()?;
        self.take(usize::try_from(n).map_err(|_| "a length out of range")?)
    }
    fn str(&mut self) -> Result<String, String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| "a string that is not UTF-8".into())
    }
    fn comp(&mut self, depth: usize) -> Result<CompArtifact, String> {
        if depth > 64 {
            return Err("computations nested too deep".into());
        }
        let buffers_fingerprint = self.u64()?;
        let n = self.count(16)?;
        let mut fallbacks = Vec::with_capacity(n);
        for _ in 0..n {
            fallbacks.push((self.str()?, self.str()?));
        }
        let plan = self.bytes()?.to_vec();
        let n = self.count(40)?;
        let mut kernels = Vec::with_capacity(n);
        for _ in 0..n {
            let index = self.u32()?;
            let name = self.str()?;
            let fingerprint = self.u64()?;
            if let Some(first) = self.u32()?.checked_sub(1) {
                kernels.push(KernelCode::sharing(index, name, fingerprint, first));
                continue;
            }
            let alignment = self.u64()?;
            if !alignment.is_power_of_two() || alignment > 4096 {
                return Err(format!("a code alignment of {alignment}"));
            }
            let bytes = self.bytes()?.to_vec();
            let nr = self.count(24)?;
            let mut relocs = Vec::with_capacity(nr);
            for _ in 0..nr {
                let offset = self.u32()?;
                let kind = *RELOC_KINDS.get(self.u32()? as usize).ok_or("an unknown relocation kind")?;
                let target = match self.u32()? {
                    0 => Target::Symbol(self.str()?),
                    1 => Target::LibCall(self.str()?),
                    2 => Target::SelfOffset(self.u32()?),
                    t => return Err(format!("an unknown relocation target tag {t}")),
                };
                let addend = self.u64()? as i64;
                relocs.push(Relocation { offset, kind, target, addend });
            }
            let shape = self.bytes()?.to_vec();
            let clif = self.str()?;
            let asm = self.str()?;
            kernels.push(KernelCode {
                index,
                name,
                fingerprint,
                shares: None,
                code: FunctionCode { alignment, bytes, relocs },
                shape,
                clif,
                asm,
            });
        }
        let n = self.count(28)?;
        let mut children = Vec::with_capacity(n);
        for _ in 0..n {
            children.push(self.comp(depth + 1)?);
        }
        Ok(CompArtifact { buffers_fingerprint, fallbacks, plan, kernels, children })
    }
}

impl Artifact {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.str(&self.compiler);
        w.str(&self.isa);
        w.bytes(&self.module);
        w.comp(&self.entry);
        crate::targets::envelope::seal(MAGIC, FORMAT_VERSION, &w.0)
    }

    /// Decodes and checks the envelope (magic, format version, length, checksum) and the
    /// compiler version; the CPU is checked when loading.
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, String> {
        let payload = crate::targets::envelope::open(MAGIC, FORMAT_VERSION, "cpu artifact", bytes)?;
        let mut r = Reader { at: payload };
        let compiler = r.str()?;
        if compiler != compiler_version() {
            return Err(format!("built by `{compiler}`, this is `{}`", compiler_version()));
        }
        let isa = r.str()?;
        let module = r.bytes()?.to_vec();
        let entry = r.comp(0)?;
        if !r.at.is_empty() {
            return Err("trailing bytes after the artifact".into());
        }
        Ok(Artifact { compiler, isa, module, entry })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Artifact {
        Artifact {
            compiler: compiler_version(),
            isa: "x86_64 test".into(),
            module: vec![1, 2, 3],
            entry: CompArtifact {
                buffers_fingerprint: 7,
                fallbacks: vec![("add.1".into(), "why".into())],
                plan: vec![4, 5],
                kernels: vec![
                    KernelCode {
                        index: 2,
                        name: "k".into(),
                        fingerprint: 9,
                        shares: None,
                        code: FunctionCode {
                            alignment: 16,
                            bytes: vec![0x90; 32],
                            relocs: vec![Relocation {
                                offset: 4,
                                kind: Reloc::Abs8,
                                target: Target::Symbol("hs_unary_f64".into()),
                                addend: -3,
                            }],
                        },
                        shape: vec![6, 7],
                        clif: "function".into(),
                        asm: "nop".into(),
                    },
                    KernelCode::sharing(5, "k2".into(), 11, 2),
                ],
                children: vec![CompArtifact::default()],
            },
        }
    }

    #[test]
    fn round_trips() {
        let a = sample();
        assert_eq!(Artifact::from_bytes(&a.to_bytes()).unwrap(), a);
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_an_error() {
        let bytes = sample().to_bytes();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            assert!(Artifact::from_bytes(&b).is_err(), "flipped byte {i} was accepted");
            assert!(Artifact::from_bytes(&bytes[..i]).is_err(), "truncation to {i} bytes was accepted");
        }
    }

    #[test]
    fn another_compiler_version_is_stale() {
        let mut a = sample();
        a.compiler = "hloscope-core 0.0.0 codegen 0".into();
        let err = Artifact::from_bytes(&a.to_bytes()).unwrap_err();
        assert!(err.contains("built by"), "{err}");
        // The same version built from other sources is another compiler too.
        let ours = compiler_version();
        let (version, hash) = ours.split_once(" source ").expect("a source fingerprint");
        assert_eq!(hash.len(), 16, "{ours}");
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{ours}");
        a.compiler = format!("{version} source {}", "0".repeat(16));
        assert!(Artifact::from_bytes(&a.to_bytes()).unwrap_err().contains("built by"));
    }

    #[test]
    fn symbols_are_checked() {
        let kernels = vec!["kernel3".to_string()];
        assert!(known_symbol("expf", &["hs_unary_f64"], &kernels));
        assert!(known_symbol("exp", &[], &kernels));
        assert!(known_symbol("kernel3", &[], &kernels));
        assert!(known_symbol("hs_unary_f64", &["hs_unary_f64"], &kernels));
        assert!(!known_symbol("system", &["hs_unary_f64"], &kernels));
    }
}
