//! End-to-end tests of `hloscope run`, driving the built binary.
//!
//! The JAX corpus (`backend/tests/corpus/<program>/`, made by
//! `tools/jax_corpus/export.py`) holds real JAX programs, their inputs and XLA's outputs.
//! Every program is run three times, from `module.mlir`, `module_debug.mlir` and
//! `xla.hlo`, and each result must match XLA's within the tolerance its `meta.json`
//! gives (bit-exact for integers and bool). The error-path tests check that bad input
//! gives exit status 2 and one clear message, never a panic.

use hloscope_core::ir::{ElementType, Literal, Shape};
use hloscope_core::npy::{self, NpyArray};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn hloscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hloscope"))
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("corpus")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A fresh, empty folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts the run failed the documented way: status 2, one `error:` line that
/// contains every piece of `needles`, and no panic.
fn assert_fails_with(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "expected exit status 2; stderr:\n{err}");
    assert!(err.starts_with("error: "), "stderr should start with `error: `:\n{err}");
    assert!(!err.contains("panicked") && !err.contains("internal error"), "a panic:\n{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks `{n}`:\n{err}");
    }
}

fn read_npy(path: &Path) -> NpyArray {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    npy::read(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn write_npy(path: &Path, l: &Literal) {
    std::fs::write(path, npy::write(&NpyArray::from_literal(l))).unwrap();
}

// ---------------------------------------------------------------------------------
// The corpus.

/// One output's tolerance, from `meta.json`.
struct Tolerance {
    exact: bool,
    rtol: f64,
    atol: f64,
}

/// Compares one output with XLA's; returns why they differ.
fn compare(got: &NpyArray, want: &NpyArray, tol: &Tolerance) -> Result<(), String> {
    if got.elem != want.elem || got.dims != want.dims {
        return Err(format!(
            "type differs: got {} {}, want {} {}",
            got.elem,
            npy::dims_text(&got.dims),
            want.elem,
            npy::dims_text(&want.dims)
        ));
    }
    if tol.exact || !want.elem.is_float() {
        if got.data == want.data {
            return Ok(());
        }
        let (g, w) = (got.to_literal(got.elem).unwrap(), want.to_literal(want.elem).unwrap());
        let i = (0..w.num_elements()).find(|&i| g.bits(i) != w.bits(i)).unwrap();
        return Err(format!("element {i}: got {:?}, want {:?} (exact match required)", g.get(i), w.get(i)));
    }
    let g = got.to_literal(got.elem).unwrap().to_f64_vec();
    let w = want.to_literal(want.elem).unwrap().to_f64_vec();
    let mut worst: Option<(usize, f64)> = None;
    let mut bad = 0;
    for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol.atol + tol.rtol * b.abs();
        if !ok {
            bad += 1;
            let excess = (a - b).abs() / (tol.atol + tol.rtol * b.abs());
            if worst.is_none_or(|(_, e)| excess > e || e.is_nan()) {
                worst = Some((i, excess));
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((i, _)) => Err(format!(
            "{bad} of {} elements off; worst element {i}: got {}, want {} (rtol {}, atol {})",
            w.len(),
            g[i],
            w[i],
            tol.rtol,
            tol.atol
        )),
    }
}

/// Runs one corpus program from one of its texts and compares every output.
fn check_corpus(program: &str, text_file: &str) {
    let dir = corpus_dir().join(program);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    let out = scratch(&format!("corpus-{program}-{text_file}"));
    let mut cmd = hloscope();
    cmd.arg("run").arg(dir.join(text_file)).arg("--out-dir").arg(&out);
    for input in meta["inputs"].as_array().unwrap() {
        cmd.arg("--input").arg(dir.join(input["file"].as_str().unwrap()));
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{program}/{text_file}: hloscope run failed:\n{}", stderr(&o));

    let outputs = meta["outputs"].as_array().unwrap();
    let produced = std::fs::read_dir(&out).unwrap().count();
    assert_eq!(produced, outputs.len(), "{program}/{text_file}: number of outputs");
    let mut failures = Vec::new();
    for entry in outputs {
        let file = entry["file"].as_str().unwrap();
        let tol = Tolerance {
            exact: entry["exact"].as_bool().unwrap(),
            rtol: entry["rtol"].as_f64().unwrap_or(0.0),
            atol: entry["atol"].as_f64().unwrap_or(0.0),
        };
        if let Err(why) = compare(&read_npy(&out.join(file)), &read_npy(&dir.join(file)), &tol) {
            failures.push(format!("  {file} ({}): {why}", entry["dtype"].as_str().unwrap()));
        }
    }
    assert!(failures.is_empty(), "{program}/{text_file} differs from XLA:\n{}", failures.join("\n"));
}

/// One test per corpus program and text format, so a failure names both.
macro_rules! corpus_tests {
    ($($name:ident),* $(,)?) => {
        const CORPUS: &[&str] = &[$(stringify!($name)),*];
        mod corpus_mlir {
            $( #[test] fn $name() { super::check_corpus(stringify!($name), "module.mlir"); } )*
        }
        mod corpus_mlir_debug {
            $( #[test] fn $name() { super::check_corpus(stringify!($name), "module_debug.mlir"); } )*
        }
        mod corpus_xla_hlo {
            $( #[test] fn $name() { super::check_corpus(stringify!($name), "xla.hlo"); } )*
        }
    };
}

corpus_tests!(
    adam_update,
    batch_norm,
    bf16_mlp,
    causal_attention,
    cond_switch,
    conv_relu_maxpool,
    converts,
    cross_entropy,
    cumulative,
    elementwise_chain,
    embedding_gather,
    f16_ops,
    fori_loop,
    int_bitops,
    layernorm,
    matmul_chain,
    mlp_gelu_erf,
    mlp_gelu_tanh,
    mlp_grad,
    random_normal,
    reductions,
    rmsnorm,
    scatter_add,
    softmax,
    sort_argsort,
    top_k,
    train_step,
    transformer_block,
    while_loop,
);

#[test]
fn every_corpus_folder_has_a_test() {
    let mut on_disk: Vec<String> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CORPUS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
    assert!(listed.len() >= 20);
}

#[test]
fn tolerance_check_catches_differences() {
    let f = |v: &[f64]| NpyArray::from_literal(&Literal::from_f64s(Shape::new(ElementType::F32, vec![2]), v));
    let tol = Tolerance { exact: false, rtol: 1e-5, atol: 1e-6 };
    assert!(compare(&f(&[1.0, f64::NAN]), &f(&[1.000001, f64::NAN]), &tol).is_ok());
    let e = compare(&f(&[1.0, 2.0]), &f(&[1.0, 2.001]), &tol).unwrap_err();
    assert!(e.starts_with("1 of 2 elements off; worst element 1"), "{e}");
    let i = |v: &[i64]| NpyArray::from_literal(&Literal::from_i64s(Shape::new(ElementType::S32, vec![2]), v));
    let exact = Tolerance { exact: true, rtol: 0.0, atol: 0.0 };
    assert!(compare(&i(&[3, -4]), &i(&[3, -4]), &exact).is_ok());
    assert!(compare(&i(&[3, -4]), &i(&[3, -5]), &exact).unwrap_err().contains("element 1"));
}

// ---------------------------------------------------------------------------------
// Hand-checked programs and the bundled example.

const MUL_ADD_MLIR: &str = "\
func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<3xf32>
  %1 = stablehlo.add %0, %a : tensor<3xf32>
  return %1 : tensor<3xf32>
}
";

const MUL_ADD_HLO: &str = "\
HloModule mul_add

ENTRY main {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  m = f32[3] multiply(a, b)
  ROOT r = f32[3] add(m, a)
}
";

/// Writes a = [1, 2, 3] and b = [4, 5, 6] as .npy files; a*b + a = [5, 12, 21].
fn mul_add_inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let f32s = |v: &[f64]| Literal::from_f64s(Shape::new(ElementType::F32, vec![3]), v);
    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    write_npy(&a, &f32s(&[1.0, 2.0, 3.0]));
    write_npy(&b, &f32s(&[4.0, 5.0, 6.0]));
    (a, b)
}

fn run_with_stdin(args: &[&std::ffi::OsStr], input: &str) -> Output {
    use std::io::Write;
    let mut child =
        hloscope().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn runs_stablehlo_from_stdin_and_prints_a_summary() {
    let dir = scratch("stdin-mlir");
    let (a, b) = mul_add_inputs(&dir);
    let o = run_with_stdin(
        &["run".as_ref(), "-".as_ref(), "--input".as_ref(), a.as_os_str(), "--input".as_ref(), b.as_os_str()],
        MUL_ADD_MLIR,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "out0: f32[3]  min 5  max 21  mean 12.6667\n  [5, 12, 21]\n");
}

#[test]
fn runs_hlo_from_stdin_into_an_out_dir() {
    let dir = scratch("stdin-hlo");
    let (a, b) = mul_add_inputs(&dir);
    let out = dir.join("out");
    let o = run_with_stdin(
        &[
            "run".as_ref(),
            "-".as_ref(),
            "--input".as_ref(),
            a.as_os_str(),
            "--input".as_ref(),
            b.as_os_str(),
            "--out-dir".as_ref(),
            out.as_os_str(),
        ],
        MUL_ADD_HLO,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_npy(&out.join("out0.npy"));
    assert_eq!(r.elem, ElementType::F32);
    assert_eq!(r.to_literal(ElementType::F32).unwrap().to_f64_vec(), vec![5.0, 12.0, 21.0]);
}

#[test]
fn bundled_example_runs_on_random_inputs() {
    let example = repo_root().join("examples").join("mlp.mlir");
    let o = hloscope().arg("run").arg(&example).arg("--random-inputs").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("out0: f32[4,3]  min "), "{}", stdout(&o));

    // The result is a softmax: each of the 4 rows is a probability distribution.
    let dir = scratch("example");
    let run = |seed: &str, out: &Path| {
        let o = hloscope()
            .args(["run".as_ref(), example.as_os_str(), "--random-inputs".as_ref(), "--seed".as_ref(), seed.as_ref()])
            .arg("--out-dir")
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read(out.join("out0.npy")).unwrap()
    };
    let first = run("7", &dir.join("a"));
    let p = npy::read(&first).unwrap().to_literal(ElementType::F32).unwrap().to_f64_vec();
    for row in p.chunks(3) {
        assert!(row.iter().all(|&v| (0.0..=1.0).contains(&v)), "{row:?}");
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-6, "{row:?}");
    }
    assert_eq!(run("7", &dir.join("b")), first, "the same seed gives the same inputs");
    assert_ne!(run("8", &dir.join("c")), first, "another seed gives other inputs");
}

#[test]
fn help_documents_the_bf16_widening() {
    let o = hloscope().args(["run", "--help"]).output().unwrap();
    assert!(o.status.success());
    let text = stdout(&o).replace('\n', " ");
    assert!(text.contains("bf16 results are widened exactly to float32"), "{text}");
    assert!(text.contains("--random-inputs") && text.contains("--seed") && text.contains("--target"));
}

// ---------------------------------------------------------------------------------
// Errors: exit status 2 and a message that says what and where. Input checks do not
// depend on the text format, so these use XLA's HLO of corpus programs.

#[test]
fn malformed_stablehlo_reports_line_and_column() {
    let dir = scratch("malformed");
    let path = dir.join("bad.mlir");
    std::fs::write(
        &path,
        "func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = stablehlo.add %a, %a : tensor<3xf32>\n  %1 = stablehlo.add %0, %nope : tensor<3xf32>\n  return %1 : tensor<3xf32>\n}\n",
    )
    .unwrap();
    let o = hloscope().arg("run").arg(&path).arg("--random-inputs").output().unwrap();
    assert_fails_with(&o, &[&format!("{}:3:", path.display())]);
}

#[test]
fn malformed_hlo_reports_line_and_column() {
    let o = run_with_stdin(
        &["run".as_ref(), "-".as_ref(), "--random-inputs".as_ref()],
        "HloModule m\n\nENTRY e {\n  ROOT x = f32[2] frobnicate()\n}\n",
    );
    assert_fails_with(&o, &["<stdin>:4:19:", "frobnicate"]);
}

#[test]
fn wrong_number_of_inputs() {
    let dir = corpus_dir().join("softmax");
    let o = hloscope()
        .arg("run")
        .arg(dir.join("xla.hlo"))
        .arg("--input")
        .arg(dir.join("in0.npy"))
        .arg("--input")
        .arg(dir.join("in0.npy"))
        .output()
        .unwrap();
    assert_fails_with(&o, &["the module takes 1 parameter, but 2 --input files were given", "parameter 0"]);

    let o = hloscope().arg("run").arg(dir.join("xla.hlo")).output().unwrap();
    assert_fails_with(&o, &["the module takes 1 parameter, but 0 --input files were given"]);
}

#[test]
fn wrong_input_shape_names_the_parameter() {
    // layernorm takes x: f32[4,16], gamma: f32[16], beta: f32[16]; give gamma first.
    let dir = corpus_dir().join("layernorm");
    let o = hloscope()
        .arg("run")
        .arg(dir.join("xla.hlo"))
        .args(["--input".as_ref(), dir.join("in1.npy").as_os_str()])
        .args(["--input".as_ref(), dir.join("in1.npy").as_os_str()])
        .args(["--input".as_ref(), dir.join("in2.npy").as_os_str()])
        .output()
        .unwrap();
    assert_fails_with(&o, &["in1.npy", "parameter 0", "expects shape (4, 16), but the file holds shape (16,)"]);
}

#[test]
fn wrong_input_dtype_names_the_parameter() {
    let dir = scratch("dtype");
    let f64s = dir.join("x.npy");
    write_npy(&f64s, &Literal::zeros(Shape::new(ElementType::F64, vec![4, 10])));
    let module = corpus_dir().join("softmax").join("xla.hlo");
    let o = hloscope().arg("run").arg(&module).arg("--input").arg(&f64s).output().unwrap();
    assert_fails_with(&o, &["x.npy", "parameter 0", "expects dtype float32 (`<f4`), but the file holds float64"]);

    // Fortran order is refused, not silently transposed.
    let mut bytes = std::fs::read(&f64s).unwrap();
    let pos = bytes.windows(5).position(|w| w == b"False").unwrap();
    bytes[pos..pos + 5].copy_from_slice(b"True ");
    std::fs::write(&f64s, bytes).unwrap();
    let o = hloscope().arg("run").arg(&module).arg("--input").arg(&f64s).output().unwrap();
    assert_fails_with(&o, &["x.npy", "Fortran-order arrays are not supported"]);
}

#[test]
fn missing_files() {
    let dir = scratch("missing");
    let o = hloscope().arg("run").arg(dir.join("nope.mlir")).arg("--random-inputs").output().unwrap();
    assert_fails_with(&o, &["cannot read module", "nope.mlir"]);

    let module = corpus_dir().join("softmax").join("xla.hlo");
    let o = hloscope().arg("run").arg(&module).arg("--input").arg(dir.join("gone.npy")).output().unwrap();
    assert_fails_with(&o, &["cannot read input", "gone.npy"]);
}

#[test]
fn bad_command_lines_exit_with_status_2() {
    let module = corpus_dir().join("softmax").join("xla.hlo");
    let o = hloscope().arg("run").arg(&module).args(["--random-inputs", "--target", "tpu"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid value 'tpu'"), "{}", stderr(&o));
    let o = hloscope().arg("run").arg(&module).args(["--seed", "3"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "--seed needs --random-inputs");
}

#[test]
fn a_module_without_results_is_not_an_error() {
    let hlo = "HloModule empty\n\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT t = () tuple()\n}\n";
    let o = run_with_stdin(&["run".as_ref(), "-".as_ref(), "--random-inputs".as_ref()], hlo);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "the module returned no arrays\n");
}
