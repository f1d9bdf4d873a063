//! Hostile sizes through the built `hloscope` binary: `run` on the interpreter, `run
//! --target cpu` and `explain` each end with exit status 2 and one `error:` line naming
//! the file, line and column and the reason, never a signal, an abort on allocation or
//! an "internal error" (`hloscope_core::limits` is what refuses them).
//!
//! Each case is one that crashed the CLI when found (a `parameter(N)` number past the
//! instruction count, an `iota` of 1e11 elements, `f32[65536,65536,65536,65536]`, a `pad`
//! to 2^63 elements, a `broadcast` to 9e18 elements), in XLA HLO text and in StableHLO;
//! and some the verifier refuses: a reduce-window over 1e18 window positions, pad and
//! slice attributes far past any dimension, and arrays that together exceed the 64 GiB
//! of a module.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LIMIT: &str = "more than the limit of 536870912";

/// One hostile text: its file name, contents, and the `line:col: reason` its error gives.
struct Case {
    file: &'static str,
    text: String,
    at: &'static str,
    reason: String,
}

fn hlo(body: &str) -> String {
    format!("HloModule m\n\nENTRY main {{\n{body}}}\n")
}

fn cases() -> Vec<Case> {
    let big4 = "tensor<65536x65536x65536x65536xf32>";
    let pad = "tensor<9223372036854775807xf32>";
    let bcast = "tensor<3000000000x3000000000xf32>";
    let iota = "tensor<100000000000xi32>";
    vec![
        Case {
            file: "parameter.hlo",
            text: hlo("  p = f32[2]{0} parameter(4000000000)\n  ROOT n = f32[2]{0} negate(p)\n"),
            at: "4:17",
            reason: "parameter number 4000000000 is out of range: computation `main` has 2 instructions, so its \
                     parameters are numbered below that"
                .into(),
        },
        Case {
            file: "iota.hlo",
            text: hlo("  ROOT i = s32[100000000000]{0} iota(), iota_dimension=0\n"),
            at: "4:12",
            reason: format!("s32[100000000000] has 100000000000 elements, {LIMIT}"),
        },
        Case {
            file: "wrap.hlo",
            text: hlo("  p = f32[65536,65536,65536,65536]{3,2,1,0} parameter(0)\n  ROOT n = \
                 f32[65536,65536,65536,65536]{3,2,1,0} negate(p)\n"),
            at: "4:7",
            reason: format!("f32[65536,65536,65536,65536] has 1.8e19 elements, {LIMIT}"),
        },
        Case {
            file: "pad.hlo",
            text: hlo(
                "  p = f32[2]{0} parameter(0)\n  z = f32[] constant(0)\n  ROOT q = f32[9223372036854775807]{0} pad(p, \
                 z), padding=0_9223372036854775805\n",
            ),
            at: "6:12",
            reason: format!("f32[9223372036854775807] has 9223372036854775807 elements, {LIMIT}"),
        },
        Case {
            file: "broadcast.hlo",
            text: hlo(
                "  z = f32[] constant(1)\n  ROOT b = f32[3000000000,3000000000]{1,0} broadcast(z), dimensions={}\n",
            ),
            at: "5:12",
            reason: format!("f32[3000000000,3000000000] has 9000000000000000000 elements, {LIMIT}"),
        },
        Case {
            file: "iota.mlir",
            text: format!(
                "func.func @main() -> {iota} {{\n  %0 = stablehlo.iota dim = 0 : {iota}\n  return %0 : {iota}\n}}\n"
            ),
            at: "1:22",
            reason: format!("s32[100000000000] has 100000000000 elements, {LIMIT}"),
        },
        Case {
            file: "wrap.mlir",
            text: format!(
                "func.func @main(%a: {big4}) -> {big4} {{\n  %0 = stablehlo.negate %a : {big4}\n  return %0 : \
                 {big4}\n}}\n"
            ),
            at: "1:21",
            reason: format!("f32[65536,65536,65536,65536] has 1.8e19 elements, {LIMIT}"),
        },
        Case {
            file: "pad.mlir",
            text: format!(
                "func.func @main(%a: tensor<2xf32>) -> {pad} {{\n  %z = stablehlo.constant dense<0.0> : \
                 tensor<f32>\n  %0 = stablehlo.pad %a, %z, low = [0], high = [9223372036854775805], interior = [0] \
                 : (tensor<2xf32>, tensor<f32>) -> {pad}\n  return %0 : {pad}\n}}\n"
            ),
            // The result type in the signature comes first.
            at: "1:39",
            reason: format!("f32[9223372036854775807] has 9223372036854775807 elements, {LIMIT}"),
        },
        Case {
            file: "broadcast.mlir",
            text: format!(
                "func.func @main(%a: tensor<f32>) -> tensor<f32> {{\n  %0 = stablehlo.broadcast_in_dim %a, dims = [] \
                 : (tensor<f32>) -> {bcast}\n  return %0 : {bcast}\n}}\n"
            ),
            at: "2:68",
            reason: format!("f32[3000000000,3000000000] has 9000000000000000000 elements, {LIMIT}"),
        },
        Case {
            // A one-element result summed over a window of 1e18 positions (padded to
            // fit a 4x4 input): both targets looped for good.
            file: "window.hlo",
            text: "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, \
                   b)\n}\n\nENTRY main {\n  x = f32[4,4]{1,0} parameter(0)\n  z = f32[] constant(0)\n  ROOT r = \
                   f32[1,1]{1,0} reduce-window(x, z), window={size=1000000000x1000000000 \
                   pad=0_999999996x0_999999996}, to_apply=add\n}\n"
                .into(),
            at: "12:8",
            reason: "invalid module: in main, %r: the window [1000000000, 1000000000] has 1000000000000000000 \
                     positions, more than the limit of 536870912"
                .into(),
        },
        Case {
            // Attributes past any dimension, the result small: `low + i * (interior + 1)`
            // overflowed in the interpreter and the kernel plan.
            file: "pad_interior.hlo",
            text: hlo("  x = f32[2]{0} parameter(0)\n  z = f32[] constant(0)\n  ROOT p = f32[2]{0} pad(x, z), \
                       padding=-9223372036854775807_0_9223372036854775807\n"),
            at: "6:8",
            reason: "invalid module: in main, %p: pad padding -9223372036854775807 is beyond the limit of ±536870912"
                .into(),
        },
        Case {
            file: "slice_stride.mlir",
            text: "func.func @main(%a: tensor<4xf32>) -> tensor<1xf32> {\n  %0 = stablehlo.slice %a \
                   [0:4:9223372036854775807] : (tensor<4xf32>) -> tensor<1xf32>\n  return %0 : tensor<1xf32>\n}\n"
                .into(),
            at: "2:8",
            reason: "invalid module: in main, %slice.1: slice stride 9223372036854775807 is beyond the limit of \
                     ±536870912"
                .into(),
        },
        Case {
            // Every array within the limit, all of them together over the 64 GiB of a
            // module: the verifier's error, at the instruction that went over.
            file: "total.hlo",
            text: hlo(&{
                let mut body = String::from("  p = f32[536870912]{0} parameter(0)\n");
                for i in 1..40 {
                    let root = if i == 39 { "ROOT " } else { "" };
                    body += &format!("  {root}n{i} = f32[536870912]{{0}} negate(p)\n");
                }
                body
            }),
            at: "36:3",
            reason: "invalid module: in main, %n32: the results of the module's instructions up to this one total \
                     70866960384 bytes (66.0 GiB), more than the limit of 68719476736 bytes (64.0 GiB)"
                .into(),
        },
    ]
}

/// A fresh folder for this test's files.
fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-cli");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn hloscope(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hloscope"))
        .args(args)
        // Never the person's own compilation cache.
        .env("HLOSCOPE_CACHE_DIR", cache)
        .output()
        .expect("the binary runs")
}

/// Exit status 2 (not a signal: `code()` is `None` for one), and exactly one line on
/// standard error: `error: FILE:LINE:COL: REASON`.
fn assert_refused(o: &Output, what: &str, path: &Path, case: &Case) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{what}: expected exit status 2, got {:?}; stderr:\n{err}", o.status);
    assert!(!err.contains("internal error") && !err.contains("panicked"), "{what}: a bug:\n{err}");
    let want = format!("error: {}:{}: {}\n", path.display(), case.at, case.reason);
    assert_eq!(err, want, "{what}");
    assert!(o.stdout.is_empty(), "{what}: printed {}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn hostile_sizes_are_one_line_errors_on_every_command() {
    let dir = scratch();
    let cache = dir.join("cache");
    for case in cases() {
        let path = dir.join(case.file);
        std::fs::write(&path, &case.text).unwrap();
        let p = path.to_str().unwrap();
        for args in [
            &["run", "--random-inputs", p][..],
            &["run", "--random-inputs", "--target", "cpu", p],
            &["run", "--random-inputs", "--target", "cpu", "--no-cache", p],
            &["explain", p],
            &["compile", p],
        ] {
            let what = format!("hloscope {} ({})", args.join(" "), case.file);
            assert_refused(&hloscope(args, &cache), &what, &path, &case);
        }
    }
}
