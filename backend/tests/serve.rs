//! `hloscope serve` driven over HTTP as a client would: the real binary on an ephemeral
//! loopback port with a temporary data folder.
//!
//! - the happy path: compile → run (cpu, checked against the interpreter) → share →
//!   restart → the share link loads; share → `kill -9` → restart → it still loads;
//! - hostile input: malformed JSON, a 10 MiB body, an invalid module, an unknown target,
//!   sizes that overflow or would need 100 GiB in both text formats on every target, an
//!   endless `while`, a worker out of memory; each a clear JSON 4xx (or a time-limit
//!   error within the limit), and `/api/health` answers after each;
//! - admission: 429 and 503 with `Retry-After` when a client or the queue is full;
//! - static files: nothing outside the app's folder, whatever the path says.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server and the folder it keeps its data in.
struct Server {
    child: Child,
    base: String,
    data_dir: PathBuf,
}

/// A fresh folder under the system's temporary folder.
fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let d = std::env::temp_dir().join(format!("hloscope-serve-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl Server {
    /// Starts `hloscope serve` on a free port with `data_dir` and `extra` flags; returns
    /// once it listens.
    fn start(data_dir: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hloscope"))
            .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("hloscope starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let base = line.trim().strip_prefix("hloscope serving on ").unwrap_or_else(|| panic!("no address in {line:?}"));
        Server { child, base: base.to_string(), data_dir: data_dir.to_path_buf() }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn client() -> reqwest::blocking::Client {
        reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap()
    }

    /// POSTs `body` as JSON; the status, the headers and the JSON answer.
    fn post(&self, path: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, Value) {
        let r = Server::client().post(self.url(path)).json(body).send().unwrap();
        let (status, headers) = (r.status().as_u16(), r.headers().clone());
        let text = r.text().unwrap();
        let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}"));
        (status, headers, v)
    }

    fn post_raw(&self, path: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
        let r = Server::client().post(self.url(path)).header("content-type", content_type).body(body).send().unwrap();
        let status = r.status().as_u16();
        let text = r.text().unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}")))
    }

    /// POSTs a JSON body of `body.len()` bytes announced with `Expect: 100-continue`
    /// over a plain socket: a server that refuses it by its length answers before the
    /// body is sent (reqwest would write the whole body first and, when the server closes
    /// the connection after its answer, fail with a broken pipe instead of the answer).
    fn post_oversized(&self, path: &str, body: &[u8]) -> (u16, Value) {
        let addr = self.base.trim_start_matches("http://").to_string();
        let mut sock = std::net::TcpStream::connect(&addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
            body.len()
        );
        sock.write_all(head.as_bytes()).unwrap();
        let mut reader = BufReader::new(sock.try_clone().unwrap());
        loop {
            let mut status = String::new();
            reader.read_line(&mut status).unwrap();
            let code: u16 = status
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("status line {status:?}"));
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                headers.push(line.to_ascii_lowercase());
            }
            if code == 100 {
                // The server asked for the body after all: send it (it may stop reading).
                let _ = sock.write_all(body);
                continue;
            }
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
            let text = if headers.iter().any(|h| h.starts_with("transfer-encoding:") && h.contains("chunked")) {
                dechunk(&rest)
            } else {
                String::from_utf8_lossy(&rest).to_string()
            };
            let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}"));
            return (code, v);
        }
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let r = Server::client().get(self.url(path)).send().unwrap();
        let status = r.status().as_u16();
        let text = r.text().unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// `/api/health` answers, and says ok.
    fn assert_healthy(&self) {
        let (status, h) = self.get("/api/health");
        assert_eq!(status, 200, "{h}");
        assert_eq!(h["status"], "ok");
    }

    /// Stops the server as Ctrl-C would (graceful).
    fn stop(mut self) {
        // SAFETY: kill only signals the process we started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }

    /// `kill -9`: no chance to flush or close anything.
    fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn example(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name)).unwrap()
}

/// An error answer: the status, and a JSON body with a sentence and a kind.
fn assert_error(got: &(u16, Value), status: u16, kind: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["kind"], kind, "{}", got.1);
    assert!(got.1["error"].as_str().is_some_and(|e| e.len() > 10), "{}", got.1);
}

#[test]
fn compile_run_share_restart_and_kill_9() {
    let data = temp_dir("happy");
    let server = Server::start(&data, &[]);
    let mlp = example("mlp.mlir");

    // Compile: a snapshot per pass, the cost, the plan, and the cpu's kernels.
    let (status, _, c) = server.post("/api/compile", &json!({"source": mlp, "targets": ["cpu"], "profile": "a100"}));
    assert_eq!(status, 200, "{c}");
    assert_eq!(c["format"], "stablehlo");
    let snaps = c["snapshots"].as_array().unwrap();
    let passes: Vec<&str> = snaps.iter().map(|s| s["pass"].as_str().unwrap()).collect();
    assert_eq!(
        passes,
        [
            "input",
            "inline",
            "simplify",
            "transpose-folding",
            "dot-strength-reduction",
            "dot-merger",
            "constant-fold",
            "cse",
            "dce",
            "fusion",
            "layout-assignment",
            "schedule"
        ]
    );
    let fusion = &snaps[9];
    assert!(fusion["decisions"].as_array().unwrap().iter().any(|d| d["taken"] == true), "{fusion}");
    assert!(fusion["graph"]["nodes"].as_array().unwrap().iter().any(|n| n["fusion_group"].is_string()));
    assert!(snaps[0]["text"].as_str().unwrap().contains("ENTRY"));
    let kernels = c["cost"]["kernels"].as_u64().unwrap();
    assert!(kernels >= 2 && kernels < snaps[0]["cost"]["kernels"].as_u64().unwrap(), "{}", c["cost"]);
    assert!(c["cost"]["profile"].as_str().unwrap().contains("A100"), "{}", c["cost"]);
    assert!(!c["plan"].as_array().unwrap().is_empty());
    let cpu = &c["code"][0];
    assert_eq!(cpu["target"], "cpu");
    assert!(cpu["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["clif"].as_str().is_some_and(|t| t.contains("function"))));

    // Run on the cpu: checked against the interpreter, per-kernel timings, and the same
    // numbers as the interpreter's own run.
    let run = |target: &str| {
        server
            .post("/api/run", &json!({"source": mlp, "target": target, "inputs": {"random": {"seed": 3}}, "iters": 3}))
    };
    let (status, _, cpu_run) = run("cpu");
    assert_eq!(status, 200, "{cpu_run}");
    assert_eq!(cpu_run["check"]["passed"], true, "{cpu_run}");
    assert_eq!(cpu_run["iters"], 3);
    assert!(!cpu_run["kernels"].as_array().unwrap().is_empty());
    assert_eq!(cpu_run["outputs"][0]["shape"], json!([4, 3]));
    let (status, _, interp_run) = run("interp");
    assert_eq!(status, 200, "{interp_run}");
    assert!(interp_run["check"].is_null());
    let firsts = |v: &Value| -> Vec<f64> {
        v["outputs"][0]["first"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
    };
    let (a, b) = (firsts(&cpu_run), firsts(&interp_run));
    assert_eq!(a.len(), 12);
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-5 + 1e-4 * y.abs(), "cpu {a:?} vs interp {b:?}");
    }
    // The second cpu run of the same module is a cache hit.
    let (_, _, again) = run("cpu");
    assert_eq!(again["cache"], "hit", "{again}");
    let (_, health) = server.get("/api/health");
    assert!(health["cache_hits"].as_u64().unwrap() >= 1, "{health}");

    // The server's CPU as a cost profile: measured once, then the same numbers. Any real
    // CPU moves more than 100 MB/s and computes more than 100 MFLOP/s; a kernel's
    // overhead is under a millisecond.
    let (status, profile) = server.get("/api/profile");
    assert_eq!(status, 200, "{profile}");
    assert_eq!(profile["name"], "server CPU (measured)");
    for (key, least) in [("peak_f32", 1e8), ("peak_f64", 1e8), ("mem_bandwidth", 1e8)] {
        assert!(profile[key].as_f64().unwrap() > least, "{key}: {profile}");
    }
    let overhead = profile["launch_overhead_s"].as_f64().unwrap();
    assert!(overhead > 0.0 && overhead < 1e-3, "{profile}");
    assert_eq!(server.get("/api/profile").1, profile);

    // Share, restart, load.
    let settings = json!({"pass": 6, "fusion": "no-multi-output"});
    let (status, _, shared) = server.post("/api/share", &json!({"source": mlp, "settings": settings}));
    assert_eq!(status, 200, "{shared}");
    let id = shared["id"].as_str().unwrap().to_string();
    assert!(id.len() >= 11, "at least 64 bits: {id}");
    assert_eq!(shared["url"], format!("/?share={id}"));
    // The same state again: the same id.
    assert_eq!(server.post("/api/share", &json!({"source": mlp, "settings": settings})).2["id"], id.as_str());
    assert_eq!(server.get("/api/share/doesnotexist").0, 404);
    server.stop();

    let server = Server::start(&data, &[]);
    let (status, got) = server.get(&format!("/api/share/{id}"));
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["source"], mlp.as_str());
    assert_eq!(got["settings"], settings);

    // Share, then kill -9 at once: the answered share is on disk.
    let (_, _, second) = server.post("/api/share", &json!({"source": "HloModule x", "settings": {"n": 2}}));
    let second_id = second["id"].as_str().unwrap().to_string();
    server.kill9();
    let server = Server::start(&data, &[]);
    let (status, got) = server.get(&format!("/api/share/{second_id}"));
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["settings"], json!({"n": 2}));
    assert_eq!(server.get(&format!("/api/share/{id}")).0, 200);
    let dir = server.data_dir.clone();
    server.stop();
    let _ = std::fs::remove_dir_all(dir);
}

/// Hostile modules: each is refused with a 4xx that names the place and the reason.
#[test]
fn hostile_input_gets_clear_errors() {
    let data = temp_dir("hostile");
    let server = Server::start(&data, &["--run-timeout-s", "4", "--compile-timeout-s", "4"]);

    // Malformed JSON, not JSON, a wrong field, a 10 MiB body.
    assert_error(&server.post_raw("/api/run", "application/json", b"{\"source\": ".to_vec()), 400, "bad_request");
    assert_error(&server.post_raw("/api/compile", "application/json", b"{\"source\": 3}".to_vec()), 400, "bad_request");
    assert_error(
        &server.post_raw("/api/compile", "application/json", b"{\"sauce\": \"x\"}".to_vec()),
        400,
        "bad_request",
    );
    assert_eq!(server.post_raw("/api/compile", "text/plain", b"{}".to_vec()).0, 415);
    let big = format!("{{\"source\": \"{}\"}}", "a".repeat(10 << 20));
    assert_error(&server.post_oversized("/api/compile", big.as_bytes()), 413, "too_large");
    server.assert_healthy();

    // An invalid module: the line and column of the mistake.
    let bad = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, z)\n}";
    let got = server.post("/api/compile", &json!({"source": bad}));
    let got = (got.0, got.2);
    assert_error(&got, 422, "invalid_module");
    assert_eq!((got.1["line"].as_u64(), got.1["col"].as_u64()), (Some(4), Some(26)), "{}", got.1);
    let bad_mlir = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = stablehlo.add %x, %q : tensor<4xf32>\n  return %y : tensor<4xf32>\n}";
    let got = server.post("/api/run", &json!({"source": bad_mlir, "target": "cpu"}));
    assert_error(&(got.0, got.2.clone()), 422, "invalid_module");
    assert_eq!(got.2["line"], 2, "{}", got.2);

    // Unknown target, bad options.
    let ok = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, x)\n}";
    let got = server.post("/api/run", &json!({"source": ok, "target": "tpu"}));
    assert_error(&(got.0, got.2), 400, "bad_request");
    // cuda runs where the server has a device; elsewhere it says why, as /api/targets does.
    let (_, targets) = server.get("/api/targets");
    let cuda = targets["targets"].as_array().unwrap().iter().find(|t| t["name"] == "cuda").unwrap().clone();
    let got = server.post("/api/run", &json!({"source": ok, "target": "cuda", "inputs": {"random": {"seed": 1}}}));
    if cuda["available"] == true {
        assert_eq!(got.0, 200, "{}", got.2);
        assert_eq!(got.2["check"]["passed"], true, "{}", got.2);
    } else {
        assert_error(&(got.0, got.2.clone()), 422, "target_unavailable");
        let why = cuda["description"].as_str().unwrap();
        assert!(got.2["error"].as_str().unwrap().ends_with(why), "{} vs {why}", got.2);
    }
    let got = server.post("/api/compile", &json!({"source": ok, "pipeline": "default,frobnicate"}));
    assert_error(&(got.0, got.2), 400, "bad_request");
    let got = server.post("/api/run", &json!({"source": ok, "target": "cpu", "iters": 100000}));
    assert_error(&(got.0, got.2), 400, "bad_request");
    let got = server.post("/api/run", &json!({"source": ok, "target": "cpu", "inputs": ["not base64!"]}));
    assert_error(&(got.0, got.2), 400, "bad_request");
    server.assert_healthy();

    // Sizes that overflow, or that no machine has, in both formats and on every target.
    let hostile_hlo = [
        ("HloModule m\nENTRY e {\n  x = f32[4] parameter(99999999999)\n  ROOT y = f32[4] add(x, x)\n}", 3),
        ("HloModule m\nENTRY e {\n  ROOT i = f32[100000000000] iota(), iota_dimension=0\n}", 3),
        ("HloModule m\nENTRY e {\n  x = f32[65536,65536,65536,65536] parameter(0)\n  ROOT y = f32[65536,65536,65536,65536] add(x, x)\n}", 3),
        ("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  z = f32[] constant(0)\n  ROOT p = f32[9223372036854775807] pad(x, z), padding=0_9223372036854775805\n}", 5),
        ("HloModule m\nENTRY e {\n  z = f32[] constant(0)\n  ROOT b = f32[3000000000,3000000000] broadcast(z), dimensions={}\n}", 4),
        // 100 GiB of output: 25e9 f32s.
        ("HloModule m\nENTRY e {\n  z = f32[] constant(1)\n  ROOT b = f32[25000000000] broadcast(z), dimensions={}\n}", 4),
    ];
    let hostile_mlir = [
        "func.func @main() -> tensor<100000000000xf32> {\n  %0 = stablehlo.iota dim = 0 : tensor<100000000000xf32>\n  return %0 : tensor<100000000000xf32>\n}",
        "func.func @main(%x: tensor<65536x65536x65536x65536xf32>) -> tensor<65536x65536x65536x65536xf32> {\n  %0 = stablehlo.add %x, %x : tensor<65536x65536x65536x65536xf32>\n  return %0 : tensor<65536x65536x65536x65536xf32>\n}",
        "func.func @main() -> tensor<25000000000xf32> {\n  %c = stablehlo.constant dense<1.0> : tensor<f32>\n  %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<25000000000xf32>\n  return %0 : tensor<25000000000xf32>\n}",
    ];
    let sources: Vec<(&str, Option<u64>)> = hostile_hlo
        .iter()
        .map(|(s, line)| (*s, Some(*line as u64)))
        .chain(hostile_mlir.iter().map(|s| (*s, None)))
        .collect();
    for (source, line) in sources {
        for (path, body) in [
            ("/api/compile", json!({"source": source, "targets": ["cpu"]})),
            ("/api/run", json!({"source": source, "target": "interp"})),
            ("/api/run", json!({"source": source, "target": "cpu"})),
        ] {
            let t = Instant::now();
            let (status, _, v) = server.post(path, &body);
            assert!(status == 422, "{path} {source:?}: {status} {v}");
            assert!(v["kind"] == "invalid_module" || v["kind"] == "resource_limit", "{source:?}: {v}");
            assert!(v["line"].is_u64(), "{source:?}: the error names no line: {v}");
            if let Some(line) = line {
                assert!(v["line"].as_u64().unwrap() <= line, "{source:?}: {v}");
            }
            assert!(t.elapsed() < Duration::from_secs(3), "{source:?} took {:?}", t.elapsed());
            server.assert_healthy();
        }
    }

    // A while loop that never ends: stopped at the time limit, on both targets.
    let endless = "HloModule w\n\ncond {\n  p = f32[64,64] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\nbody {\n  p = f32[64,64] parameter(0)\n  ROOT n = f32[64,64] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n\nENTRY e {\n  x = f32[64,64] parameter(0)\n  ROOT w = f32[64,64] while(x), condition=cond, body=body\n}";
    for target in ["interp", "cpu"] {
        let t = Instant::now();
        let (status, _, v) = server.post("/api/run", &json!({"source": endless, "target": target}));
        let took = t.elapsed();
        assert!(status == 422, "{target}: {status} {v}");
        assert!(v["kind"] == "time_limit" || v["kind"] == "run_failed", "{target}: {v}");
        assert!(took < Duration::from_secs(8), "{target}: the limit is 4 s, took {took:?}");
        server.assert_healthy();
    }
    server.stop();
    let _ = std::fs::remove_dir_all(data);
}

/// A worker that runs out of memory fails its request; the server carries on.
#[test]
fn a_worker_out_of_memory_fails_one_request() {
    let data = temp_dir("oom");
    let server = Server::start(&data, &["--worker-memory-mib", "1024", "--max-elements", "1000000000"]);
    // 200 M f32s pass the size check (800 MB of arrays, under the worker's 1 GiB), but the
    // interpreter holds them as f64: the worker's allocation fails and it aborts.
    let huge = "HloModule m\nENTRY e {\n  ROOT i = f32[200000000] iota(), iota_dimension=0\n}";
    let (status, _, v) = server.post("/api/run", &json!({"source": huge, "target": "interp"}));
    assert_error(&(status, v.clone()), 422, "resource_limit");
    assert!(v["error"].as_str().unwrap().contains("more memory than its limit of 1024 MiB"), "{v}");
    // 300 M f32s are refused before the worker allocates anything.
    let huger = "HloModule m\nENTRY e {\n  ROOT i = f32[300000000] iota(), iota_dimension=0\n}";
    let (status, _, v) = server.post("/api/run", &json!({"source": huger, "target": "interp"}));
    assert_error(&(status, v.clone()), 422, "resource_limit");
    assert_eq!(v["line"], 3, "{v}");
    server.assert_healthy();
    let ok = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, x)\n}";
    let (status, _, v) = server.post("/api/run", &json!({"source": ok, "target": "cpu"}));
    assert_eq!(status, 200, "{v}");
    server.stop();
    let _ = std::fs::remove_dir_all(data);
}

/// One client cannot fill the server; a full queue says when to come back.
#[test]
fn busy_server_answers_429_and_503_with_retry_after() {
    let slow = "HloModule w\n\ncond {\n  p = f32[64,64] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\nbody {\n  p = f32[64,64] parameter(0)\n  ROOT n = f32[64,64] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n\nENTRY e {\n  x = f32[64,64] parameter(0)\n  ROOT w = f32[64,64] while(x), condition=cond, body=body\n}";
    let busy_with = |extra: &[&str], expect: u16| {
        let data = temp_dir("busy");
        let server = Server::start(&data, extra);
        let url = server.url("/api/run");
        let body = json!({"source": slow, "target": "interp"});
        let first = {
            let (url, body) = (url.clone(), body.clone());
            std::thread::spawn(move || Server::client().post(url).json(&body).send().map(|r| r.status().as_u16()))
        };
        // Wait until the first job holds the only permit.
        let t = Instant::now();
        while server.get("/api/health").1["running"] != 1 {
            assert!(t.elapsed() < Duration::from_secs(10), "the first job never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        let (status, headers, v) = server.post("/api/run", &body);
        assert_eq!(status, expect, "{v}");
        assert_eq!(v["kind"], "busy");
        let retry: u32 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!(retry >= 1);
        server.assert_healthy();
        assert_eq!(first.join().unwrap().unwrap(), 422);
        server.stop();
        let _ = std::fs::remove_dir_all(data);
    };
    let limits = ["--max-jobs", "1", "--run-timeout-s", "2"];
    busy_with(&[&limits[..], &["--per-client", "1"]].concat(), 429);
    busy_with(&[&limits[..], &["--per-client", "4", "--queue", "0"]].concat(), 503);
}

/// The app's folder is served with content types, and no path reaches outside it.
#[test]
fn static_files_stay_inside_their_folder() {
    let root = temp_dir("static");
    let app = root.join("app");
    std::fs::create_dir_all(app.join("pkg")).unwrap();
    std::fs::write(app.join("index.html"), "<!doctype html><title>app</title>").unwrap();
    std::fs::write(app.join("pkg/x.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(app.join("pkg/x.js"), "export {}").unwrap();
    std::fs::write(root.join("secret.txt"), "TOP SECRET").unwrap();
    let data = root.join("data");
    let server = Server::start(&data, &["--static-dir", app.to_str().unwrap()]);

    let r = Server::client().get(server.url("/")).send().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    assert!(r.headers()["content-security-policy"].to_str().unwrap().contains("script-src 'self'"));
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    let r = Server::client().get(server.url("/pkg/x.wasm")).send().unwrap();
    assert_eq!(r.headers()["content-type"], "application/wasm");
    let r = Server::client().get(server.url("/pkg/x.js")).send().unwrap();
    assert!(r.headers()["content-type"].to_str().unwrap().contains("javascript"));

    // Raw requests, so that no client library cleans the path first.
    let addr = server.base.strip_prefix("http://").unwrap().to_string();
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/pkg/../../secret.txt",
        "/pkg/%2e%2e/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/%2e%2e%2fsecret.txt",
        "//etc/passwd",
        "/../../../../../../etc/passwd",
        "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    ] {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(!answer.contains("TOP SECRET") && !answer.contains("root:"), "{path}: {answer}");
        let status: u16 = answer.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(status == 404 || status == 400, "{path}: {answer}");
    }
    server.stop();
    let _ = std::fs::remove_dir_all(root);
}

/// The body of a chunked HTTP/1.1 answer.
fn dechunk(mut raw: &[u8]) -> String {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&raw[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        out.extend_from_slice(&raw[start..(start + size).min(raw.len())]);
        raw = &raw[(start + size + 2).min(raw.len())..];
    }
    String::from_utf8_lossy(&out).to_string()
}
