//! The WebAssembly target's kernels in V8, the browser's engine, through Node.js
//! (`hloscope bench --target wasm --engine v8`): the same module the browser's worker
//! instantiates, run by a `node` child process that this side drives over its standard
//! input and output, one JSON line per request. Node times the runs itself with
//! `performance.now()`, so the pipe's latency is never part of a time.
//!
//! A threaded module ([`hloscope_core::targets::wasm::compile_threaded`]) runs as under
//! wasmtime ([`hloscope_core::targets::wasm::runtime`]): one shared memory, an instance
//! per thread (Node's main thread and `threads - 1` `worker_threads`, each with its own
//! scratch region), a kernel of one piece ([`host::chunks`]) called on the main thread,
//! a kernel of several claimed piece by piece by every thread, the next kernel started
//! only when the last piece is done. The protocol is described in the runner below.
//!
//! Only programs whose kernels are all WebAssembly run here: a host kernel needs the
//! interpreter, which lives on this side of the pipe.

use hloscope_core::ir::{Literal, Value};
use hloscope_core::targets::wasm::{self, host, WasmProgram};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Node's side: instantiates the module (a threaded one once per thread: this thread's
/// instance and `threads - 1` workers, all on one shared memory), then answers `load`,
/// `run` and `result` requests (one JSON line each) with one JSON line. The same file is
/// the workers' code (`isMainThread` false).
const RUNNER: &str = r#"
const fs = require('fs');
const readline = require('readline');
const { performance } = require('perf_hooks');
const { Worker, isMainThread, workerData, parentPort } = require('worker_threads');

// A threaded program's kernel with several pieces runs on every thread: the main thread
// publishes one 64-bit claim word, `gen << 40 | kernel << 16 | next piece`, and every
// thread claims pieces by compare-and-swap on that word until its piece index reaches
// the kernel's piece count. The word is the only thing a thread reads to learn what to
// run, so a thread holding a word of an earlier call (or a stop) fails its swap and
// reads the new word instead: no piece runs twice or for the wrong kernel. `done` (in
// `ctl`) counts finished pieces; whoever finishes the last one wakes the main thread,
// which publishes the next call only then, so no late piece ever counts towards it.
const GEN_SHIFT = 40n, KERNEL_SHIFT = 16n, GEN_MASK = (1n << 23n) - 1n;
const IDLE = 0xffffff, STOP = 0xfffffe; // kernel fields of a word with no work
const DONE = 0, ERR = 1, ERR_LEN = 2; // `ctl` slots; ERR: 0 none, 1 being written, 2 written
const SPIN_MS = 0.15; // how long an idle thread polls before it sleeps
const kernelOf = (c) => Number((c >> KERNEL_SHIFT) & 0xffffffn);

// Keeps the first error of a piece for the main thread, which throws it after the call.
function fail(s, e) {
  if (Atomics.compareExchange(s.ctl, ERR, 0, 1) !== 0) return;
  const text = Buffer.from(String((e && e.stack) || e)).subarray(0, s.err.length);
  s.err.set(text);
  Atomics.store(s.ctl, ERR_LEN, text.length);
  Atomics.store(s.ctl, ERR, 2);
}

// Runs pieces of the call in word `c` until none is left; returns the last word seen.
function drain(s, c) {
  for (;;) {
    const k = kernelOf(c), i = Number(c & 0xffffn), pieces = s.pieces[k];
    if (pieces === undefined || i >= pieces.length) return c;
    const seen = Atomics.compareExchange(s.claim, 0, c, c + 1n);
    if (seen !== c) { c = seen; continue; }
    try { s.kernel(k, pieces[i][0], pieces[i][1]); } catch (e) { fail(s, e); }
    if (Atomics.add(s.ctl, DONE, 1) === pieces.length - 1) Atomics.notify(s.ctl, DONE);
    c += 1n;
  }
}

function shared(d, instance) {
  return {
    claim: new BigInt64Array(d.claim), ctl: new Int32Array(d.ctl), err: new Uint8Array(d.err),
    pieces: d.kernels.map((k) => k.pieces), kernel: instance.exports.kernel,
  };
}

// The GEMM library's instance on `memory`.
const libraryOn = (library, memory) => new WebAssembly.Instance(library, { env: { memory } });

// The instance whose `kernel` runs the program, on `memory`: the program's module,
// importing the table of `lib` (the GEMM library's instance on the same memory) when
// the module runs f32 dots; or, for a program of f32 dots only (no module, a
// `directory`), `lib` itself on the program's directory.
function instantiate(module, memory, lib, directory) {
  if (!module) {
    lib.exports.directory.value = directory;
    return lib;
  }
  const imports = { env: { memory } };
  if (lib) imports.gemm = { table: lib.exports.table };
  return new WebAssembly.Instance(module, imports);
}

if (!isMainThread) {
  // A worker: its own instance on the shared memory, then pieces until a stop.
  const d = workerData;
  const instance = instantiate(d.module, d.memory, d.library && libraryOn(d.library, d.memory), d.directory);
  instance.exports.scratch.value = d.scratch;
  const s = shared(d, instance);
  parentPort.postMessage('ready');
  let c = Atomics.load(s.claim, 0);
  for (;;) {
    c = drain(s, c);
    if (kernelOf(c) === STOP) break;
    const until = performance.now() + SPIN_MS;
    let now;
    while ((now = Atomics.load(s.claim, 0)) === c && performance.now() < until);
    if (now === c) { Atomics.wait(s.claim, 0, c); now = Atomics.load(s.claim, 0); }
    c = now;
  }
  return;
}

const dir = process.argv[2];
const reply = (v) => process.stdout.write(JSON.stringify(v) + '\n');
(async () => {
  const program = JSON.parse(fs.readFileSync(dir + '/program.json'));
  const bytes = fs.readFileSync(dir + '/module.wasm');
  // The data the runner writes after instantiating, each piece's address and length in
  // `program.data`: that of a program the GEMM library runs, which has no module to
  // carry it (a module carries its data as segments, see `V8Engine::start`).
  const data = fs.readFileSync(dir + '/data.bin');
  const writeData = (memory) => {
    const mem = new Uint8Array(memory.buffer);
    let at = 0;
    for (const [offset, n] of program.data) {
      mem.set(data.subarray(at, at + n), offset);
      at += n;
    }
  };
  // The GEMM library is compiled once per worker, as the explorer's worker does, before
  // any program's module: like Node's start, it is not part of a program's compile. So is
  // the spare that the explorer's worker makes between programs: a memory of one page
  // and the library's instance on it, which a program that imports its memory grows to
  // its pages and takes.
  const library = program.gemm ? new WebAssembly.Module(fs.readFileSync(dir + '/gemm.wasm')) : null;
  const threaded = program.threads > 1;
  let spare = null;
  if (threaded || library) {
    const memory = new WebAssembly.Memory(
      threaded ? { initial: 1, maximum: program.max_pages, shared: true } : { initial: 1 });
    spare = { memory, lib: library && libraryOn(library, memory) };
  }
  const take = () => {
    spare.memory.grow(program.pages - 1);
    return spare;
  };
  const t0 = performance.now();
  let instance, memory, s = null, workers = [];
  // V8's compile and instantiate of the module, synchronous as in the explorer's worker
  // (`WebAssembly.compile`'s promise adds a few hundred microseconds of task hand-offs to
  // a small module); the workers' start (Node booting a thread, each instantiating the
  // compiled module) is timed apart, as Node's own start is.
  let instantiate_ms = 0, workers_ms = 0;
  // A program of f32 dots only has no module: the library's instance runs it.
  const compile = () => (program.directory ? null : new WebAssembly.Module(bytes));
  if (program.threads > 1) {
    const module = compile();
    const { memory: m, lib } = take();
    memory = m;
    instance = instantiate(module, memory, lib, program.directory);
    instance.exports.scratch.value = program.scratch;
    writeData(memory);
    instantiate_ms = performance.now() - t0;
    const d = {
      module, library, memory, kernels: program.kernels, directory: program.directory,
      claim: new SharedArrayBuffer(8), ctl: new SharedArrayBuffer(16), err: new SharedArrayBuffer(4096),
    };
    s = shared(d, instance);
    Atomics.store(s.claim, 0, BigInt(IDLE) << KERNEL_SHIFT);
    workers = Array.from({ length: program.threads - 1 }, (_, t) =>
      new Worker(__filename, { argv: [dir], workerData: { ...d, scratch: program.scratch + (t + 1) * program.stride } }));
    await Promise.all(workers.map((w) => new Promise((ok, no) => {
      w.once('message', ok);
      w.once('error', no);
      w.once('exit', (code) => no(new Error(`a worker exited (${code}) before it was ready`)));
    })));
    for (const w of workers) {
      w.removeAllListeners();
      w.on('error', (e) => { reply({ error: `a worker failed: ${(e && e.stack) || e}` }); process.exit(1); });
      w.unref();
    }
    workers_ms = performance.now() - t0 - instantiate_ms;
  } else {
    const module = compile();
    // A module with the GEMM imports its memory; one without defines it.
    if (library) {
      const { memory: m, lib } = take();
      memory = m;
      instance = instantiate(module, m, lib, program.directory);
      instance.exports.scratch.value = program.scratch;
    } else {
      instance = new WebAssembly.Instance(module, {});
      memory = instance.exports.memory;
    }
    writeData(memory);
    instantiate_ms = performance.now() - t0;
  }
  // Every plan kernel is WebAssembly here (a program with host kernels is refused), so
  // kernel k of the description is the module's kernel k.
  const kernel = instance.exports.kernel;
  const calls = program.kernels.map((k) => k.pieces);
  // An untimed run calls each of the program's stretches (`host::stretches`) through the
  // module's export with the index `program.whole` (`wasm::WHOLE`): stretchEnd[k] is the
  // end of the stretch starting at kernel k.
  const stretchEnd = new Array(calls.length).fill(0);
  for (const [a, b] of program.stretches) stretchEnd[a] = b;
  const runWhole = (first, last) => kernel(program.whole, first, last);
  let gen = 0n;
  const stop = () => {
    if (s) { Atomics.store(s.claim, 0, BigInt(STOP) << KERNEL_SHIFT); Atomics.notify(s.claim, 0); }
  };
  // Kernel `k`: one piece on this thread, several on every thread.
  const dispatch = (k) => {
    const pieces = calls[k];
    if (pieces.length === 1) return kernel(k, pieces[0][0], pieces[0][1]);
    gen = (gen + 1n) & GEN_MASK;
    Atomics.store(s.ctl, DONE, 0);
    const c = (gen << GEN_SHIFT) | (BigInt(k) << KERNEL_SHIFT);
    Atomics.store(s.claim, 0, c);
    Atomics.notify(s.claim, 0);
    drain(s, c);
    const until = performance.now() + SPIN_MS;
    let done;
    while ((done = Atomics.load(s.ctl, DONE)) < pieces.length) {
      if (performance.now() > until) Atomics.wait(s.ctl, DONE, done);
    }
    if (Atomics.load(s.ctl, ERR) !== 0) {
      const text = Buffer.from(s.err.slice(0, Atomics.load(s.ctl, ERR_LEN))).toString();
      throw new Error(`kernel ${k}: ${text}`);
    }
  };
  const bytesOf = () => new Uint8Array(memory.buffer);
  reply({ ready: true, instantiate_ms, workers_ms, node: process.version, threads: workers.length + 1 });
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const req = JSON.parse(line);
    if (req.cmd === 'load') {
      const mem = bytesOf();
      for (const [offset, file] of req.params) mem.set(fs.readFileSync(`${dir}/${file}`), offset);
      reply({ ok: true });
    } else if (req.cmd === 'run') {
      // A run with each kernel's dispatch timed, then a plain run for the run's time:
      // the plain run follows a run, as wasmtime's runs follow each other in one process,
      // not the pipe's request (reading and parsing it leaves this thread's caches cold,
      // which would otherwise be most of a tiny program's time).
      const kernels_ms = calls.map((_, k) => {
        const s = performance.now();
        dispatch(k);
        return performance.now() - s;
      });
      const t = performance.now();
      for (let k = 0; k < calls.length;) {
        const e = stretchEnd[k];
        if (e > 0) { runWhole(k, e); k = e; } else dispatch(k++);
      }
      const total_ms = performance.now() - t;
      reply({ total_ms, kernels_ms });
    } else if (req.cmd === 'result') {
      const mem = bytesOf();
      fs.writeFileSync(`${dir}/result.bin`, Buffer.concat(req.result.map(([o, n]) => mem.subarray(o, o + n))));
      reply({ ok: true });
    } else {
      reply({ error: `unknown request ${req.cmd}` });
    }
  }
  stop();
  process.exit(0);
})().catch((e) => { reply({ error: String((e && e.stack) || e) }); process.exit(1); });
"#;

/// A program instantiated in a `node` process.
pub struct V8Engine {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    dir: PathBuf,
    program: WasmProgram,
    /// Node's version (`v22.x`).
    pub node: String,
    /// V8's compile and instantiate of the module on Node's main thread, as Node
    /// measured it (a threaded module's workers start after it, untimed here, like Node).
    pub instantiate_s: f64,
}

impl V8Engine {
    /// Starts `node` on the program's module (a threaded one on its threads); refuses a
    /// program with host kernels, and says so when `node` is not on the PATH.
    pub fn start(program: WasmProgram) -> Result<V8Engine, String> {
        let (_, on_host) = program.counts();
        if on_host > 0 {
            return Err(format!(
                "--engine v8 runs programs whose kernels are all WebAssembly; {on_host} of this one's run on the host"
            ));
        }
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("hloscope-v8-{}-{nanos}", std::process::id()));
        let io = |e: std::io::Error| format!("cannot prepare the V8 run in {}: {e}", dir.display());
        std::fs::create_dir_all(&dir).map_err(io)?;
        // The standalone module (V8 copies its segments), or none and the data to write.
        let (module, data) = program.with_segments();
        std::fs::write(dir.join("module.wasm"), module.unwrap_or_default()).map_err(io)?;
        std::fs::write(dir.join("data.bin"), data.iter().flat_map(|(_, bytes)| bytes).copied().collect::<Vec<u8>>())
            .map_err(io)?;
        std::fs::write(dir.join("run.js"), RUNNER).map_err(io)?;
        if program.gemm {
            std::fs::write(dir.join("gemm.wasm"), wasm::gemm::library(program.threads > 1)).map_err(io)?;
        }
        let threads = program.threads.max(1);
        let kernels: Vec<serde_json::Value> = program
            .kernels
            .iter()
            .flatten()
            .map(|k| serde_json::json!({ "extent": k.extent, "pieces": host::chunks(k, threads) }))
            .collect();
        let description = serde_json::json!({
            "threads": threads,
            "pages": program.pages,
            "max_pages": wasm::MAX_PAGES,
            "scratch": program.scratch,
            "stride": program.scratch_stride,
            "gemm": program.gemm,
            "directory": program.directory,
            "data": data.iter().map(|(at, bytes)| [*at, bytes.len() as u64]).collect::<Vec<_>>(),
            "kernels": kernels,
            // All kernels are WebAssembly here, so plan indices are `kernels` indices.
            "stretches": host::stretches(&program).iter().map(|r| [r.start, r.end]).collect::<Vec<_>>(),
            "whole": wasm::WHOLE,
        });
        std::fs::write(dir.join("program.json"), description.to_string()).map_err(io)?;
        let mut child = Command::new("node")
            .arg(dir.join("run.js"))
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("--engine v8 needs Node.js (`node` on the PATH): {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("node's standard input or output is missing".into());
        };
        let mut engine = V8Engine {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            dir,
            program,
            node: String::new(),
            instantiate_s: 0.0,
        };
        let ready = engine.receive()?;
        engine.node = ready["node"].as_str().unwrap_or("node").to_string();
        engine.instantiate_s = ready["instantiate_ms"].as_f64().unwrap_or(0.0) / 1e3;
        if ready["threads"].as_u64() != Some(u64::from(threads)) {
            return Err(format!("node started {} threads for a module of {threads}", ready["threads"]));
        }
        Ok(engine)
    }

    pub fn program(&self) -> &WasmProgram {
        &self.program
    }

    /// Writes the parameters into the module's memory.
    pub fn load(&mut self, args: &[Value]) -> Result<(), String> {
        let plan = &self.program.plan;
        let leaves: Vec<Literal> = args.iter().cloned().flat_map(Value::flatten).collect();
        let buffers: Vec<_> = plan.params.iter().flat_map(|p| p.leaves()).collect();
        if leaves.len() != buffers.len() {
            return Err(format!("{} parameter arrays, the program takes {}", leaves.len(), buffers.len()));
        }
        let mut params = Vec::new();
        for (k, (l, &b)) in leaves.iter().zip(&buffers).enumerate() {
            if l.shape != plan.buffers[b].shape {
                return Err(format!("parameter {k} is {:?}, the program takes {:?}", l.shape, plan.buffers[b].shape));
            }
            let file = format!("p{k}.bin");
            std::fs::write(self.dir.join(&file), l.to_le_bytes()).map_err(|e| format!("cannot write {file}: {e}"))?;
            params.push(serde_json::json!([plan.arena.offset(b), file]));
        }
        self.request(serde_json::json!({ "cmd": "load", "params": params }))?;
        Ok(())
    }

    /// One run with each kernel timed (their times, in plan order), then a plain run (its
    /// time), in seconds.
    pub fn run(&mut self) -> Result<(f64, Vec<f64>), String> {
        let answer = self.request(serde_json::json!({ "cmd": "run" }))?;
        let total = answer["total_ms"].as_f64().ok_or("node's run gave no time")? / 1e3;
        let times: Vec<f64> = answer["kernels_ms"]
            .as_array()
            .ok_or("node's run gave no kernel times")?
            .iter()
            .map(|t| t.as_f64().unwrap_or(0.0) / 1e3)
            .collect();
        if times.len() != self.program.plan.kernels.len() {
            return Err(format!(
                "node timed {} kernels, the plan has {}",
                times.len(),
                self.program.plan.kernels.len()
            ));
        }
        Ok((total, times))
    }

    /// The result of the last run, read from the module's memory.
    pub fn result(&mut self) -> Result<Vec<Literal>, String> {
        let plan = &self.program.plan;
        let leaves = plan.result.leaves();
        let spans: Vec<_> = leaves
            .iter()
            .map(|&b| serde_json::json!([plan.arena.offset(b), plan.buffers[b].shape.byte_size()]))
            .collect();
        self.request(serde_json::json!({ "cmd": "result", "result": spans }))?;
        let bytes =
            std::fs::read(self.dir.join("result.bin")).map_err(|e| format!("cannot read node's result: {e}"))?;
        let plan = &self.program.plan;
        let mut at = 0;
        let mut out = Vec::with_capacity(leaves.len());
        for &b in &leaves {
            let shape = plan.buffers[b].shape.clone();
            let n = shape.byte_size();
            let chunk = bytes.get(at..at + n).ok_or("node's result is short")?;
            out.push(Literal::from_le_bytes(shape, chunk).ok_or("a result of the wrong size")?);
            at += n;
        }
        Ok(out)
    }

    fn request(&mut self, req: serde_json::Value) -> Result<serde_json::Value, String> {
        writeln!(self.stdin, "{req}").and_then(|()| self.stdin.flush()).map_err(|e| format!("node stopped: {e}"))?;
        self.receive()
    }

    fn receive(&mut self) -> Result<serde_json::Value, String> {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).map_err(|e| format!("cannot read node's answer: {e}"))?;
        if n == 0 {
            return Err("node exited before answering (its error is above)".into());
        }
        let answer: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("node's answer {line:?} is not JSON: {e}"))?;
        match answer["error"].as_str() {
            Some(e) => Err(format!("node: {e}")),
            None => Ok(answer),
        }
    }
}

impl Drop for V8Engine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hloscope_core::targets::wasm::{self, runtime::WasmExecutable};

    /// A dot large enough to split by rows, an elementwise kernel and a row reduction.
    const HLO: &str = "HloModule threads

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[1024,256] parameter(0)
  w = f32[256,512] parameter(1)
  d = f32[1024,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = f32[1024,512] parameter(2)
  t = f32[1024,512] tanh(y)
  e = f32[1024,512] multiply(t, y)
  z = f32[] constant(0)
  r = f32[1024] reduce(d, z), dimensions={1}, to_apply=add
  ROOT out = (f32[1024,512], f32[1024,512], f32[1024]) tuple(d, e, r)
}
";

    fn bytes(values: &[Literal]) -> Vec<Vec<u8>> {
        values.iter().map(Literal::to_le_bytes).collect()
    }

    /// The threaded module in V8 gives the one-thread module's bytes under wasmtime, on 1,
    /// 2 and 3 threads, run after run; the dot and the elementwise kernel are split, so
    /// a piece no thread ran would leave zeros where wasmtime has numbers.
    #[test]
    fn threaded_modules_in_v8_give_wasmtimes_bytes() {
        let node = Command::new("node").arg("--version").output();
        assert!(node.is_ok_and(|o| o.status.success()), "this test needs Node.js (`node`) on the PATH");
        let parsed = hloscope_core::parse::parse_module(HLO).unwrap();
        let m = hloscope_core::targets::optimize(&parsed).unwrap();
        let args = hloscope_core::interp::random_inputs(&m, 11);
        let one = wasm::compile_threaded(&m, 1).unwrap();
        let want: Vec<Literal> = WasmExecutable::new(&m, one).unwrap().run(&args).unwrap().0.flatten();
        let interpreted = hloscope_core::interp::run(&m, &args).unwrap().flatten();
        let check = hloscope_core::interp::check::check_outputs(&want, &interpreted);
        assert!(check.passed, "wasmtime agrees with the interpreter: {check:?}");
        for threads in [1, 2, 3] {
            let program = wasm::compile_threaded(&m, threads).unwrap();
            let pieces: Vec<usize> = program.kernels.iter().flatten().map(|k| host::chunks(k, threads).len()).collect();
            eprintln!("{threads} threads, pieces {pieces:?}:\n{}", program.summary());
            assert_eq!(pieces.len(), 3, "a dot, a row reduction and an elementwise kernel:\n{}", program.summary());
            if threads > 1 {
                assert!(pieces.iter().all(|&n| n > 1), "every kernel splits on {threads} threads: {pieces:?}");
            }
            let mut engine = V8Engine::start(program).unwrap();
            for _ in 0..3 {
                engine.load(&args).unwrap();
                let (total, kernels) = engine.run().unwrap();
                eprintln!("{threads} threads: run {:.2} ms, kernels {kernels:.4?}", total * 1e3);
                assert_eq!(bytes(&engine.result().unwrap()), bytes(&want), "{threads} threads");
            }
        }
    }

    /// A program of f32 dots only has no module: in V8 the GEMM library's own `kernel`
    /// runs it on the program's directory, a large dot split across the threads and a
    /// batched one after it, with wasmtime's bytes.
    #[test]
    fn programs_of_dots_only_run_on_the_library_in_v8() -> Result<(), String> {
        let hlo = "HloModule dots
ENTRY main {
  x = f32[300,128] parameter(0)
  w = f32[128,96] parameter(1)
  d = f32[300,96] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  v = f32[96,300] parameter(2)
  ROOT e = f32[300,300] dot(d, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
";
        let parsed = hloscope_core::parse::parse_module(hlo).map_err(|e| format!("{e:?}"))?;
        let m = hloscope_core::targets::optimize(&parsed)?;
        let args = hloscope_core::interp::random_inputs(&m, 3);
        let want: Vec<Literal> = WasmExecutable::new(&m, wasm::compile(&m)?)?.run(&args)?.0.flatten();
        let interpreted = hloscope_core::interp::run(&m, &args).map_err(|e| format!("{e:?}"))?.flatten();
        assert_eq!(bytes(&want), bytes(&interpreted), "wasmtime gives the interpreter's f32 dots");
        for threads in [1, 2] {
            let program = wasm::compile_threaded(&m, threads)?;
            assert!(program.runs_on_library(), "{}", program.summary());
            let mut engine = V8Engine::start(program)?;
            for _ in 0..2 {
                engine.load(&args)?;
                engine.run()?;
                assert_eq!(bytes(&engine.result()?), bytes(&want), "{threads} threads");
            }
        }
        Ok(())
    }
}
