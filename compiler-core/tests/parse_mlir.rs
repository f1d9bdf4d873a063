//! Tests of the StableHLO (MLIR text) parser: each syntax form, error positions, JAX
//! output (tests/mlir_samples) and the whole conformance corpus.

use hloscope_core::ir::*;
use hloscope_core::parse::mlir::{function_names, parse, parse_with_entry};
use std::path::PathBuf;

use crate::corpus;

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
    assert_eq!(
        (a.dims.kernel_input_feature, a.dims.kernel_output_feature, a.dims.kernel_spatial.clone()),
        (2, 3, vec![0, 1])
    );
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

#[test]
fn while_with_implicit_capture() {
    // `%ten` is read inside `cond` without being loop-carried (as interpret/while.mlir
    // does); it becomes a third loop value that the body passes through.
    let m = ok(r#"
func.func @main(%ten: tensor<i64>) -> tensor<i64> {
  %init_i = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %r0, %r1 = stablehlo.while(%arg0 = %init_i, %arg1 = %init_i) : tensor<i64>, tensor<i64>
  cond {
    %cond = stablehlo.compare LT, %arg0, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %cond : tensor<i1>
  } do {
    %new_sum = stablehlo.add %arg1, %one : tensor<i64>
    %new_i = stablehlo.add %arg0, %one : tensor<i64>
    stablehlo.return %new_i, %new_sum : tensor<i64>, tensor<i64>
  }
  return %r1 : tensor<i64>
}"#);
    let c = m.entry_comp();
    let w = entry_insts(&m).into_iter().find(|i| matches!(i.op, Op::While { .. })).unwrap();
    let Op::While { cond, body } = w.op else { unreachable!() };
    let s64 = Type::array(ElementType::S64, vec![]);
    assert_eq!(w.operands.len(), 3);
    assert_eq!(w.operands[2], c.params[0]);
    assert_eq!(w.ty, Type::Tuple(vec![s64.clone(); 3]));
    assert_eq!(m.comp(cond).params.len(), 3);
    assert_eq!(m.comp(cond).root_inst().op, Op::Compare { dir: CmpDir::Lt, kind: None });
    // The compare reads parameter 2 (the captured %ten).
    let cmp = m.comp(cond).root_inst();
    assert_eq!(m.comp(cond).inst(cmp.operands[1]).op, Op::Parameter(2));
    let b = m.comp(body);
    assert_eq!(b.params.len(), 3);
    let root = b.root_inst();
    assert_eq!(root.op, Op::Tuple);
    assert_eq!(root.operands[2], b.params[2]);
    // The constant %one was copied into the body rather than captured.
    assert!(b.order.iter().any(|&i| matches!(b.inst(i).op, Op::Constant(_))));
    // %r1 is element 1 of the while tuple.
    let r = c.root_inst();
    assert_eq!(r.op, Op::GetTupleElement { index: 1 });
    assert_eq!(r.ty, s64);
}

#[test]
fn case_and_if_with_captures() {
    let m = ok(r#"
func.func @main(%i: tensor<i32>, %p: tensor<i1>, %x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = "stablehlo.case"(%i) ({
    %3 = stablehlo.subtract %x, %y : tensor<3xf32>
    stablehlo.return %3 : tensor<3xf32>
  }, {
    stablehlo.return %y : tensor<3xf32>
  }) : (tensor<i32>) -> tensor<3xf32>
  %1, %2 = "stablehlo.if"(%p) ({
    %c = stablehlo.constant dense<1.0> : tensor<3xf32>
    stablehlo.return %c, %x : tensor<3xf32>, tensor<3xf32>
  }, {
    stablehlo.return %y, %y : tensor<3xf32>, tensor<3xf32>
  }) : (tensor<i1>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0, %2 : tensor<3xf32>, tensor<3xf32>
}"#);
    let insts = entry_insts(&m);
    let c = m.entry_comp();
    let Op::Case { branches, branch_operands } = &insts[0].op else { panic!() };
    assert_eq!(insts[0].operands, vec![c.params[0], c.params[2], c.params[3]]);
    assert_eq!(branch_operands, &vec![vec![0, 1], vec![1]]);
    assert_eq!(m.comp(branches[0]).params.len(), 2);
    assert_eq!(m.comp(branches[1]).root, m.comp(branches[1]).params[0]);
    assert_eq!(insts[0].ty, f32s(&[3]));
    let Op::Case { branches, branch_operands } = &insts[1].op else { panic!() };
    assert_eq!(insts[1].operands, vec![c.params[1], c.params[2], c.params[3]]);
    assert_eq!(branch_operands, &vec![vec![0], vec![1]]);
    assert_eq!(insts[1].ty, Type::Tuple(vec![f32s(&[3]), f32s(&[3])]));
    assert_eq!(m.comp(branches[0]).root_inst().op, Op::Tuple);
    assert_eq!(insts[2].op, Op::GetTupleElement { index: 0 });
}

#[test]
fn calls_are_inlined_with_multi_results() {
    let m = ok(r#"
module @jit_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<2xi32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0:2 = call @inputs() : () -> (tensor<2xi32>, tensor<2xi32>)
    %1 = call @expected() : () -> tensor<2xi32>
    %2 = func.call @add(%0#0, %0#1) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    stablehlo.custom_call @check.expect_eq(%2, %1) {has_side_effect = true} : (tensor<2xi32>, tensor<2xi32>) -> ()
    return %2 : tensor<2xi32>
  }
  func.func private @inputs() -> (tensor<2xi32> {mhlo.layout_mode = "default"}, tensor<2xi32>) {
    %c = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    %c_0 = stablehlo.constant dense<[10, 20]> : tensor<2xi32>
    return %c, %c_0 : tensor<2xi32>, tensor<2xi32>
  }
  func.func private @expected() -> (tensor<2xi32> {mhlo.layout_mode = "default"}) {
    %c = stablehlo.constant dense<[11, 22]> : tensor<2xi32>
    return %c : tensor<2xi32>
  }
  func.func private @add(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
    %0 = stablehlo.add %a, %b : tensor<2xi32>
    return %0 : tensor<2xi32>
  }
}"#);
    assert_eq!(m.comps.len(), 1, "everything is inlined into @main");
    let insts = entry_insts(&m);
    assert_eq!(insts.len(), 5);
    assert_eq!(constant(&m, 0).data, Data::S(vec![1, 2]));
    assert_eq!(constant(&m, 2).data, Data::S(vec![11, 22]));
    let c = m.entry_comp();
    let add = insts[3];
    assert_eq!(add.op, Op::Binary(BinaryOp::Add));
    assert_eq!(c.inst(add.operands[1]).op, Op::Constant(constant(&m, 1)));
    let Op::CustomCall(cc) = &insts[4].op else { panic!() };
    assert_eq!(cc.target, "check.expect_eq");
    assert!(cc.has_side_effect);
    assert_eq!(insts[4].ty, Type::Tuple(vec![]));
    assert_eq!(c.root_inst().op, Op::Binary(BinaryOp::Add));
}

#[test]
fn recursion_and_unknown_calls_are_errors() {
    let e = err("func.func @main() -> tensor<i32> {\n  %0 = call @f() : () -> tensor<i32>\n  return %0 : tensor<i32>\n}\nfunc.func @f() -> tensor<i32> {\n  %0 = func.call @main() : () -> tensor<i32>\n  return %0 : tensor<i32>\n}");
    assert!(e.starts_with("6:8:") && e.contains("recursive call to @main"), "{e}");
    let e = err("func.func @main() {\n  %0 = call @nope() : () -> tensor<i32>\n  return\n}");
    assert!(e.starts_with("2:8:") && e.contains("unknown function @nope"), "{e}");
}

#[test]
fn composite_is_inlined() {
    let m = ok(r#"
func.func @add_n.impl(%arg0: tensor<i64>) -> tensor<i64> {
  %0 = stablehlo.constant dense<2> : tensor<i64>
  %1 = stablehlo.add %arg0, %0 : tensor<i64>
  func.return %1 : tensor<i64>
}
func.func @main() {
  %0 = stablehlo.constant dense<1> : tensor<i64>
  %1 = stablehlo.composite "stablehlo.add_n" %0 {
    composite_attributes = { n = 2 : i64 },
    decomposition = @add_n.impl
  } : (tensor<i64>) -> tensor<i64>
  check.expect_eq_const %1, dense<3> : tensor<i64>
  func.return
}"#);
    let insts = entry_insts(&m);
    let ops: Vec<&str> = insts.iter().map(|i| i.op.hlo_name()).collect();
    assert_eq!(ops, vec!["constant", "constant", "add", "constant", "custom-call", "tuple"]);
    assert_eq!(constant(&m, 2).data, Data::S(vec![3]));
    assert_eq!(m.entry_comp().root_inst().ty, Type::Tuple(vec![]));
}

#[test]
fn check_ops_become_custom_calls() {
    let m = ok(r#"
func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>
  check.expect_eq %a, %a : tensor<2xf64>
  check.expect_almost_eq %a, %a, tolerance = 0.1 : tensor<2xf64>
  check.expect_almost_eq_const %a, dense<[1.0, 2.0]> : tensor<2xf64> {tolerance = 1.000000e-03 : f64}
  check.expect_almost_eq_const %a, dense<[1.0, 2.0]> : tensor<2xf64>
  check.expect_close %a, %a, max_ulp_difference = 3 : tensor<2xf64>, tensor<2xf64>
  check.expect_eq_const %a, dense<[1.0,
                                   2.0]> : tensor<2xf64>
  stablehlo.custom_call @check.expect_close(%a, %a) {has_side_effect = true} : (tensor<2xf64>, tensor<2xf64>) -> ()
  stablehlo.custom_call @check.expect_almost_eq(%a, %a) {has_side_effect = true} : (tensor<2xf64>, tensor<2xf64>) -> ()
  func.return
}"#);
    let calls: Vec<_> = entry_insts(&m)
        .into_iter()
        .filter_map(|i| match &i.op {
            Op::CustomCall(c) => {
                assert!(c.has_side_effect);
                assert_eq!(i.ty, Type::Tuple(vec![]));
                Some((c.target.clone(), c.attrs.clone(), i.operands.len()))
            }
            _ => None,
        })
        .collect();
    let p = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(calls.len(), 8);
    assert_eq!(calls[0], ("check.expect_eq".into(), vec![], 2));
    assert_eq!(calls[1], ("check.expect_almost_eq".into(), vec![p("tolerance", "0.1")], 2));
    assert_eq!(calls[2], ("check.expect_almost_eq".into(), vec![p("tolerance", "0.001")], 2));
    assert_eq!(calls[3], ("check.expect_almost_eq".into(), vec![p("tolerance", "0.0001")], 2));
    let ulp = vec![p("max_ulp_difference", "3"), p("min_ulp_difference", "0")];
    assert_eq!(calls[4], ("check.expect_close".into(), ulp.clone(), 2));
    assert_eq!(calls[5], ("check.expect_eq".into(), vec![], 2));
    assert_eq!(calls[6], ("check.expect_close".into(), ulp, 2));
    assert_eq!(calls[7], ("check.expect_almost_eq".into(), vec![p("tolerance", "0.001")], 2));
}

#[test]
fn other_custom_calls_keep_target_and_attributes() {
    let m = ok(r#"
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<i32>) {
  %0:2 = stablehlo.custom_call @my_kernel(%x) {backend_config = "cfg", api_version = 2 : i32} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<i32>)
  return %0#0, %0#1 : tensor<4xf32>, tensor<i32>
}"#);
    let insts = entry_insts(&m);
    let Op::CustomCall(c) = &insts[0].op else { panic!() };
    assert_eq!(c.target, "my_kernel");
    assert!(!c.has_side_effect);
    assert_eq!(c.backend_config, "cfg");
    assert_eq!(c.attrs, vec![("api_version".to_string(), "2 : i32".to_string())]);
    assert_eq!(insts[0].ty, Type::Tuple(vec![f32s(&[4]), Type::array(ElementType::S32, vec![])]));
    assert_eq!(insts[2].op, Op::GetTupleElement { index: 1 });
}

#[test]
fn generic_region_ops() {
    let m = ok(r#"
func.func @main(%x: tensor<8x9xf32>, %idx: tensor<2x1xi64>, %upd: tensor<2x9xf32>, %k: tensor<8xi32>) -> tensor<8x9xf32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %cst) <{padding = dense<[[7, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 8, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) : (tensor<8x9xf32>, tensor<f32>) -> tensor<8x9xf32>
  %1 = "stablehlo.scatter"(%0, %idx, %upd) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<8x9xf32>, tensor<2x1xi64>, tensor<2x9xf32>) -> tensor<8x9xf32>
  %2:2 = "stablehlo.sort"(%k, %k) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare  LT, %a, %b,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<8xi32>, tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>)
  %3 = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = true, slice_sizes = array<i64: 1, 9>}> : (tensor<8x9xf32>, tensor<2x1xi64>) -> tensor<2x9xf32>
  %4 = "stablehlo.select_and_scatter"(%x, %upd, %cst) <{window_dimensions = array<i64: 4, 1>, window_strides = array<i64: 4, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<8x9xf32>, tensor<2x9xf32>, tensor<f32>) -> tensor<8x9xf32>
  %5 = "stablehlo.map"(%x, %x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.multiply %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<8x9xf32>, tensor<8x9xf32>) -> tensor<8x9xf32>
  return %1 : tensor<8x9xf32>
}"#);
    let insts = entry_insts(&m);
    let Op::ReduceWindow(rw) = &insts[1].op else { panic!() };
    assert_eq!(rw.window_dims, vec![8, 1]);
    assert_eq!(rw.strides, vec![1, 1]);
    assert_eq!(rw.base_dilations, vec![1, 1]);
    assert_eq!(rw.padding, vec![(7, 0), (0, 0)]);
    let Op::Scatter(sc) = &insts[2].op else { panic!() };
    assert_eq!(sc.update_window_dims, vec![1]);
    assert_eq!(sc.inserted_window_dims, vec![0]);
    assert_eq!(sc.scatter_dims_to_operand_dims, vec![0]);
    assert_eq!(sc.index_vector_dim, 1);
    assert!(sc.unique_indices && !sc.indices_are_sorted);
    assert_eq!(m.comp(sc.body).root, m.comp(sc.body).params[1]);
    let Op::Sort { dim, stable, comparator } = &insts[3].op else { panic!() };
    assert_eq!((*dim, *stable), (0, true));
    assert_eq!(m.comp(*comparator).params.len(), 4);
    let Op::Gather(g) = &insts[6].op else { panic!("{:?}", insts[6].op) };
    assert_eq!(g.offset_dims, vec![1]);
    assert_eq!(g.slice_sizes, vec![1, 9]);
    assert!(g.indices_are_sorted);
    let Op::SelectAndScatter(ss) = &insts[7].op else { panic!() };
    assert_eq!(
        (ss.window_dims.clone(), ss.strides.clone(), ss.padding.clone()),
        (vec![4, 1], vec![4, 1], vec![(0, 0), (0, 0)])
    );
    assert_eq!(m.comp(ss.scatter).root_inst().op, Op::Binary(BinaryOp::Add));
    let Op::Map { dims, body } = &insts[8].op else { panic!() };
    assert_eq!(dims, &vec![0, 1]);
    assert_eq!(m.comp(*body).root_inst().op, Op::Binary(BinaryOp::Mul));
}

#[test]
fn misc_ops_tuples_rng_triangular_solve() {
    let m = ok(r#"
func.func @main(%s: tensor<2xui64>, %a: tensor<3x3xf32>, %b: tensor<3x1xf32>) -> tensor<i64> {
  %t0 = stablehlo.constant dense<3> : tensor<i64>
  %t = stablehlo.tuple %t0, %a : tuple<tensor<i64>, tensor<3x3xf32>>
  %g = stablehlo.get_tuple_element %t[0] : (tuple<tensor<i64>, tensor<3x3xf32>>) -> tensor<i64>
  %output_state, %output = stablehlo.rng_bit_generator %s, algorithm =  THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
  %x = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
  %o:2 = stablehlo.optimization_barrier %a, %b : tensor<3x3xf32>, tensor<3x1xf32>
  %tok = stablehlo.after_all : !stablehlo.token
  %d = stablehlo.get_dimension_size %a, dim = 1 : (tensor<3x3xf32>) -> tensor<i32>
  return %g : tensor<i64>
}"#);
    let insts = entry_insts(&m);
    assert_eq!(insts[1].ty, Type::Tuple(vec![Type::array(ElementType::S64, vec![]), f32s(&[3, 3])]));
    assert_eq!(insts[2].op, Op::GetTupleElement { index: 0 });
    assert_eq!(insts[3].op, Op::RngBitGenerator { algorithm: RngAlgorithm::ThreeFry });
    assert_eq!(
        insts[3].ty,
        Type::Tuple(vec![Type::array(ElementType::U64, vec![2]), Type::array(ElementType::U32, vec![4])])
    );
    let Op::TriangularSolve(ts) = &insts[6].op else { panic!() };
    assert!(ts.left_side && ts.lower && !ts.unit_diagonal);
    assert_eq!(ts.transpose_a, hloscope_core::ir::Transpose::Adjoint);
    assert_eq!(insts[7].op, Op::OptimizationBarrier);
    assert_eq!(insts[10].op, Op::AfterAll);
    assert_eq!(insts[10].ty, Type::Token);
    assert_eq!(insts[11].op, Op::Constant(Literal::scalar_i64(ElementType::S32, 3)));
}

#[test]
fn shape_operand_ops_become_static() {
    let m = ok(r#"
func.func @main(%x: tensor<3x1xi64>) {
  %shape = stablehlo.constant dense<[3, 2, 2]> : tensor<3xi64>
  %0 = "stablehlo.dynamic_broadcast_in_dim"(%x, %shape) {
  broadcast_dimensions = array<i64: 0, 2>
} : (tensor<3x1xi64>, tensor<3xi64>) -> tensor<3x2x2xi64>
  %s2 = stablehlo.constant dense<[3]> : tensor<1xi64>
  %1 = stablehlo.dynamic_reshape %x, %s2 : (tensor<3x1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %s3 = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  %2 = stablehlo.dynamic_iota %s3, dim = 1 : (tensor<2xi64>) -> tensor<3x4xi64>
  %v = stablehlo.constant dense<-1> : tensor<i64>
  %lo = stablehlo.constant dense<[1, -1]> : tensor<2xi64>
  %hi = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %in = stablehlo.constant dense<[0, 1]> : tensor<2xi64>
  %3 = stablehlo.dynamic_pad %x, %v, %lo, %hi, %in : (tensor<3x1xi64>, tensor<i64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<5x2xi64>
  func.return
}"#);
    let ops: Vec<Op> = entry_insts(&m).iter().map(|i| i.op.clone()).collect();
    assert_eq!(ops[1], Op::BroadcastInDim { dims: vec![0, 2] });
    assert_eq!(entry_insts(&m)[1].operands.len(), 1);
    assert_eq!(ops[3], Op::Reshape);
    assert_eq!(ops[5], Op::Iota { dim: 1 });
    assert_eq!(ops[10], Op::Pad { low: vec![1, -1], high: vec![1, 2], interior: vec![0, 1] });
    assert_eq!(entry_insts(&m)[10].ty, Type::array(ElementType::S64, vec![5, 2]));
    let e = err("func.func @main(%x: tensor<3x1xi64>, %s: tensor<1xi64>) {\n  %1 = stablehlo.dynamic_reshape %x, %s : (tensor<3x1xi64>, tensor<1xi64>) -> tensor<3xi64>\n  func.return\n}");
    assert!(e.starts_with("2:8:") && e.contains("must be an integer constant"), "{e}");
}

#[test]
fn locations_resolve_aliases() {
    let m = ok(r#"#loc1 = loc("x")
module @jit_f {
  func.func public @main(%arg0: tensor<f32> loc("x")) -> (tensor<f32>) {
    %0 = stablehlo.sine %arg0 : tensor<f32> loc(#loc7)
    %1 = stablehlo.cosine %0 : tensor<f32> loc("f.py":9:2)
    %2 = stablehlo.tanh %1 : tensor<f32> loc(unknown)
    return %2 : tensor<f32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("/tmp/f.py":6:9 to :32)
#loc3 = loc("/tmp/f.py":3:1)
#loc4 = loc("f"(#loc2))
#loc5 = loc(callsite(#loc4 at #loc3))
#loc7 = loc("jit(f)/sin"(#loc5))
"#);
    let insts = entry_insts(&m);
    assert_eq!(insts[0].loc.source.as_deref(), Some("jit(f)/sin @ /tmp/f.py:6:9"));
    assert_eq!((insts[0].loc.line, insts[0].loc.col), (4, 10));
    assert_eq!(insts[1].loc.source.as_deref(), Some("f.py:9:2"));
    assert_eq!(insts[2].loc.source, None);
}

#[test]
fn errors_carry_line_and_column() {
    let cases: &[(&str, &str)] = &[
        ("func.func @main(%x: tensor<4xf8E4M3FN>) {\n  func.return\n}", "1:30: unsupported element type f8E4M3FN"),
        ("func.func @main(%x: tensor<?xf32>) {\n  func.return\n}", "1:28: dynamic dimension `?` is not supported"),
        ("func.func @main() {\n  %0 = stablehlo.constant dense<(1.0, 2.0)> : tensor<complex<f32>>\n  func.return\n}", "2:54: unsupported element type complex<f32>"),
        ("func.func @main() {\n  %1 = stablehlo.add %0, %0 : tensor<f32>\n  func.return\n}", "2:22: undefined value %0"),
        ("func.func @main(%x: tensor<f32>) {\n  %1 = \"stablehlo.all_reduce\"(%x) ({\n  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n    stablehlo.return %a : tensor<f32>\n  }) : (tensor<f32>) -> tensor<f32>\n  func.return\n}", "2:8: unsupported op stablehlo.all_reduce"),
        ("func.func @main(%x: tensor<f32>) {\n  %1 = stablehlo.frobnicate %x : tensor<f32>\n  func.return\n}", "2:8: unsupported op stablehlo.frobnicate"),
        ("func.func @main(%x: tensor<4xf32>) {\n  %1 = chlo.no_such_op %x : tensor<4xf32> -> tensor<4xf32>\n  func.return\n}", "2:8: unsupported CHLO op chlo.no_such_op"),
        ("func.func @main(%x: tensor<4xf32) {\n  func.return\n}", "1:33: expected `>`"),
        ("func.func @main() {\n  %0 = stablehlo.constant dense<1> : tensor<i32>\n", "3:1: expected `}`"),
        ("func.func @main(%x: tensor<f32>) -> tensor<f32> {\n  %1 = stablehlo.add %x, %x : tensor<f32>\n}", "1:1: region has no terminator"),
        ("func.func @main(%x: tensor<2xf32>) {\n  %0 = stablehlo.reduce(%x init: %x) across dimensions = [0] : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>\n   reducer(%a: tensor<f32>, %b: tensor<f32>) {\n    %s = stablehlo.add %a, %x : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n  }\n  func.return\n}", "4:28: %x is defined outside this stablehlo.reduce region"),
    ];
    for (text, want) in cases {
        let e = err(text);
        assert!(e.starts_with(want), "got `{e}`, want `{want}...`");
    }
}

#[test]
fn bad_input_never_panics() {
    // Deep nesting is refused, not a stack overflow.
    let deep = format!(
        "func.func @main() {{\n  %0 = stablehlo.constant dense<{}1{}> : tensor<i32>\n  func.return\n}}",
        "[".repeat(10000),
        "]".repeat(10000)
    );
    assert!(err(&deep).contains("nesting deeper"));
    let deep_types =
        format!("func.func @main(%x: {}tensor<f32>{}) {{ func.return }}", "tuple<".repeat(5000), ">".repeat(5000));
    assert!(err(&deep_types).contains("nesting deeper"));
    let huge = "func.func @main() {\n  %0 = stablehlo.constant dense<1.0> : tensor<100000x100000x100000xf32>\n  func.return\n}";
    assert_eq!(
        err(huge),
        "2:40: f32[100000,100000,100000] has 1000000000000000 elements, more than the limit of 536870912"
    );
    // Deeply nested regions: parsed (or refused) without exhausting the stack.
    for depth in [40, 150] {
        let mut t = String::from("func.func @main(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {\n");
        for _ in 0..depth {
            t.push_str("%r = \"stablehlo.if\"(%p) ({\n");
        }
        t.push_str("stablehlo.return %x : tensor<f32>\n");
        for _ in 0..depth {
            t.push_str("}, {\n stablehlo.return %x : tensor<f32>\n }) : (tensor<i1>) -> tensor<f32>\n stablehlo.return %r : tensor<f32>\n");
        }
        t.push_str("}\n");
        match parse(&t) {
            Ok(m) => assert!(depth == 40 && count(&m, |o| matches!(o, Op::Case { .. })) == 40),
            Err(e) => assert!(depth == 150 && e.message.contains("nesting"), "{e}"),
        }
    }
    // Every prefix of real programs gives an error or a module, never a panic.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mlir_samples");
    for name in ["argmax_debug.mlir", "cond.mlir", "while_loop_debug.mlir", "scan.mlir"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let mut cut = 0;
        while cut < text.len() {
            if text.is_char_boundary(cut) {
                let _ = parse(&text[..cut]);
                let mut mutated = text.clone();
                mutated.replace_range(cut..(cut + 1).min(text.len()), "}");
                let _ = parse(&mutated);
            }
            cut += 7;
        }
    }
    for junk in [
        "",
        "module",
        "module {",
        "func.func",
        "#",
        "#loc = ",
        "\"",
        "func.func @main() { %0:99999999999 = ",
        "%",
        "@",
        "dense<",
        "\u{0}\u{ffff}",
    ] {
        let _ = parse(junk);
    }
}

/// (sample name, op name, count over all computations)
const SAMPLE_EXPECTATIONS: &[(&str, &str, usize)] = &[
    ("mlp", "dot", 2),
    ("mlp", "maximum", 1),
    ("softmax", "reduce", 2),
    ("softmax", "exponential", 1),
    ("softmax", "divide", 1),
    ("while_loop", "while", 1),
    ("cond", "conditional", 1),
    ("scan", "while", 1),
    ("scan", "dynamic-slice", 1),
    ("scan", "dynamic-update-slice", 1),
    ("argmax", "reduce", 1),
    ("argmax", "iota", 1),
    ("sort", "sort", 1),
];

#[test]
fn jax_samples_parse() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mlir_samples");
    for (name, op, n) in SAMPLE_EXPECTATIONS {
        for suffix in ["", "_debug"] {
            let text = std::fs::read_to_string(dir.join(format!("{name}{suffix}.mlir"))).unwrap();
            let m = parse(&text).unwrap_or_else(|e| panic!("{name}{suffix}: {e}"));
            assert_eq!(count(&m, |o| o.hlo_name() == *op), *n, "{name}{suffix}: {op}");
            // No calls survive inlining.
            assert_eq!(count(&m, |o| matches!(o, Op::Call { .. })), 0);
            if !suffix.is_empty() {
                let with_source =
                    m.entry_comp().order.iter().filter(|&&i| m.entry_comp().inst(i).loc.source.is_some()).count();
                assert!(with_source > 0, "{name}{suffix}: no source locations");
            }
        }
    }
    // Structure of a few in detail.
    let text = std::fs::read_to_string(dir.join("mlp.mlir")).unwrap();
    let m = parse(&text).unwrap();
    assert_eq!(
        m.entry_comp().param_types(),
        vec![f32s(&[8, 16]), f32s(&[16, 32]), f32s(&[32]), f32s(&[32, 4]), f32s(&[4])]
    );
    assert_eq!(m.entry_comp().root_inst().ty, f32s(&[8, 4]));
    let text = std::fs::read_to_string(dir.join("argmax.mlir")).unwrap();
    let m = parse(&text).unwrap();
    let root = m.entry_comp().root_inst();
    assert_eq!(root.ty, Type::array(ElementType::S32, vec![4]));
    let text = std::fs::read_to_string(dir.join("sort.mlir")).unwrap();
    let m = parse(&text).unwrap();
    let sort =
        m.entry_comp().order.iter().map(|&i| m.entry_comp().inst(i)).find(|i| matches!(i.op, Op::Sort { .. })).unwrap();
    assert_eq!(sort.operands.len(), 2);
    assert_eq!(sort.ty, Type::Tuple(vec![f32s(&[7]), Type::array(ElementType::S32, vec![7])]));
    let text = std::fs::read_to_string(dir.join("cond.mlir")).unwrap();
    let m = parse(&text).unwrap();
    let case = m.entry_comp().root_inst();
    let Op::Case { branch_operands, .. } = &case.op else { panic!() };
    assert_eq!(case.operands.len(), 3);
    assert_eq!(branch_operands, &vec![vec![0, 1], vec![0, 1]]);
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
    let mut files = Vec::new();
    mlir_files(&corpus::corpus_dir(), &mut files);
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
                    names
                        .iter()
                        .map(|n| parse_with_entry(&part, Some(n)))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|ms| ms.len())
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
    eprintln!(
        "conformance: {} files, {chunks} chunks, {ok} parsed, {allowed} unsupported, {} bad",
        files.len(),
        bad.len()
    );
    for (r, n) in &reasons {
        eprintln!("  {n:5} {r}");
    }
    for b in bad.iter().take(40) {
        eprintln!("  {b}");
    }
    assert!(bad.is_empty(), "{} chunks failed with unexpected errors", bad.len());
}
