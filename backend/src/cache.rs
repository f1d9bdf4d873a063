//! The compilation cache for the CPU and WebAssembly targets, keyed like `jax.jit`'s: a
//! hash of the module text, the entry's parameter shapes and dtypes, the target, the
//! pipeline options and the compiler version. A hit skips parsing, the pass pipeline,
//! planning and code generation: the artifact's module, kernel plans and machine code
//! are loaded as they are (`cpu::load_artifact`, `wasm::artifact::load`: the WebAssembly
//! module as wasmtime compiled it).
//!
//! Two levels: an in-memory LRU of loaded executables (for a long-lived server; one CLI
//! run uses it once) and a folder on disk, `$HLOSCOPE_CACHE_DIR` or the user's cache
//! folder + `hloscope`, one `KEY.hsart` file per entry. Writes go to a temporary file
//! renamed into place, so a reader never sees half an entry; after a write the oldest
//! entries (by modification time, refreshed on every hit) are removed until the folder
//! is under its size cap. An entry that does not load (corrupt, truncated, another
//! compiler, another CPU) is reported as a note, rebuilt and overwritten.

use hloscope_core::ir::Module;
use hloscope_core::targets::cpu::{self, CpuExecutable};
use hloscope_core::targets::wasm::{self, runtime::WasmExecutable};
use lru::LruCache;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Default cap on the disk folder.
pub const DEFAULT_MAX_BYTES: u64 = 512 << 20;

/// Executables kept in memory.
const MEMORY_ENTRIES: usize = 64;

/// A cache key: 128 bits of xxh3 over everything that decides the compiled code.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key(pub u128);

impl Key {
    /// The key of compiling module `text` for `target` with the pipeline `options`, by
    /// compiler `version`. A module's text fixes its parameters' shapes and dtypes
    /// (StableHLO and HLO modules are monomorphic), so the text stands for them: a hit
    /// needs no parse of the source at all.
    pub fn new(text: &str, target: &str, options: &str, version: &str) -> Key {
        let mut s = String::new();
        for part in [&xxhash_rust::xxh3::xxh3_128(text.as_bytes()).to_string(), target, options, version] {
            // Length-prefixed, so that no two different tuples give the same string.
            s += &format!("{}:{part}|", part.len());
        }
        Key(xxhash_rust::xxh3::xxh3_128(s.as_bytes()))
    }

    fn file_name(&self) -> String {
        format!("{:032x}.hsart", self.0)
    }
}

/// How a lookup went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    MemoryHit,
    DiskHit,
    Miss,
    /// The disk entry was unusable (the reason); it was rebuilt and overwritten.
    Rebuilt(String),
}

/// What the cache keeps: an executable that loads from its artifact's bytes.
pub trait Entry: Sized {
    /// The executable of `bytes`, or why they are unusable (corrupt, stale).
    fn load(bytes: &[u8]) -> Result<Self, String>;
}

impl Entry for CpuExecutable {
    fn load(bytes: &[u8]) -> Result<Self, String> {
        cpu::load_artifact(bytes)
    }
}

/// The WebAssembly target's entry: the executable and its optimized module (a run reads
/// the entry's parameters from it).
pub struct WasmEntry {
    pub exe: WasmExecutable,
    pub module: Module,
}

impl Entry for WasmEntry {
    fn load(bytes: &[u8]) -> Result<Self, String> {
        wasm::artifact::load(bytes).map(|(exe, module)| WasmEntry { exe, module })
    }
}

/// Entries of one kind (one target's) in memory and on disk; the kinds share the folder
/// and its cap (the key names the target).
pub struct Cache<E: Entry = CpuExecutable> {
    dir: Option<PathBuf>,
    max_bytes: u64,
    memory: LruCache<Key, Rc<E>>,
    /// Problems worth a note on stderr that did not stop the compile (a failed write).
    pub notes: Vec<String>,
}

impl<E: Entry> Cache<E> {
    /// A cache over folder `dir` (None: memory only) capped at `max_bytes` on disk.
    pub fn new(dir: Option<PathBuf>, max_bytes: u64) -> Self {
        Cache {
            dir,
            max_bytes,
            memory: LruCache::new(NonZeroUsize::new(MEMORY_ENTRIES).expect("nonzero")),
            notes: Vec::new(),
        }
    }

    /// The folder from the environment: `$HLOSCOPE_CACHE_DIR`, else the user's cache
    /// folder + `hloscope`; the cap from `$HLOSCOPE_CACHE_MAX_BYTES`.
    pub fn from_env() -> Self {
        let dir = folder_from_env();
        let max =
            std::env::var("HLOSCOPE_CACHE_MAX_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_MAX_BYTES);
        Cache::new(dir, max)
    }

    /// The executable for `key` from memory or disk; else how the lookup missed
    /// (`Miss`, or `Rebuilt` with the reason the disk entry was unusable).
    pub fn lookup(&mut self, key: Key) -> Result<(Rc<E>, Outcome), Outcome> {
        if let Some(exe) = self.memory.get(&key) {
            return Ok((exe.clone(), Outcome::MemoryHit));
        }
        let Some(path) = self.path(key) else { return Err(Outcome::Miss) };
        match std::fs::read(&path) {
            Ok(bytes) => match E::load(&bytes) {
                Ok(exe) => {
                    // Refresh the age: eviction removes the least recently used.
                    if let Ok(f) = std::fs::File::options().append(true).open(&path) {
                        let _ = f.set_modified(std::time::SystemTime::now());
                    }
                    let exe = Rc::new(exe);
                    self.memory.put(key, exe.clone());
                    Ok((exe, Outcome::DiskHit))
                }
                Err(reason) => Err(Outcome::Rebuilt(reason)),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Outcome::Miss),
            Err(e) => Err(Outcome::Rebuilt(format!("cannot read {}: {e}", path.display()))),
        }
    }

    /// Keeps a freshly compiled executable under `key`, in memory and (its artifact
    /// `bytes`) on disk.
    pub fn insert(&mut self, key: Key, exe: E, bytes: &[u8]) -> Rc<E> {
        if let Some(path) = self.path(key) {
            if let Err(e) = self.store(&path, bytes) {
                self.notes.push(format!("could not write the cache entry {}: {e}", path.display()));
            }
        }
        let exe = Rc::new(exe);
        self.memory.put(key, exe.clone());
        exe
    }

    /// Where `key` lives on disk.
    pub fn path(&self, key: Key) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(key.file_name()))
    }

    /// Writes an entry atomically, then evicts the oldest entries over the cap.
    fn store(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        hloscope_core::targets::envelope::write_atomically(path, bytes)?;
        evict(path.parent().expect("an entry path has a folder"), self.max_bytes, path)
    }
}

/// The cache folder the environment names: `$HLOSCOPE_CACHE_DIR`, else the user's cache
/// folder + `hloscope` (none when the system has no cache folder).
pub fn folder_from_env() -> Option<PathBuf> {
    std::env::var_os("HLOSCOPE_CACHE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("hloscope")))
}

/// Removes the oldest `.hsart` files of `dir` until their total is at most `max_bytes`
/// (never `keep`, the entry just written).
pub fn evict(dir: &Path, max_bytes: u64, keep: &Path) -> std::io::Result<()> {
    let mut entries = Vec::new();
    let mut total = 0u64;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("hsart") {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        total += meta.len();
        entries.push((meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len(), p));
    }
    entries.sort();
    for (_, len, p) in entries {
        if total <= max_bytes {
            break;
        }
        if p == keep {
            continue;
        }
        if std::fs::remove_file(&p).is_ok() {
            total -= len;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use hloscope_core::ir::Module;

    /// The executable for `key`: from memory, from disk, or made by `compile` and stored
    /// (what `run` does, with its parse in between).
    fn get_or_compile(
        c: &mut Cache,
        key: Key,
        compile: impl FnOnce() -> Result<(CpuExecutable, Vec<u8>), String>,
    ) -> Result<(Rc<CpuExecutable>, Outcome), String> {
        match c.lookup(key) {
            Ok(hit) => Ok(hit),
            Err(outcome) => {
                let (exe, bytes) = compile()?;
                Ok((c.insert(key, exe, &bytes), outcome))
            }
        }
    }

    use super::*;

    const TEXT: &str = "HloModule m\n\nENTRY main {\n  p = f32[4] parameter(0)\n  ROOT e = f32[4] exponential(p)\n}\n";

    fn module(text: &str) -> Module {
        hloscope_core::parse::parse_module(text).unwrap()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hloscope-cache-unit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn compile(m: &Module) -> Result<(CpuExecutable, Vec<u8>), String> {
        cpu::compile_to_artifact(&cpu::optimize(m)?)
    }

    #[test]
    fn keys_differ_by_every_part() {
        let v = cpu::compiler_version();
        let k = Key::new(TEXT, "cpu", "default", &v);
        assert_eq!(k, Key::new(TEXT, "cpu", "default", &v));
        assert_ne!(k, Key::new(&TEXT.replace("exponential", "tanh"), "cpu", "default", &v));
        // Another parameter shape is another text.
        assert_ne!(k, Key::new(&TEXT.replace("f32[4]", "f32[8]"), "cpu", "default", &v));
        assert_ne!(k, Key::new(TEXT, "interp", "default", &v));
        assert_ne!(k, Key::new(TEXT, "cpu", "default,-cse", &v));
        assert_ne!(k, Key::new(TEXT, "cpu", "default", "hloscope-core 0.0.0 codegen 0"));
    }

    #[test]
    fn memory_then_disk_then_rebuild() {
        let dir = temp_dir("levels");
        let m = module(TEXT);
        let key = Key::new(TEXT, "cpu", "default", &cpu::compiler_version());
        let mut c = Cache::new(Some(dir.clone()), DEFAULT_MAX_BYTES);
        assert_eq!(get_or_compile(&mut c, key, || compile(&m)).unwrap().1, Outcome::Miss);
        assert_eq!(get_or_compile(&mut c, key, || Err("must not compile".into())).unwrap().1, Outcome::MemoryHit);
        // A new process: memory is empty, the disk has it.
        let mut c = Cache::new(Some(dir.clone()), DEFAULT_MAX_BYTES);
        let (exe, outcome) = get_or_compile(&mut c, key, || Err("must not compile".into())).unwrap();
        assert_eq!(outcome, Outcome::DiskHit);
        let x = hloscope_core::ir::Value::Array(hloscope_core::ir::Literal::from_f64s(
            hloscope_core::ir::Shape::new(hloscope_core::ir::ElementType::F32, vec![4]),
            &[0.0, 1.0, -1.0, 2.0],
        ));
        let out = exe.run(&[x]).unwrap();
        let got = out.as_array().unwrap().to_f64_vec();
        let want = [1.0, std::f32::consts::E as f64, (-1.0f64).exp() as f32 as f64, 2.0f64.exp() as f32 as f64];
        assert_eq!(got, want);

        // An artifact of another compiler version under the same key: stale, rebuilt.
        let path = c.path(key).unwrap();
        let mut art = cpu::artifact::Artifact::from_bytes(&std::fs::read(&path).unwrap()).unwrap();
        art.compiler = "hloscope-core 0.0.0 codegen 0".into();
        std::fs::write(&path, art.to_bytes()).unwrap();
        let mut c = Cache::new(Some(dir.clone()), DEFAULT_MAX_BYTES);
        match get_or_compile(&mut c, key, || compile(&m)).unwrap().1 {
            Outcome::Rebuilt(reason) => assert!(reason.contains("built by"), "{reason}"),
            other => panic!("expected a rebuild, got {other:?}"),
        }
        let mut c = Cache::new(Some(dir.clone()), DEFAULT_MAX_BYTES);
        assert_eq!(get_or_compile(&mut c, key, || Err("must not compile".into())).unwrap().1, Outcome::DiskHit);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn eviction_removes_the_oldest_first() {
        let dir = temp_dir("evict");
        std::fs::create_dir_all(&dir).unwrap();
        let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            let p = dir.join(format!("{name}.hsart"));
            std::fs::write(&p, vec![0u8; 100]).unwrap();
            let f = std::fs::File::options().append(true).open(&p).unwrap();
            f.set_modified(t0 + std::time::Duration::from_secs(i as u64 * 10)).unwrap();
        }
        std::fs::write(dir.join("other.txt"), vec![0u8; 1000]).unwrap();
        evict(&dir, 250, &dir.join("c.hsart")).unwrap();
        assert!(!dir.join("a.hsart").exists());
        assert!(dir.join("b.hsart").exists() && dir.join("c.hsart").exists());
        assert!(dir.join("other.txt").exists());
        evict(&dir, 50, &dir.join("c.hsart")).unwrap();
        assert!(!dir.join("b.hsart").exists() && dir.join("c.hsart").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
