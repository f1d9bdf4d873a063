//! Tests of the StableHLO (MLIR text) parser: each syntax form, error positions, JAX
//! output (tests/mlir_samples) and the whole conformance corpus.

use hloscope_core::ir::*;
use hloscope_core::parse::mlir::{function_names, parse, parse_with_entry};
use std::path::PathBuf;


/// Parses, panicking with the error (tests only).
fn ok(text: &str) -> Module {
    parse(text).unwrap_or_else(|e| panic!("parse failed: {e}"))
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// Live instructions of the entry computation, in order, skipping parameters.
fn entry_insts(m: &Module) -> Vec<&Instruction> {
    let c = m.entry_comp();
    c.order.iter().map(|&i| c.inst(i)).filter(|i| !matches!(i.op, Op::Parameter(_))).collect()
}

/// Instructions in all reachable computations matching `f`.
fn count(m: &Module, f: impl Fn(&Op) -> bool) -> usize {
    m.post_order().iter().map(|&c| m.comp(c).order.iter().filter(|&&i| f(&m.comp(c).inst(i).op)).count()).sum()
}

fn constant(m: &Module, name_index: usize) -> Literal {
    let consts: Vec<Literal> = entry_insts(m)
        .into_iter()
        .filter_map(|i| match &i.op {
            Op::Constant(l) => Some(l.clone()),
            _ => None,
        })
        .collect();
    consts[name_index].clone()
}

fn f32s(t: &[usize]) -> Type {
    Type::array(ElementType::F32, t.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

#[test]
fn pretty_elementwise_and_function_signature() {
    let m = ok(r#"
module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.sharding = "{replicated}"}, %arg1: tensor<2x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xf32>
    %1 = stablehlo.compare  GT, %0, %arg1,  FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %2 = stablehlo.select %1, %0, %arg1 : tensor<2x3xi1>, tensor<2x3xf32>
    %3 = stablehlo.exponential %2 : tensor<2x3xf32>
    return %3 : tensor<2x3xf32>
  }
}"#);
    assert_eq!(m.name, "jit_f");
    let c = m.entry_comp();
    assert_eq!(c.name, "main");
    assert_eq!(c.param_types(), vec![f32s(&[2, 3]), f32s(&[2, 3])]);
    let ops: Vec<&Op> = entry_insts(&m).iter().map(|i| &i.op).collect();
    assert_eq!(ops[0], &Op::Binary(BinaryOp::Add));
    assert_eq!(ops[1], &Op::Compare { dir: CmpDir::Gt, kind: Some(CmpKind::Float) });
    assert_eq!(entry_insts(&m)[1].ty, Type::array(ElementType::Pred, vec![2, 3]));
    assert_eq!(ops[2], &Op::Select);
    assert_eq!(entry_insts(&m)[2].ty, f32s(&[2, 3]));
    assert_eq!(ops[3], &Op::Unary(UnaryOp::Exp));
    assert_eq!(c.root_inst().op, Op::Unary(UnaryOp::Exp));
    // Names come from fresh_name and are unique.
    assert_eq!(entry_insts(&m)[0].name.split('.').next(), Some("add"));
    // Locations: line:col of the op name.
    assert_eq!((entry_insts(&m)[0].loc.line, entry_insts(&m)[0].loc.col), (4, 10));
}

#[test]
fn dense_literals() {
    let m = ok(r#"
func.func @main() {
  %a = stablehlo.constant dense<1.5> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[[1, -2], [3, 4]]> : tensor<2x2xi8>
  %c = stablehlo.constant dense<[0x7FC00000, 0xFF800000, 0x00000001]> : tensor<3xf32>
  %d = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %e = stablehlo.constant dense<18446744073709551615> : tensor<ui64>
  %f = stablehlo.constant dense<0.3> : tensor<bf16>
  %g = stablehlo.constant dense<"0x0000803F00000040"> : tensor<2xf32>
  %h = stablehlo.constant dense<"0x0100"> : tensor<3xi16>
  %i = stablehlo.constant dense<0x0123456789ABCDEF> : tensor<i64>
  %j = stablehlo.constant dense<[0x7E00, 0x0001]> : tensor<2xf16>
  %k = stablehlo.constant dense<> : tensor<0xf32>
  %l = stablehlo.constant dense<[inf, -inf]> : tensor<2xf64>
  %m = stablehlo.constant dense<[255, 0]> : tensor<2xui8>
  func.return
}"#);
    assert_eq!(constant(&m, 0).data, Data::F(vec![1.5; 4]));
    assert_eq!(constant(&m, 1).data, Data::S(vec![1, -2, 3, 4]));
    let c = constant(&m, 2).to_f64_vec();
    assert!(c[0].is_nan() && c[1] == f64::NEG_INFINITY);
    assert_eq!(c[2], f32::from_bits(1) as f64);
    assert_eq!(constant(&m, 3).data, Data::Pred(vec![true, false]));
    assert_eq!(constant(&m, 4).data, Data::U(vec![u64::MAX]));
    // 0.3 rounded to bf16 (8 bits of mantissa): 0.30078125.
    assert_eq!(constant(&m, 5).data, Data::F(vec![0.30078125]));
    assert_eq!(constant(&m, 6).data, Data::F(vec![1.0, 2.0]));
    // A one-element blob is a splat.
    assert_eq!(constant(&m, 7).data, Data::S(vec![1, 1, 1]));
    assert_eq!(constant(&m, 8).data, Data::S(vec![0x0123456789ABCDEF]));
    let j = constant(&m, 9).to_f64_vec();
    assert!(j[0].is_nan());
    assert_eq!(j[1], 2f64.powi(-24));
    assert_eq!(constant(&m, 10).num_elements(), 0);
    assert_eq!(constant(&m, 11).data, Data::F(vec![f64::INFINITY, f64::NEG_INFINITY]));
    assert_eq!(constant(&m, 12).data, Data::U(vec![255, 0]));
}

#[test]
fn dense_literal_errors_have_positions() {
    let e = err("func.func @main() {\n  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<2xi32>\n  func.return\n}");
    assert!(e.starts_with("2:27:") && e.contains("3 elements"), "{e}");
    let e = err("func.func @main() {\n  %a = stablehlo.constant dense<300> : tensor<i8>\n  func.return\n}");
    assert!(e.starts_with("2:27:") && e.contains("out of range"), "{e}");
    let e = err("func.func @main() {\n  %a = stablehlo.constant dense<\"0x0102\"> : tensor<3xi32>\n  func.return\n}");
    assert!(e.contains("hex blob has 2 bytes"), "{e}");
}

#[test]
fn shape_ops_pretty_forms() {
    let m = ok(r#"
func.func @main(%x: tensor<4x6xf32>, %i: tensor<i32>) -> tensor<2x2xf32> {
  %0 = stablehlo.slice %x [1:3, 0:6:2] : (tensor<4x6xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [1, 2] : (tensor<3x2xf32>) -> tensor<5x3x2xf32>
  %3 = stablehlo.iota dim = 0 : tensor<4xi32>
  %4 = stablehlo.concatenate %x, %x, dim = 0 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %5 = stablehlo.pad %x, %cst, low = [0, 1], high = [2, 0], interior = [1, 0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<9x7xf32>
  %6 = stablehlo.dynamic_slice %x, %i, %i, sizes = [2, 2] : (tensor<4x6xf32>, tensor<i32>, tensor<i32>) -> tensor<2x2xf32>
  %7 = stablehlo.reverse %6, dims = [0] : tensor<2x2xf32>
  %8 = stablehlo.reshape %7 : (tensor<2x2xf32>) -> tensor<4xf32>
  %9 = stablehlo.reduce_precision %8, format = e5m10 : tensor<4xf32>
  return %7 : tensor<2x2xf32>
}"#);
    let ops: Vec<Op> = entry_insts(&m).iter().map(|i| i.op.clone()).collect();
    assert_eq!(ops[0], Op::Slice { start: vec![1, 0], limit: vec![3, 6], stride: vec![1, 2] });
    assert_eq!(ops[1], Op::Transpose { perm: vec![1, 0] });
    assert_eq!(ops[2], Op::BroadcastInDim { dims: vec![1, 2] });
    assert_eq!(ops[3], Op::Iota { dim: 0 });
    assert_eq!(ops[4], Op::Concatenate { dim: 0 });
    assert_eq!(ops[6], Op::Pad { low: vec![0, 1], high: vec![2, 0], interior: vec![1, 0] });
    assert_eq!(ops[7], Op::DynamicSlice { sizes: vec![2, 2] });
    assert_eq!(entry_insts(&m)[7].operands.len(), 3);
    assert_eq!(ops[8], Op::Reverse { dims: vec![0] });
    assert_eq!(ops[9], Op::Reshape);
    assert_eq!(ops[10], Op::ReducePrecision { exponent_bits: 5, mantissa_bits: 10 });
}

#[test]
fn dot_general_pretty_and_generic() {
    let m = ok(r#"
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %1 : tensor<2x3x5xf32>
}"#);
    let want = DotDims { lhs_batch: vec![0], rhs_batch: vec![0], lhs_contracting: vec![2], rhs_contracting: vec![1] };
    let insts = entry_insts(&m);
    assert_eq!(insts[0].op, Op::Dot(want.clone()));
    assert_eq!(insts[1].op, Op::Dot(want));
    assert_eq!(insts[1].ty, f32s(&[2, 3, 5]));
}

#[test]
fn convolution_pretty_and_generic() {
    let m = ok(r#"
func.func @main(%lhs: tensor<1x4x4x1xf32>, %rhs: tensor<3x3x1x2xf32>, %p: tensor<2x2xi64>) -> tensor<1x2x2x2xf32> {
  %0 = stablehlo.convolution(%lhs, %rhs)
    dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {
      stride = [2, 2],
      pad = [[1, 1], [0, 1]],
      lhs_dilate = [1, 1],
      rhs_dilate = [1, 2],
      reverse = [false, true]
    } {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x4x4x1xf32>, tensor<3x3x1x2xf32>) -> tensor<1x2x2x2xf32>
  %1 = "stablehlo.convolution"(%lhs, %rhs) {
    window_strides = array<i64: 2, 2>,
    padding = dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>,
    rhs_dilation = array<i64: 1, 2>,
    window_reversal = array<i1: false, true>,
    dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
    batch_group_count = 1 : i64,
    feature_group_count = 1 : i64
  } : (tensor<1x4x4x1xf32>, tensor<3x3x1x2xf32>) -> tensor<1x2x2x2xf32>
  return %1 : tensor<1x2x2x2xf32>
}"#);
    let insts = entry_insts(&m);
    let Op::Convolution(a) = &insts[0].op else { panic!("{:?}", insts[0].op) };
    assert_eq!((a.dims.input_batch, a.dims.input_feature, a.dims.input_spatial.clone()), (0, 3, vec![1, 2]));
    assert_eq!((a.dims.kernel_input_feature, a.dims.kernel_output_feature, a.dims.kernel_spatial.clone()), (2, 3, vec![0, 1]));
    assert_eq!((a.dims.output_batch, a.dims.output_feature, a.dims.output_spatial.clone()), (0, 3, vec![1, 2]));
    assert_eq!(a.window_strides, vec![2, 2]);
    assert_eq!(a.padding, vec![(1, 1), (0, 1)]);
    assert_eq!(a.lhs_dilation, vec![1, 1]);
    assert_eq!(a.rhs_dilation, vec![1, 2]);
    assert_eq!(a.window_reversal, vec![false, true]);
    assert_eq!((a.feature_group_count, a.batch_group_count), (1, 1));
    assert_eq!(insts[1].op, insts[0].op);
}

#[test]
fn reduce_compact_and_region_forms() {
    let m = ok(r#"
func.func @main(%x: tensor<4x5xf32>, %i: tensor<4x5xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %ci = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
  %1:2 = stablehlo.reduce(%x init: %c), (%i init: %ci) across dimensions = [1] : (tensor<4x5xf32>, tensor<4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%ai: tensor<i32>, %bi: tensor<i32>)  {
    %2 = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %3 = stablehlo.select %2, %a, %b : tensor<i1>, tensor<f32>
    %4 = stablehlo.select %2, %ai, %bi : tensor<i1>, tensor<i32>
    stablehlo.return %3, %4 : tensor<f32>, tensor<i32>
  }
  %5 = "stablehlo.reduce"(%x, %c) ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %6 = stablehlo.maximum %p, %q : tensor<f32>
      stablehlo.return %6 : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<4x5xf32>, tensor<f32>) -> tensor<5xf32>
  return %0, %1#1 : tensor<4xf32>, tensor<4xi32>
}"#);
    let insts = entry_insts(&m);
    let Op::Reduce { dims, body } = &insts[2].op else { panic!() };
    assert_eq!(dims, &vec![1]);
    let b = m.comp(*body);
    assert_eq!(b.params.len(), 2);
    assert_eq!(b.param_types(), vec![f32s(&[]), f32s(&[])]);
    assert_eq!(b.root_inst().op, Op::Binary(BinaryOp::Add));
    // Variadic reduce: one tuple value, then two get-tuple-elements.
    let Op::Reduce { body, .. } = &insts[3].op else { panic!() };
    assert_eq!(insts[3].operands.len(), 4);
    assert_eq!(insts[3].ty, Type::Tuple(vec![f32s(&[4]), Type::array(ElementType::S32, vec![4])]));
    assert_eq!(insts[4].op, Op::GetTupleElement { index: 0 });
    assert_eq!(insts[5].op, Op::GetTupleElement { index: 1 });
    // Parameters: (acc_0, acc_1, x_0, x_1).
    let b = m.comp(*body);
    let s32 = Type::array(ElementType::S32, vec![]);
    assert_eq!(b.param_types(), vec![f32s(&[]), s32.clone(), f32s(&[]), s32]);
    assert_eq!(b.root_inst().op, Op::Tuple);
    let Op::Reduce { dims, body } = &insts[6].op else { panic!() };
    assert_eq!(dims, &vec![0]);
    assert_eq!(m.comp(*body).root_inst().op, Op::Binary(BinaryOp::Max));
    // The entry returns (reduce, gte #1).
    let root = m.entry_comp().root_inst();
    assert_eq!(root.op, Op::Tuple);
    let c = m.entry_comp();
    assert_eq!(c.inst(root.operands[0]).op, insts[2].op);
    assert_eq!(c.inst(root.operands[1]).op, Op::GetTupleElement { index: 1 });
    assert_eq!(c.inst(c.inst(root.operands[1]).operands[0]).ty, insts[3].ty);
}

fn conformance_dir() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(d) = std::env::var("HLOSCOPE_CONFORMANCE_DIR") {
        candidates.push(PathBuf::from(d));
    }
    candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance"));
    candidates.push(PathBuf::from("/work/shared/conformance"));
    candidates.into_iter().find(|p| p.join("stablehlo").is_dir())
}

fn mlir_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            mlir_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "mlir") {
            out.push(p);
        }
    }
}

/// Is this error one the corpus is allowed to produce (unsupported types or ops, CHLO
/// ops whose decomposition lives elsewhere)?
fn allowed_failure(msg: &str) -> bool {
    msg.contains("unsupported element type")
        || msg.contains("unsupported op")
        || msg.contains("unsupported type")
        || msg.contains("CHLO")
        || msg.contains("chlo.")
}

#[test]
fn parses_conformance_corpus() {
    let Some(dir) = conformance_dir() else {
        panic!("conformance corpus not found; set HLOSCOPE_CONFORMANCE_DIR");
    };
    let mut files = Vec::new();
    mlir_files(&dir.join("stablehlo"), &mut files);
    assert!(files.len() > 1500, "found only {} files", files.len());
    let (mut chunks, mut ok, mut allowed) = (0, 0, 0);
    let mut bad = Vec::new();
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let is_interp = f.to_string_lossy().contains("/interpret/");
        let parts: Vec<String> = if is_interp {
            let mut parts = vec![String::new()];
            for line in text.split_inclusive('\n') {
                if line.trim_end() == "// -----" {
                    parts.push(String::new());
                } else {
                    parts.last_mut().unwrap().push_str(line);
                }
            }
            parts
        } else {
            vec![text]
        };
        for part in parts {
            if !part.contains("func.func") {
                continue;
            }
            chunks += 1;
            let result = match parse(&part) {
                // One upstream chunk holds two test functions without a separator:
                // parse each of them as the entry, as a harness would run each.
                Err(e) if e.message.contains("several functions") => {
                    let names = function_names(&part).unwrap();
                    assert!(names.len() > 1);
                    names.iter().map(|n| parse_with_entry(&part, Some(n))).collect::<Result<Vec<_>, _>>().map(|ms| ms.len())
                }
                r => r.map(|m| {
                    assert!(m.entry_comp().has_root(), "{}", f.display());
                    1
                }),
            };
            match result {
                Ok(_) => ok += 1,
                Err(e) if allowed_failure(&e.message) => {
                    allowed += 1;
                    let key = e.message.split(" at ").next().unwrap_or("").to_string();
                    *reasons.entry(key).or_insert(0) += 1;
                }
                Err(e) => bad.push(format!("{}: {e}", f.display())),
            }
        }
    }
    eprintln!("conformance: {} files, {chunks} chunks, {ok} parsed, {allowed} unsupported, {} bad", files.len(), bad.len());
    for (r, n) in &reasons {
        eprintln!("  {n:5} {r}");
    }
    for b in bad.iter().take(40) {
        eprintln!("  {b}");
    }
    assert!(bad.is_empty(), "{} chunks failed with unexpected errors", bad.len());
}
