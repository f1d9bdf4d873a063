//! The WebAssembly target's kernels in V8, the browser's engine, through Node.js
//! (`hloscope bench --target wasm --engine v8`): the same module the browser's worker
//! instantiates, run by a `node` child process that this side drives over its standard
//! input and output, one JSON line per request. Node times the runs itself with
//! `performance.now()`, so the pipe's latency is never part of a time.
//!
//! Only programs whose kernels are all WebAssembly run here: a host kernel needs the
//! interpreter, which lives on this side of the pipe.

use hloscope_core::ir::{Literal, Value};
use hloscope_core::targets::wasm::WasmProgram;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Node's side: instantiates the module, then answers `load`, `run` and `result`
/// requests (one JSON line each) with one JSON line.
const RUNNER: &str = r#"
const fs = require('fs');
const readline = require('readline');
const { performance } = require('perf_hooks');
const dir = process.argv[2];
const reply = (v) => process.stdout.write(JSON.stringify(v) + '\n');
(async () => {
  const program = JSON.parse(fs.readFileSync(dir + '/program.json'));
  const t0 = performance.now();
  const { instance } = await WebAssembly.instantiate(fs.readFileSync(dir + '/module.wasm'));
  const instantiate_ms = performance.now() - t0;
  const calls = program.calls.map(([name, extent]) => [instance.exports[name], extent]);
  const memory = () => new Uint8Array(instance.exports.memory.buffer);
  reply({ ready: true, instantiate_ms, node: process.version });
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const req = JSON.parse(line);
    if (req.cmd === 'load') {
      const mem = memory();
      for (const [offset, file] of req.params) mem.set(fs.readFileSync(`${dir}/${file}`), offset);
      reply({ ok: true });
    } else if (req.cmd === 'run') {
      // A plain run for the run's time, then one with each call timed.
      let t = performance.now();
      for (const [f, extent] of calls) f(0, extent);
      const total_ms = performance.now() - t;
      const kernels_ms = calls.map(([f, extent]) => {
        const s = performance.now();
        f(0, extent);
        return performance.now() - s;
      });
      reply({ total_ms, kernels_ms });
    } else if (req.cmd === 'result') {
      const mem = memory();
      fs.writeFileSync(`${dir}/result.bin`, Buffer.concat(req.result.map(([o, n]) => mem.subarray(o, o + n))));
      reply({ ok: true });
    } else {
      reply({ error: `unknown request ${req.cmd}` });
    }
  }
})().catch((e) => { reply({ error: String(e && e.stack || e) }); process.exit(1); });
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
    /// V8's compile and instantiate of the module, as Node measured it.
    pub instantiate_s: f64,
}

impl V8Engine {
    /// Starts `node` on the program's module; refuses a program with host kernels, and
    /// says so when `node` is not on the PATH.
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
        std::fs::write(dir.join("module.wasm"), &program.bytes).map_err(io)?;
        std::fs::write(dir.join("run.js"), RUNNER).map_err(io)?;
        let calls: Vec<serde_json::Value> =
            program.kernels.iter().flatten().map(|k| serde_json::json!([k.export, k.extent])).collect();
        std::fs::write(dir.join("program.json"), serde_json::json!({ "calls": calls }).to_string()).map_err(io)?;
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

    /// One plain run (its time), then one with each kernel timed (their times, in plan
    /// order), in seconds.
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
