//! `cargo xtask bench --server`: a load test of `hloscope serve` on loopback.
//!
//! Builds `hloscope` (release), starts `hloscope serve` on a free loopback port with a
//! temporary data folder (so a fresh compilation cache) and `--per-client` high enough
//! for all the clients, which share one address; every other limit is the server's
//! default. Then `--clients` (64) concurrent clients, for `--seconds` (20) each, loop:
//! `POST /api/compile` (with the cpu target's code) then `POST /api/run` (target cpu,
//! random inputs, a fresh seed each time) of the JAX transformer block
//! (`backend/tests/corpus/transformer_block`). A 429 or 503 with `Retry-After` is the
//! server's backpressure, counted apart: that client waits the seconds it was told, then
//! sends the same request again. Anything else that is not a 200 (or a run whose
//! numerics check against the interpreter failed) is a failed request, and fails the
//! command.
//!
//! While it runs, the server's `/proc/PID/status` (VmRSS, VmHWM) and its worker
//! processes' resident memory are sampled every 100 ms. Prints a table and writes
//! `target/bench/server.json`.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CORPUS_MODULE: &str = "backend/tests/corpus/transformer_block/module.mlir";

/// What the clients saw, per endpoint.
#[derive(Default)]
struct Endpoint {
    /// Seconds from sending to the last byte of the answer, of the 200s.
    ok: Vec<f64>,
    /// 429/503 answers with Retry-After.
    busy: u64,
    /// Failed requests, by what went wrong.
    failed: BTreeMap<String, u64>,
}

impl Endpoint {
    fn failed(&self) -> u64 {
        self.failed.values().sum()
    }
    fn merge(&mut self, other: Endpoint) {
        self.ok.extend(other.ok);
        self.busy += other.busy;
        for (k, n) in other.failed {
            *self.failed.entry(k).or_default() += n;
        }
    }
}

/// One memory sample: seconds since the load started, the server's and its workers' RSS.
#[derive(Clone, Copy)]
struct Sample {
    t: f64,
    server_rss_kib: u64,
    server_hwm_kib: u64,
    workers_rss_kib: u64,
    largest_worker_hwm_kib: u64,
    workers: u64,
}

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let mut clients = 64usize;
    let mut seconds = 20.0f64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("bench --server: {name} needs a value"));
        match a.as_str() {
            "--server" => {}
            "--clients" => clients = value("--clients")?.parse().map_err(|e| format!("--clients: {e}"))?,
            "--seconds" => seconds = value("--seconds")?.parse().map_err(|e| format!("--seconds: {e}"))?,
            other => {
                return Err(format!("bench --server: unknown argument {other:?} (--clients N, --seconds S)"));
            }
        }
    }
    if clients == 0 || !seconds.is_finite() || seconds <= 0.0 {
        return Err("bench --server: --clients and --seconds must be positive".into());
    }
    eprintln!("== building hloscope (release)");
    crate::run_in(root, "cargo", &["build", "--release", "--quiet", "-p", "hloscope"])?;
    let exe = root.join("target").join("release").join("hloscope");
    let source = std::fs::read_to_string(root.join(CORPUS_MODULE)).map_err(|e| format!("{CORPUS_MODULE}: {e}"))?;

    let work = std::env::temp_dir().join(format!("hloscope-server-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let per_client = clients.to_string();
    let result = crate::schemathesis::Server::start(&exe, &work, &["--per-client", &per_client]).and_then(|server| {
        let r = load(&server, &source, clients, Duration::from_secs_f64(seconds));
        let log = server.stop();
        r.map_err(|e| format!("{e}\n--- the server's log (last lines) ---\n{log}"))
    });
    let _ = std::fs::remove_dir_all(&work);
    let report = result?;
    let out = root.join("target").join("bench");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let path = out.join("server.json");
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    let failed = report["failed"].as_u64().unwrap_or(0);
    if failed > 0 {
        return Err(format!("{failed} failed requests (see the table above and {})", path.display()));
    }
    Ok(())
}

/// Warms the server up, runs the clients, samples memory; the report.
fn load(
    server: &crate::schemathesis::Server,
    source: &str,
    clients: usize,
    duration: Duration,
) -> Result<Value, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start tokio: {e}"))?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(clients)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let base = server.url.clone();
    let source: Arc<str> = source.into();

    // One compile and one run first, outside the measured window: the first run compiles
    // the module into the server's (fresh) cache, which every later run hits.
    eprintln!("== warm-up: one compile and one run of {CORPUS_MODULE}");
    let warm = runtime.block_on(async {
        for (path, body) in [("/api/compile", compile_body(&source)), ("/api/run", run_body(&source, 0))] {
            let r = http.post(format!("{base}{path}")).json(&body).send().await.map_err(|e| e.to_string())?;
            let status = r.status();
            let text = r.text().await.map_err(|e| e.to_string())?;
            if status != 200 {
                return Err(format!("warm-up {path}: {status}: {}", text.chars().take(400).collect::<String>()));
            }
        }
        Ok::<_, String>(())
    });
    warm?;

    let pid = server.pid();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Some(s) = sample(pid, started) {
                    samples.push(s);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            samples
        })
    };
    eprintln!("== {clients} clients for {} s: compile then run, on {base}", duration.as_secs_f64());
    let deadline = started + duration;
    let results: Vec<(Endpoint, Endpoint)> = runtime.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|c| tokio::spawn(client(http.clone(), base.clone(), source.clone(), c as u64, deadline)))
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap_or_default());
        }
        out
    });
    let elapsed = started.elapsed().as_secs_f64();
    let health = runtime
        .block_on(async { http.get(format!("{base}/api/health")).send().await?.json::<Value>().await })
        .unwrap_or(Value::Null);
    stop.store(true, Ordering::Relaxed);
    let mut samples = sampler.join().unwrap_or_default();
    // The server's own high-water mark, read once more after the load.
    if let Some(s) = sample(pid, started) {
        samples.push(s);
    }

    let mut compile = Endpoint::default();
    let mut run = Endpoint::default();
    for (c, r) in results {
        compile.merge(c);
        run.merge(r);
    }
    Ok(report(clients, duration, elapsed, &mut compile, &mut run, &samples, health))
}

fn compile_body(source: &str) -> Value {
    json!({"source": source, "targets": ["cpu"]})
}

fn run_body(source: &str, seed: u64) -> Value {
    json!({"source": source, "target": "cpu", "inputs": {"random": {"seed": seed}}})
}

/// One client: compile, run, compile, ... until the deadline (the request in flight then
/// is finished and counted).
async fn client(
    http: reqwest::Client,
    base: String,
    source: Arc<str>,
    id: u64,
    deadline: Instant,
) -> (Endpoint, Endpoint) {
    let mut compile = Endpoint::default();
    let mut run = Endpoint::default();
    let mut seed = id << 32;
    let mut compiling = true;
    while Instant::now() < deadline {
        let (path, body, stats) = if compiling {
            ("/api/compile", compile_body(&source), &mut compile)
        } else {
            seed += 1;
            ("/api/run", run_body(&source, seed), &mut run)
        };
        let t = Instant::now();
        let answer = async {
            let r = http.post(format!("{base}{path}")).json(&body).send().await?;
            let status = r.status().as_u16();
            let retry = r
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let bytes = r.bytes().await?;
            Ok::<_, reqwest::Error>((status, retry, bytes))
        }
        .await;
        let latency = t.elapsed().as_secs_f64();
        match answer {
            Ok((200, _, bytes)) => {
                let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                if v.is_null() {
                    *stats.failed.entry("200 with a body that is not JSON".into()).or_default() += 1;
                } else if !compiling && v["check"]["passed"] != Value::Bool(true) {
                    *stats.failed.entry("run: numerics check failed".into()).or_default() += 1;
                } else {
                    stats.ok.push(latency);
                }
            }
            Ok((429 | 503, Some(retry), _)) => {
                stats.busy += 1;
                // Told to come back later: wait, then send the same request again.
                let wake = (Instant::now() + Duration::from_secs(retry)).min(deadline);
                tokio::time::sleep_until(wake.into()).await;
                continue;
            }
            Ok((status, _, bytes)) => {
                let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let why = match (v["kind"].as_str(), v["error"].as_str()) {
                    (Some(k), Some(e)) => format!("{status} {k}: {}", e.chars().take(160).collect::<String>()),
                    _ => format!("{status} (no JSON error body)"),
                };
                *stats.failed.entry(why).or_default() += 1;
            }
            Err(e) => *stats.failed.entry(format!("transport: {e}")).or_default() += 1,
        }
        compiling = !compiling;
    }
    (compile, run)
}

/// `/proc/PID/status`'s VmRSS and VmHWM, KiB.
fn proc_status(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// The processes whose parent is `pid` (the server's workers).
fn children(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
            std::fs::read_to_string(format!("/proc/{p}/stat")).ok().is_some_and(|s| {
                s.rfind(')').and_then(|i| s[i + 1..].split_whitespace().nth(1)?.parse::<u32>().ok()) == Some(pid)
            })
        })
        .collect()
}

fn sample(pid: u32, started: Instant) -> Option<Sample> {
    let (server_rss_kib, server_hwm_kib) = proc_status(pid)?;
    let mut s = Sample {
        t: started.elapsed().as_secs_f64(),
        server_rss_kib,
        server_hwm_kib,
        workers_rss_kib: 0,
        largest_worker_hwm_kib: 0,
        workers: 0,
    };
    for c in children(pid) {
        if let Some((rss, hwm)) = proc_status(c) {
            s.workers_rss_kib += rss;
            s.largest_worker_hwm_kib = s.largest_worker_hwm_kib.max(hwm);
            s.workers += 1;
        }
    }
    Some(s)
}

/// The nearest-rank percentile of sorted `v`, seconds.
fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Prints the table and returns the JSON report.
fn report(
    clients: usize,
    duration: Duration,
    elapsed: f64,
    compile: &mut Endpoint,
    run: &mut Endpoint,
    samples: &[Sample],
    health: Value,
) -> Value {
    compile.ok.sort_by(f64::total_cmp);
    run.ok.sort_by(f64::total_cmp);
    let ok = (compile.ok.len() + run.ok.len()) as u64;
    let busy = compile.busy + run.busy;
    let failed = compile.failed() + run.failed();
    let answered = ok + busy + failed;

    let peak = |f: fn(&Sample) -> u64, from: f64, to: f64| {
        samples.iter().filter(|s| s.t >= from && s.t <= to).map(f).max().unwrap_or(0)
    };
    let end = elapsed + 1.0;
    let server_hwm = peak(|s| s.server_hwm_kib, 0.0, end);
    let server_rss = peak(|s| s.server_rss_kib, 0.0, end);
    let total_rss = peak(|s| s.server_rss_kib + s.workers_rss_kib, 0.0, end);
    let worker_hwm = peak(|s| s.largest_worker_hwm_kib, 0.0, end);
    let max_workers = peak(|s| s.workers, 0.0, end);
    // Bounded memory: the server's RSS in the last quarter of the run against the first.
    let quarter = duration.as_secs_f64() / 4.0;
    let first_quarter = peak(|s| s.server_rss_kib, 0.0, quarter);
    let last_quarter = peak(|s| s.server_rss_kib, 3.0 * quarter, end);
    let bounded = last_quarter as f64 <= first_quarter as f64 * 1.10 + 8.0 * 1024.0;

    println!();
    println!(
        "hloscope serve under load: {clients} clients, {:.0} s (ran {elapsed:.1} s), transformer_block, target cpu",
        duration.as_secs_f64()
    );
    println!();
    println!("| endpoint     | ok    | failed | 429/503 | p50 ms  | p99 ms  | ok/s   |");
    println!("|--------------|-------|--------|---------|---------|---------|--------|");
    for (name, e) in [("/api/compile", &*compile), ("/api/run", &*run)] {
        println!(
            "| {name:<12} | {:>5} | {:>6} | {:>7} | {:>7.1} | {:>7.1} | {:>6.1} |",
            e.ok.len(),
            e.failed(),
            e.busy,
            percentile(&e.ok, 0.50) * 1e3,
            percentile(&e.ok, 0.99) * 1e3,
            e.ok.len() as f64 / elapsed
        );
    }
    println!("| all          | {ok:>5} | {failed:>6} | {busy:>7} |         |         | {:>6.1} |", ok as f64 / elapsed);
    println!();
    println!("answered requests/s (ok + 429/503 + failed): {:.1}", answered as f64 / elapsed);
    println!(
        "server RSS: peak {:.1} MiB (VmHWM {:.1} MiB); first quarter {:.1} MiB, last quarter {:.1} MiB: {}",
        mib(server_rss),
        mib(server_hwm),
        mib(first_quarter),
        mib(last_quarter),
        if bounded { "bounded" } else { "GREW" }
    );
    println!(
        "server + workers RSS: peak {:.1} MiB ({max_workers} workers at most); largest worker VmHWM {:.1} MiB",
        mib(total_rss),
        mib(worker_hwm)
    );
    for (name, e) in [("/api/compile", &*compile), ("/api/run", &*run)] {
        for (why, n) in &e.failed {
            println!("failed {name}: {n} x {why}");
        }
    }

    let endpoint = |e: &Endpoint| {
        json!({
            "ok": e.ok.len(),
            "failed": e.failed(),
            "failures": e.failed,
            "busy_retry_after": e.busy,
            "p50_ms": percentile(&e.ok, 0.50) * 1e3,
            "p99_ms": percentile(&e.ok, 0.99) * 1e3,
            "max_ms": e.ok.last().copied().unwrap_or(f64::NAN) * 1e3,
            "ok_per_s": e.ok.len() as f64 / elapsed,
        })
    };
    // About one sample a second for the file.
    let timeline: Vec<Value> = samples
        .iter()
        .step_by(10)
        .map(|s| {
            json!({
                "t_s": (s.t * 10.0).round() / 10.0,
                "server_rss_mib": mib(s.server_rss_kib),
                "workers_rss_mib": mib(s.workers_rss_kib),
                "workers": s.workers,
            })
        })
        .collect();
    json!({
        "module": CORPUS_MODULE,
        "target": "cpu",
        "clients": clients,
        "duration_s": duration.as_secs_f64(),
        "elapsed_s": elapsed,
        "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "ok": ok,
        "failed": failed,
        "busy_retry_after": busy,
        "ok_per_s": ok as f64 / elapsed,
        "answered_per_s": answered as f64 / elapsed,
        "compile": endpoint(compile),
        "run": endpoint(run),
        "memory": {
            "server_peak_rss_mib": mib(server_rss),
            "server_vmhwm_mib": mib(server_hwm),
            "server_rss_first_quarter_mib": mib(first_quarter),
            "server_rss_last_quarter_mib": mib(last_quarter),
            "bounded": bounded,
            "server_plus_workers_peak_rss_mib": mib(total_rss),
            "largest_worker_vmhwm_mib": mib(worker_hwm),
            "max_workers": max_workers,
            "timeline": timeline,
        },
        "health_after": health,
    })
}
