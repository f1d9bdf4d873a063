//! Which conformance programs a target's test runs: the corpus index's testdata rows
//! expected to pass, and the ops the compiled targets take.

use std::collections::HashSet;
use std::path::Path;

/// Ops whose programs are selected.
pub const COMPILED_OPS: &[&str] = &[
    "constant",
    "return",
    "compare",
    "add",
    "broadcast_in_dim",
    "select",
    "multiply",
    "maximum",
    "minimum",
    "convert",
    "slice",
    "and",
    "or",
    "reshape",
    "subtract",
    "iota",
    "divide",
    "negate",
    "pad",
    "concatenate",
    "log",
    "abs",
    "exponential",
    "bitcast_convert",
    "xor",
    "shift_right_logical",
    "shift_left",
    "shift_right_arithmetic",
    "transpose",
    "remainder",
    "sqrt",
    "reverse",
    "clamp",
    "sign",
    "power",
    "not",
    "log_plus_one",
    "atan2",
    "popcnt",
    "tanh",
    "sine",
    "cosine",
    "rsqrt",
    "round_nearest_afz",
    "round_nearest_even",
    "is_finite",
    "floor",
    "ceil",
    "exponential_minus_one",
    "cbrt",
    "reduce",
    "dot_general",
    "count_leading_zeros",
    "logistic",
    "while",
    "dynamic_slice",
    "dynamic_update_slice",
    "gather",
    "reduce_window",
    "sort",
    "scatter",
    "convolution",
];

/// One testdata row of the corpus index that is expected to pass: (path, types, ops).
pub fn runnable_rows(dir: &Path) -> Vec<(String, String, String)> {
    let index = std::fs::read_to_string(dir.join("index.tsv")).unwrap();
    let skip: HashSet<String> =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/expected_failures.txt"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split('\t').next().map(str::to_string))
            .collect();
    index
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let (path, corpus, types, flags, ops) = (f[0], f[1], f[4], f[5], f[6]);
            let runnable = corpus == "testdata" && !flags.contains("run_disabled") && !skip.contains(path);
            runnable.then(|| (path.to_string(), types.to_string(), ops.to_string()))
        })
        .collect()
}

/// The runnable programs using only [`COMPILED_OPS`] (and CHLO ops), by path.
pub fn compiled_programs(dir: &Path) -> Vec<String> {
    runnable_rows(dir)
        .into_iter()
        .filter(|(_, _, ops)| {
            ops.split(',').all(|op| match op.strip_prefix("stablehlo.") {
                Some(name) => COMPILED_OPS.contains(&name),
                None => op.starts_with("chlo."),
            })
        })
        .map(|(path, _, _)| path)
        .collect()
}
