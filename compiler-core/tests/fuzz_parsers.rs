//! Bounded mutation fuzzing of both parsers (and the verifier behind them).
//!
//! Seeds are real modules (conformance files and the HLO/MLIR samples); each round
//! mutates one (byte flips, deletions, duplicated or swapped slices, truncation, token
//! splices) and feeds it to `parse_module`, the StableHLO and the HLO parser. Any panic
//! or any parse slower than the watchdog fails the test and writes the input to
//! `target/fuzz-failures/` for reproduction. Runs for `$HLOSCOPE_FUZZ_SECONDS` (default
//! 15) so CI time stays bounded; the seed is `$HLOSCOPE_FUZZ_SEED` or the clock.

#[path = "common/corpus.rs"]
mod corpus;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
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

/// Parses with every entry point; returns whether any of them panicked.
fn parse_all(text: &str) -> Result<(), String> {
    std::panic::catch_unwind(|| {
        for m in [
            hloscope_core::parse::parse_module(text),
            hloscope_core::parse::mlir::parse(text),
            hloscope_core::parse::hlo::parse(text),
        ]
        .into_iter()
        .flatten()
        {
            let _ = hloscope_core::verify::verify(&m);
        }
    })
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())
    })
}

fn save_failure(input: &[u8], why: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("failure-{}.txt", input.len()));
    let _ = std::fs::write(&path, input);
    let _ = std::fs::write(path.with_extension("why"), why);
    path
}

#[test]
fn parsers_never_panic_or_hang() {
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
    while Instant::now() < deadline {
        let base = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, base);
        let text = String::from_utf8_lossy(&input).into_owned();
        // Watchdog: a parse that takes more than 10 s counts as a hang.
        let (tx, rx) = mpsc::channel();
        let worker_text = text.clone();
        std::thread::spawn(move || {
            let _ = tx.send(parse_all(&worker_text));
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => {}
            Ok(Err(msg)) => {
                let _ = std::panic::take_hook();
                let path = save_failure(&input, &msg);
                panic!("a parser panicked ({msg}); input saved to {}", path.display());
            }
            Err(_) => {
                let _ = std::panic::take_hook();
                let path = save_failure(&input, "hang");
                panic!("a parser ran for more than 10 s; input saved to {}", path.display());
            }
        }
        rounds += 1;
    }
    let _ = std::panic::take_hook();
    println!("{rounds} fuzz rounds, no panic, no hang");
    assert!(rounds > 0);
}
