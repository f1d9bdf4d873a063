//! Bounded mutation fuzzing of both parsers, the verifier, and every stage after them.
//!
//! Seeds are real modules (conformance files and the HLO/MLIR samples); each round
//! mutates one (byte flips, deletions, duplicated or swapped slices, truncation, token
//! splices) and feeds it to `parse_module`, the StableHLO and the HLO parser. A mutant
//! that parses, verifies and is small ([`SMALL`], checked with `hloscope_core::limits`)
//! then goes through the default pipeline, the kernel plan, the interpreter (before and
//! after the pipeline, on random inputs, with a loop budget) and, with the `cpu`
//! feature, the CPU target's pipeline, compiler and runtime (modules without `while`:
//! compiled loops have no budget). Every stage may return an error; none may panic.
//! Any panic, or any stage slower than its watchdog, fails the test and writes the
//! input to `target/fuzz-failures/` for reproduction. Runs for
//! `$HLOSCOPE_FUZZ_SECONDS` (default 15; no round starts after it) so CI time stays
//! bounded; the seed is `$HLOSCOPE_FUZZ_SEED` or the clock.

use crate::corpus;

use hloscope_core::ir::Module;
use hloscope_core::limits::{check_module, Limits};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: deterministic for a given seed, good enough to pick mutations.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "<",
    ">",
    "[",
    "]",
    ",",
    ":",
    "=",
    "%",
    "#",
    "\"",
    "0x",
    "-1",
    "999999999999999999999",
    "tensor<",
    "x",
    "f32",
    "i1",
    "dense<",
    "stablehlo.add",
    "^bb0",
    "loc(",
    "ROOT",
    "ENTRY",
    "f32[",
    "{1,0}",
    "func.func",
    "return",
    "%0",
    "%arg0",
    "#0",
    "\n",
    "//",
    "nan",
    "inf",
    "e+99",
    ".",
    "0:2",
    "_",
];

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut s = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = s.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                s[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                let n = rng.below(len - i).min(64);
                s.drain(i..i + n);
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let n = rng.below(len - i).min(128);
                let piece: Vec<u8> = s[i..i + n].to_vec();
                let at = rng.below(len);
                s.splice(at..at, piece);
            }
            3 => s.truncate(rng.below(len + 1)),
            4 => {
                let tok = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let at = rng.below(len + 1);
                s.splice(at..at, tok.iter().copied());
            }
            5 if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                s.swap(a, b);
            }
            _ => {
                // Replace a digit run with an extreme number.
                if let Some(i) = s.iter().position(|c| c.is_ascii_digit()) {
                    let extreme = ["0", "-1", "4294967296", "18446744073709551616", "99999999"][rng.below(5)];
                    s.splice(i..i + 1, extreme.bytes());
                }
            }
        }
    }
    s
}

fn seeds() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs: Vec<PathBuf> = vec![root.join("tests/hlo_samples"), root.join("tests/mlir_samples")];
    dirs.push(corpus::corpus_dir().join("interpret"));
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|e| e == "mlir" || e == "hlo") {
                if let Ok(bytes) = std::fs::read(&p) {
                    if bytes.len() < 20_000 {
                        out.push(bytes);
                    }
                }
            }
        }
    }
    // A minimal seed of each format so the test works even without the corpus.
    out.push(b"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n".to_vec());
    out.push(
        b"HloModule m\n\nENTRY main {\n  p = f32[2]{0} parameter(0)\n  ROOT a = f32[2]{0} add(p, p)\n}\n".to_vec(),
    );
    out
}

/// Parses with every entry point and verifies what parsed; returns the module
/// `parse_module` made when it verified.
fn parse_all(text: &str) -> Option<Module> {
    let mut verified = None;
    for (i, m) in [
        hloscope_core::parse::parse_module(text),
        hloscope_core::parse::mlir::parse(text),
        hloscope_core::parse::hlo::parse(text),
    ]
    .into_iter()
    .enumerate()
    {
        if let Ok(m) = m {
            if hloscope_core::verify::verify(&m).is_ok() && i == 0 {
                verified = Some(m);
            }
        }
    }
    verified
}

/// The modules the stages after the verifier see: 4096 elements in all (bytes of f64s),
/// so that interpreting and compiling one stays a matter of milliseconds.
const SMALL: Limits = Limits { max_elements: 4096, max_total_bytes: 4096 * 8, max_instructions: 2000, max_rank: 8 };

/// Interpreted `while` iterations per run (the interpreter's budget; it errs past it).
const LOOP_BUDGET: u64 = 1000;

/// The stages after the verifier, in order; `deep_stages` sets the one running (so that
/// a hang names it) and returns the stages that succeeded.
const STAGES: [&str; 6] =
    ["default pipeline", "kernel plan", "interpreter", "interpreter after the pipeline", "cpu compile", "cpu run"];

/// Runs every stage on `m` (verified and within [`SMALL`]); each may fail, and a later
/// one runs even so where it can. Returns which stages returned `Ok`.
fn deep_stages(m: &Module, seed: u64, stage: &AtomicUsize) -> [bool; 6] {
    use hloscope_core::interp::Interpreter;
    use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig};
    let mut ok = [false; 6];
    let at = |i: usize| stage.store(i, Ordering::SeqCst);
    at(0);
    let mut optimized = m.clone();
    ok[0] = run_pipeline(&mut optimized, &PipelineConfig::default()).is_ok();
    at(1);
    ok[1] = hloscope_core::kernel::plan(if ok[0] { &optimized } else { m }).is_ok();
    // Within the default limits (it is within SMALL), so there are arguments.
    let args = hloscope_core::interp::try_random_inputs(m, seed).expect("a small module has random inputs");
    let interpret = |module: &Module| {
        let mut interp = Interpreter::new(module);
        interp.max_loop_iterations = LOOP_BUDGET;
        interp.run(&args).is_ok()
    };
    at(2);
    ok[2] = interpret(m);
    at(3);
    ok[3] = ok[0] && interpret(&optimized);
    #[cfg(feature = "cpu")]
    {
        use hloscope_core::ir::Op;
        use hloscope_core::targets::cpu;
        let has_while = m.comps.values().any(|c| c.order.iter().any(|&i| matches!(c.inst(i).op, Op::While { .. })));
        if !has_while {
            at(4);
            let exe = cpu::optimize(m).and_then(|o| cpu::compile(&o));
            ok[4] = exe.is_ok();
            if let Ok(exe) = exe {
                at(5);
                ok[5] = exe.run(&args).is_ok();
            }
        }
    }
    ok
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

/// Runs `f` on a thread of its own (with the CLI's stack, since the interpreter recurses
/// into sub-computations): its result, or why not (the panic's message, or a hang past
/// `limit`).
fn watchdog<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(panic_message));
        })
        .expect("a thread starts");
    match rx.recv_timeout(limit) {
        Ok(r) => r,
        Err(_) => Err(format!("hang: ran for more than {} s", limit.as_secs())),
    }
}

/// Fails the test for `input`, saving it with why.
fn fail(input: &[u8], what: &str, why: &str) -> ! {
    let _ = std::panic::take_hook();
    let path = save_failure(input, &format!("{what}: {why}"));
    panic!("{what} failed ({why}); input saved to {}", path.display());
}

fn save_failure(input: &[u8], why: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("failure-{}.txt", input.len()));
    let _ = std::fs::write(&path, input);
    let _ = std::fs::write(path.with_extension("why"), why);
    path
}

/// The built-in seeds go through every stage without an error: the stages really run
/// (a fuzzer whose later stages all failed on every input would find nothing).
#[test]
fn every_stage_runs_on_the_plain_seeds() {
    let seeds = seeds();
    for seed in &seeds[seeds.len() - 2..] {
        let m = parse_all(std::str::from_utf8(seed).unwrap()).expect("the seed parses and verifies");
        check_module(&m, &SMALL).unwrap();
        let ok = deep_stages(&m, 1, &AtomicUsize::new(0));
        let want = if cfg!(feature = "cpu") { [true; 6] } else { [true, true, true, true, false, false] };
        assert_eq!(ok, want, "stages {STAGES:?}");
    }
}

#[test]
fn parsers_and_later_stages_never_panic_or_hang() {
    let seconds: u64 = std::env::var("HLOSCOPE_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
    let seed: u64 = std::env::var("HLOSCOPE_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    }) | 1;
    println!("fuzz seed {seed} (HLOSCOPE_FUZZ_SEED={seed} repeats this run)");
    let seeds = seeds();
    let mut rng = Rng(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    // Silence the default panic message per caught panic; the test reports its own.
    std::panic::set_hook(Box::new(|_| {}));
    let mut rounds = 0u64;
    // Mutants that went past the verifier, and per stage how many of them it accepted.
    let (mut deep, mut accepted) = (0u64, [0u64; 6]);
    while Instant::now() < deadline {
        let base = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, base);
        let text = String::from_utf8_lossy(&input).into_owned();
        // A parse that takes more than 10 s counts as a hang.
        let parsed = watchdog(Duration::from_secs(10), move || parse_all(&text))
            .unwrap_or_else(|why| fail(&input, "parsing or verifying", &why));
        rounds += 1;
        let Some(m) = parsed.filter(|m| check_module(m, &SMALL).is_ok()) else { continue };
        if Instant::now() >= deadline {
            break;
        }
        // Compiling and interpreting small modules takes milliseconds; a minute (on a
        // loaded machine) is a hang.
        let stage = Arc::new(AtomicUsize::new(0));
        let running = Arc::clone(&stage);
        match watchdog(Duration::from_secs(60), move || deep_stages(&m, rounds, &running)) {
            Ok(ok) => {
                deep += 1;
                for (n, ok) in accepted.iter_mut().zip(ok) {
                    *n += ok as u64;
                }
            }
            Err(why) => fail(&input, STAGES[stage.load(Ordering::SeqCst)], &why),
        }
    }
    let _ = std::panic::take_hook();
    let per_stage: Vec<String> = STAGES.iter().zip(accepted).map(|(s, n)| format!("{s} {n}")).collect();
    println!(
        "{rounds} fuzz rounds, {deep} past the verifier (accepted by: {}), no panic, no hang",
        per_stage.join(", ")
    );
    assert!(rounds > 0);
}
