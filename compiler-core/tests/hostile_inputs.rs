//! Hostile sizes, in both text formats and in modules built directly: every stage gives
//! an error naming the instruction, its line:col and the reason, never a panic, an
//! abort on allocation or a size wrapped past 64 bits (`hloscope_core::limits`).
//!
//! The cases are those found by hand against the CLI: a `parameter(N)` number far past
//! the instruction count, an `iota` of 1e11 elements, `f32[65536,65536,65536,65536]`
//! (2^64 elements, which wrapped to 0), a `pad` to 2^63 elements and a `broadcast` to
//! 9e18 elements.

use hloscope_core::ir::{BinaryOp, ElementType, Instruction, Literal, Loc, Module, Op, Shape, Type, UnaryOp};
use hloscope_core::limits::{check_module, Limits, MAX_ELEMENTS};
use hloscope_core::parse::{self, ParseError};

const LIMIT: &str = "more than the limit of 536870912";

fn parse_err(text: &str) -> ParseError {
    match parse::parse_module(text) {
        Ok(_) => panic!("the text should be refused:\n{text}"),
        Err(e) => e,
    }
}

/// The parse error is at `line:col` and its message is `message`.
fn assert_parse_error(text: &str, line: u32, col: u32, message: &str) {
    let e = parse_err(text);
    assert_eq!((e.line, e.col, e.message.as_str()), (line, col, message), "for:\n{text}");
}

#[test]
fn the_default_element_limit_is_a_few_gib() {
    assert_eq!(MAX_ELEMENTS, 1 << 29);
    assert_eq!(Limits::default(), Limits::DEFAULT);
    let limits = Limits::default();
    assert_eq!(limits.check_shape(&Shape::new(ElementType::F64, vec![1 << 29])), Ok(4 << 30));
    assert_eq!(
        limits.check_shape(&Shape::new(ElementType::F64, vec![(1 << 29) + 1])),
        Err(format!("f64[536870913] has 536870913 elements, {LIMIT}"))
    );
    // An empty array's loops still run over its other dimensions.
    assert_eq!(
        limits.check_shape(&Shape::new(ElementType::F32, vec![1 << 40, 0])),
        Err(format!("f32[1099511627776,0] is empty but spans 1099511627776 index positions, {LIMIT} elements"))
    );
    assert_eq!(limits.check_shape(&Shape::new(ElementType::F32, vec![1 << 20, 0])), Ok(0));
}

// ---- XLA HLO text ----

fn hlo(body: &str) -> String {
    format!("HloModule m\n\nENTRY main {{\n{body}}}\n")
}

#[test]
fn hlo_parameter_number_past_the_instructions() {
    let text = hlo("  p = f32[2]{0} parameter(4000000000)\n  ROOT n = f32[2]{0} negate(p)\n");
    assert_parse_error(
        &text,
        4,
        17,
        "parameter number 4000000000 is out of range: computation `main` has 2 instructions, so its parameters \
         are numbered below that",
    );
    // Numbers that fit are still fine, and a gap is still its own error.
    let gap = hlo("  p = f32[2]{0} parameter(1)\n  ROOT n = f32[2]{0} negate(p)\n");
    assert_eq!(parse_err(&gap).message, "computation `main` lacks parameter 0");
}

#[test]
fn hlo_iota_of_1e11_elements() {
    let text = hlo("  ROOT i = s32[100000000000]{0} iota(), iota_dimension=0\n");
    assert_parse_error(&text, 4, 12, &format!("s32[100000000000] has 100000000000 elements, {LIMIT}"));
}

#[test]
fn hlo_shape_of_2_to_the_64_elements() {
    let text = hlo(
        "  p = f32[65536,65536,65536,65536]{3,2,1,0} parameter(0)\n  ROOT n = f32[65536,65536,65536,65536]{3,2,1,0} \
         negate(p)\n",
    );
    assert_parse_error(&text, 4, 7, &format!("f32[65536,65536,65536,65536] has 1.8e19 elements, {LIMIT}"));
}

#[test]
fn hlo_pad_to_2_to_the_63_elements() {
    let text = hlo(
        "  p = f32[2]{0} parameter(0)\n  z = f32[] constant(0)\n  ROOT q = f32[9223372036854775807]{0} pad(p, z), \
         padding=0_9223372036854775805\n",
    );
    assert_parse_error(&text, 6, 12, &format!("f32[9223372036854775807] has 9223372036854775807 elements, {LIMIT}"));
}

#[test]
fn hlo_broadcast_to_9e18_elements() {
    let text = hlo("  z = f32[] constant(1)\n  ROOT b = f32[3000000000,3000000000]{1,0} broadcast(z), dimensions={}\n");
    assert_parse_error(&text, 5, 12, &format!("f32[3000000000,3000000000] has 9000000000000000000 elements, {LIMIT}"));
}

#[test]
fn hlo_oversized_computation_signature_and_tuple_element() {
    // Shapes are checked wherever they are read: a signature, a tuple's element.
    let text = "HloModule m\n\nENTRY main (p: f32[2]) -> f32[4294967296,4] {\n  p = f32[2]{0} parameter(0)\n  \
                ROOT n = f32[2]{0} negate(p)\n}\n";
    assert_parse_error(text, 3, 27, &format!("f32[4294967296,4] has 17179869184 elements, {LIMIT}"));
    let text = hlo("  ROOT p = (f32[2]{0}, u8[1048576,1048576]{1,0}) parameter(0)\n");
    assert_parse_error(&text, 4, 24, &format!("u8[1048576,1048576] has 1099511627776 elements, {LIMIT}"));
}

// ---- StableHLO (MLIR text) ----

fn mlir(args: &str, result: &str, body: &str) -> String {
    format!("func.func @main({args}) -> {result} {{\n{body}}}\n")
}

#[test]
fn mlir_iota_of_1e11_elements() {
    let text = mlir(
        "",
        "tensor<100000000000xi32>",
        "  %0 = stablehlo.iota dim = 0 : tensor<100000000000xi32>\n  return %0 : tensor<100000000000xi32>\n",
    );
    assert_parse_error(&text, 1, 22, &format!("s32[100000000000] has 100000000000 elements, {LIMIT}"));
}

#[test]
fn mlir_shape_of_2_to_the_64_elements() {
    let ty = "tensor<65536x65536x65536x65536xf32>";
    let text = mlir(&format!("%a: {ty}"), ty, &format!("  %0 = stablehlo.negate %a : {ty}\n  return %0 : {ty}\n"));
    assert_parse_error(&text, 1, 21, &format!("f32[65536,65536,65536,65536] has 1.8e19 elements, {LIMIT}"));
}

#[test]
fn mlir_pad_to_2_to_the_63_elements() {
    let big = "tensor<9223372036854775807xf32>";
    let body = format!(
        "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n  %0 = stablehlo.pad %a, %z, low = [0], high = \
         [9223372036854775805], interior = [0] : (tensor<2xf32>, tensor<f32>) -> {big}\n  return %0 : {big}\n"
    );
    let text = mlir("%a: tensor<2xf32>", "tensor<2xf32>", &body);
    assert_parse_error(&text, 3, 120, &format!("f32[9223372036854775807] has 9223372036854775807 elements, {LIMIT}"));
}

#[test]
fn mlir_broadcast_to_9e18_elements() {
    let big = "tensor<3000000000x3000000000xf32>";
    let body =
        format!("  %0 = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> {big}\n  return %0 : {big}\n");
    let text = mlir("%a: tensor<f32>", "tensor<f32>", &body);
    assert_parse_error(&text, 2, 68, &format!("f32[3000000000,3000000000] has 9000000000000000000 elements, {LIMIT}"));
}

#[test]
fn mlir_argument_number_far_past_the_arguments() {
    // StableHLO has no parameter numbers; the nearest thing, an argument name with a
    // huge number, is an unknown value like any other.
    let text = mlir(
        "%arg0: tensor<2xf32>",
        "tensor<2xf32>",
        "  %0 = stablehlo.negate %arg4000000000 : tensor<2xf32>\n  return %0 : tensor<2xf32>\n",
    );
    let e = parse_err(&text);
    assert_eq!((e.line, e.col), (2, 25), "{e}");
    assert!(e.message.contains("%arg4000000000"), "{e}");
}

// ---- Modules built directly: no reader, no verifier ----

/// A module whose entry computes `root_op` over parameters of `params` types, each
/// instruction at line `10 + i`, column 3; the root declared as `ty`.
fn built(params: &[Type], extra: Vec<(Op, Vec<usize>, Type)>) -> Module {
    let mut m = Module::new("built");
    let mut c = hloscope_core::ir::Computation::new("main");
    let mut ids = Vec::new();
    for (i, t) in params.iter().enumerate() {
        ids.push(c.push_param(format!("p{i}"), t.clone(), Loc::at(10 + i as u32, 3)));
    }
    for (op, operands, ty) in extra {
        let n = ids.len();
        let operands = operands.iter().map(|&o| ids[o]).collect();
        ids.push(c.push(Instruction { name: format!("i{n}"), op, operands, ty, loc: Loc::at(10 + n as u32, 3) }));
    }
    c.root = *ids.last().unwrap();
    m.entry = m.add_computation(c);
    m
}

fn f32s(dims: &[i64]) -> Type {
    Type::array(ElementType::F32, dims)
}

/// The four oversized modules, each with the instruction, line and message its error
/// must carry.
fn oversized() -> Vec<(&'static str, Module, &'static str, u32, String)> {
    let scalar_zero = || Op::Constant(Literal::scalar_f64(ElementType::F32, 0.0));
    vec![
        (
            "negate of f32[65536,65536,65536,65536]",
            built(&[f32s(&[65536; 4])], vec![(Op::Unary(UnaryOp::Neg), vec![0], f32s(&[65536; 4]))]),
            "p0",
            10,
            format!("f32[65536,65536,65536,65536] has 1.8e19 elements, {LIMIT}"),
        ),
        (
            "iota of 1e11",
            built(&[], vec![(Op::Iota { dim: 0 }, vec![], Type::array(ElementType::S32, vec![100_000_000_000]))]),
            "i0",
            10,
            format!("s32[100000000000] has 100000000000 elements, {LIMIT}"),
        ),
        (
            "pad to 2^63 - 1",
            built(
                &[f32s(&[2])],
                vec![
                    (scalar_zero(), vec![], f32s(&[])),
                    (
                        Op::Pad { low: vec![0], high: vec![i64::MAX - 2], interior: vec![0] },
                        vec![0, 1],
                        f32s(&[i64::MAX]),
                    ),
                ],
            ),
            "i2",
            12,
            format!("f32[9223372036854775807] has 9223372036854775807 elements, {LIMIT}"),
        ),
        (
            "broadcast to 9e18",
            built(
                &[],
                vec![
                    (scalar_zero(), vec![], f32s(&[])),
                    (Op::BroadcastInDim { dims: vec![] }, vec![0], f32s(&[3_000_000_000, 3_000_000_000])),
                ],
            ),
            "i1",
            11,
            format!("f32[3000000000,3000000000] has 9000000000000000000 elements, {LIMIT}"),
        ),
    ]
}

#[test]
fn built_modules_fail_the_verifier_with_the_instruction_and_its_place() {
    for (what, m, inst, line, message) in oversized() {
        let e = hloscope_core::verify::verify(&m).expect_err(what);
        assert_eq!((e.inst.as_str(), e.loc.clone(), e.message.as_str()), (inst, Loc::at(line, 3), message.as_str()));
        assert_eq!(e.to_string(), format!("{line}:3: in main, %{inst}: {message}"), "{what}");
        let e = check_module(&m, &Limits::default()).expect_err(what);
        assert_eq!(e.to_string(), format!("{line}:3: %{inst}: {message}"), "{what}");
    }
}

#[test]
fn built_modules_fail_the_interpreter_before_allocating() {
    for (what, m, inst, line, message) in oversized() {
        // The limit comes before the arity check: no arguments could be made anyway.
        let e = hloscope_core::interp::Interpreter::new(&m).run(&[]).expect_err(what);
        assert_eq!((e.inst.as_str(), e.loc.line, e.message.as_str()), (inst, line, message.as_str()), "{what}");
        assert_eq!(hloscope_core::interp::random_inputs(&m, 0).len(), 0, "{what}");
        let e = hloscope_core::interp::try_random_inputs(&m, 0).expect_err(what);
        assert_eq!(e.message, message, "{what}");
    }
}

#[test]
fn built_modules_fail_costing_and_never_wrap() {
    let profile = hloscope_core::cost::profiles::H100_SXM;
    for (what, m, inst, _, message) in oversized() {
        let e = hloscope_core::cost::try_module_cost(&m, &profile).expect_err(what);
        assert_eq!((e.inst.as_str(), e.message.as_str()), (inst, message.as_str()), "{what}");
        // The unchecked cost saturates: a result past 2^64 bytes costs every byte there
        // is, not the 0 bytes of a wrapped product.
        let root = m.entry_comp().root_inst();
        let bytes = root.ty.checked_byte_size().unwrap_or(u64::MAX);
        let c = hloscope_core::cost::module_cost(&m, &profile);
        let last = c.kernels.last().expect("the root is a kernel");
        assert_eq!(last.bytes_written, bytes, "{what}");
        assert!(c.bytes_moved >= bytes, "{what}");
        assert_eq!(hloscope_core::passes::buffers::peak_bytes(&m), bytes.min(i64::MAX as u64), "{what}");
    }
}

#[test]
fn sizes_that_overflowed_saturate() {
    // The three cases that wrapped: 2^64 elements, 2^63 f32s, 9e18 f32s.
    let bytes: Vec<Option<u64>> =
        oversized().iter().map(|(_, m, ..)| m.entry_comp().root_inst().ty.checked_byte_size()).collect();
    assert_eq!(bytes, [None, Some(400_000_000_000), None, None]);
}

#[test]
fn built_modules_fail_the_pipeline_and_the_kernel_plan() {
    use hloscope_core::passes::pipeline::{run_pipeline, PipelineConfig, PipelineError};
    for (what, m, inst, line, message) in oversized() {
        let mut copy = m.clone();
        match run_pipeline(&mut copy, &PipelineConfig::default()) {
            Err(PipelineError::Limit(e)) => assert_eq!((e.inst.as_str(), e.message.as_str()), (inst, message.as_str())),
            other => panic!("{what}: the pipeline should refuse the module, got {other:?}"),
        }
        let e = hloscope_core::kernel::plan(&m).expect_err(what);
        assert_eq!(e, format!("{line}:3: %{inst}: {message}"), "{what}");
    }
}

#[cfg(feature = "cpu")]
#[test]
fn built_modules_fail_the_cpu_target() {
    use hloscope_core::targets::cpu;
    for (what, m, inst, line, message) in oversized() {
        let e = cpu::compile(&m).err().expect(what);
        assert_eq!(e, format!("{line}:3: %{inst}: {message}"), "{what}");
        let e = cpu::compile_to_artifact(&m).err().expect(what);
        assert_eq!(e, format!("{line}:3: %{inst}: {message}"), "{what}");
        let e = cpu::optimize(&m).expect_err(what);
        assert_eq!(e, format!("{line}:3: %{inst}: {message}"), "{what}");
    }
}

#[cfg(feature = "cpu")]
#[test]
fn a_convolution_whose_patches_are_over_the_limit_is_interpreted() {
    // 1x1x4096x4096 input, 64x64 window, 1 feature: the operands and the output are
    // small enough, the im2col patches (4033^2 positions x 4096 taps, 6.7e10 elements)
    // are not. The plan interprets the convolution instead of sizing them.
    let text = "HloModule m\n\nENTRY main {\n  x = f32[1,1,4096,4096]{3,2,1,0} parameter(0)\n  \
                k = f32[1,1,64,64]{3,2,1,0} parameter(1)\n  ROOT c = f32[1,1,4033,4033]{3,2,1,0} convolution(x, k), \
                window={size=64x64}, dim_labels=bf01_oi01->bf01\n}\n";
    let m = parse::parse_module(text).unwrap();
    hloscope_core::verify::verify(&m).unwrap();
    let plan = hloscope_core::kernel::plan(&m).unwrap();
    let summary = plan.summary();
    assert!(
        summary.contains("opaque (interpreted: im2col patches: f32[1,16265089,4096] has 66621804544 elements, more than the limit of 536870912)"),
        "{summary}"
    );
}

#[test]
fn check_module_takes_a_server_s_own_limits() {
    // Three arrays of 1 MiB each: within the defaults, over tighter limits.
    let m = built(
        &[f32s(&[512, 512])],
        vec![
            (Op::Unary(UnaryOp::Neg), vec![0], f32s(&[512, 512])),
            (Op::Binary(BinaryOp::Add), vec![0, 1], f32s(&[512, 512])),
        ],
    );
    hloscope_core::verify::verify(&m).unwrap();
    check_module(&m, &Limits::default()).unwrap();
    let elements = Limits { max_elements: 1000, ..Limits::default() };
    assert_eq!(
        check_module(&m, &elements).unwrap_err().to_string(),
        "10:3: %p0: f32[512,512] has 262144 elements, more than the limit of 1000"
    );
    let bytes = Limits { max_total_bytes: 2 << 20, ..Limits::default() };
    assert_eq!(
        check_module(&m, &bytes).unwrap_err().to_string(),
        "12:3: %i2: the results of the module's instructions up to this one total 3145728 bytes (3.0 MiB), more than \
         the limit of 2097152 bytes (2.0 MiB)"
    );
    let count = Limits { max_instructions: 2, ..Limits::default() };
    assert_eq!(
        check_module(&m, &count).unwrap_err().to_string(),
        "12:3: %i2: the module has more than 2 instructions, the limit"
    );
    // Tuples alias their elements: a tuple of the three is not counted again.
    let mut t = m.clone();
    let e = t.entry;
    let ids = t.comp(e).order.clone();
    let tuple_ty = Type::Tuple(vec![f32s(&[512, 512]); 3]);
    let root = t.comp_mut(e).push(Instruction {
        name: "t".into(),
        op: Op::Tuple,
        operands: ids,
        ty: tuple_ty,
        loc: Loc::at(13, 3),
    });
    t.comp_mut(e).root = root;
    let just_enough = Limits { max_total_bytes: 3 << 20, ..Limits::default() };
    check_module(&t, &just_enough).unwrap();
}

#[test]
fn modules_within_the_limits_still_run() {
    // The checks must not refuse ordinary programs: a parsed module runs on the
    // interpreter and costs what its arrays hold.
    let text = hlo("  p = f32[3]{0} parameter(0)\n  ROOT n = f32[3]{0} negate(p)\n");
    let m = parse::parse_module(&text).unwrap();
    hloscope_core::verify::verify(&m).unwrap();
    let args = hloscope_core::interp::try_random_inputs(&m, 7).unwrap();
    let x = args[0].as_array().unwrap().clone();
    let out = hloscope_core::interp::run(&m, &args).unwrap();
    let y = out.as_array().unwrap();
    for i in 0..3 {
        assert_eq!(y.get(i).as_f64(), -x.get(i).as_f64());
    }
    let c = hloscope_core::cost::try_module_cost(&m, &hloscope_core::cost::profiles::H100_SXM).unwrap();
    assert_eq!(c.bytes_moved, 24);
}

#[test]
fn ranks_and_tuple_nesting_past_the_limits() {
    // Rank 20000 of ones: one element, but a loop per dimension in generated code
    // (the CPU target ran for minutes) and a recursion per dimension in literal lists.
    let ones = vec!["1"; 20000].join(",");
    let text = hlo(&format!("  p = f32[{ones}] parameter(0)\n  ROOT n = f32[{ones}] negate(p)\n"));
    assert_parse_error(&text, 4, 7, "f32 array of rank 20000 has more dimensions than the limit of 64");
    let ty = format!("tensor<{}f32>", "1x".repeat(20000));
    let text = mlir(&format!("%a: {ty}"), &ty, &format!("  return %a : {ty}\n"));
    assert_parse_error(&text, 1, 21, "f32 array of rank 20000 has more dimensions than the limit of 64");
    // Rank 64 is still fine.
    let ones = vec!["1"; 64].join(",");
    let text = hlo(&format!("  p = f32[{ones}] parameter(0)\n  ROOT n = f32[{ones}] negate(p)\n"));
    hloscope_core::verify::verify(&parse::parse_module(&text).unwrap()).unwrap();
    // Tuples nested two million deep overflowed the reader's stack.
    let deep = hlo(&format!("  ROOT p = {}f32[]{} parameter(0)\n", "(".repeat(2_000_000), ")".repeat(2_000_000)));
    assert_parse_error(&deep, 4, 212, "tuple types nested deeper than 200 levels");
    let nested = hlo(&format!("  ROOT p = {}f32[]{} parameter(0)\n", "(".repeat(200), ")".repeat(200)));
    parse::parse_module(&nested).unwrap();
}

/// A 4x4 input, a 1e9 x 1e9 window padded to fit: a result of one element, whose one
/// sum ran over 1e18 positions (both targets looped for good; the cost model said
/// 1e18 FLOPs). The window's positions are capped like an array's elements.
#[test]
fn reduce_window_with_a_window_of_1e18_positions() {
    let message =
        "the window [1000000000, 1000000000] has 1000000000000000000 positions, more than the limit of 536870912";
    let text = "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n\
                ENTRY main {\n  x = f32[4,4]{1,0} parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[1,1]{1,0} \
                reduce-window(x, z), window={size=1000000000x1000000000 pad=0_999999996x0_999999996}, to_apply=add\n}\n";
    let e = hloscope_core::verify::verify(&parse::parse_module(text).unwrap()).unwrap_err();
    assert_eq!(e.to_string(), format!("12:8: in main, %r: {message}"));
    let text = "func.func @main(%x: tensor<4x4xf32>) -> tensor<1x1xf32> {\n  %z = stablehlo.constant dense<0.0> : \
                tensor<f32>\n  %r = \"stablehlo.reduce_window\"(%x, %z) ({\n    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n      \
                %s = stablehlo.add %a, %b : tensor<f32>\n      stablehlo.return %s : tensor<f32>\n  }) {\n    \
                padding = dense<[[0, 999999996], [0, 999999996]]> : tensor<2x2xi64>,\n    window_dimensions = \
                array<i64: 1000000000, 1000000000>\n  } : (tensor<4x4xf32>, tensor<f32>) -> tensor<1x1xf32>\n  \
                return %r : tensor<1x1xf32>\n}\n";
    let m = parse::parse_module(text).unwrap();
    let e = hloscope_core::verify::verify(&m).unwrap_err();
    assert_eq!((e.loc.line, e.loc.col, e.message.as_str()), (3, 8, message));
    // And on the targets, for a module nobody verified.
    let e = hloscope_core::interp::Interpreter::new(&m).run(&[]).unwrap_err();
    assert_eq!(e.message, message);
    assert!(hloscope_core::kernel::plan(&m).unwrap_err().ends_with(message));
}

/// Attributes far past any dimension while the result stays small: a pad whose
/// negative low padding cancels an interior padding of 2^63 - 1 (`low + i * (interior
/// + 1)` overflowed in the interpreter and the kernel plan), a slice with a stride of
/// 2^63 - 1 (`limit - start + stride - 1` overflowed in the interpreter).
#[test]
fn attributes_beyond_any_dimension() {
    let pad = "pad padding -9223372036854775807 is beyond the limit of ±536870912";
    let text = hlo("  x = f32[2]{0} parameter(0)\n  z = f32[] constant(0)\n  ROOT p = f32[2]{0} pad(x, z), \
                    padding=-9223372036854775807_0_9223372036854775807\n");
    let e = hloscope_core::verify::verify(&parse::parse_module(&text).unwrap()).unwrap_err();
    assert_eq!(e.to_string(), format!("6:8: in main, %p: {pad}"));
    let text = mlir(
        "%a: tensor<2xf32>",
        "tensor<2xf32>",
        "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n  %0 = stablehlo.pad %a, %z, low = \
         [-9223372036854775807], high = [0], interior = [9223372036854775807] : (tensor<2xf32>, tensor<f32>) -> \
         tensor<2xf32>\n  return %0 : tensor<2xf32>\n",
    );
    let m = parse::parse_module(&text).unwrap();
    let e = hloscope_core::verify::verify(&m).unwrap_err();
    assert_eq!((e.loc.line, e.loc.col, e.message.as_str()), (3, 8, pad));
    // Unverified, on each target.
    assert_eq!(hloscope_core::interp::Interpreter::new(&m).run(&[]).unwrap_err().message, pad);
    assert!(hloscope_core::kernel::plan(&m).unwrap_err().ends_with(pad));

    let slice = "slice stride 9223372036854775807 is beyond the limit of ±536870912";
    let text = hlo("  x = f32[4]{0} parameter(0)\n  ROOT s = f32[1]{0} slice(x), slice={[0:4:9223372036854775807]}\n");
    let e = hloscope_core::verify::verify(&parse::parse_module(&text).unwrap()).unwrap_err();
    assert_eq!(e.to_string(), format!("5:8: in main, %s: {slice}"));
    let text = mlir(
        "%a: tensor<4xf32>",
        "tensor<1xf32>",
        "  %0 = stablehlo.slice %a [0:4:9223372036854775807] : (tensor<4xf32>) -> tensor<1xf32>\n  return %0 : \
         tensor<1xf32>\n",
    );
    let e = hloscope_core::verify::verify(&parse::parse_module(&text).unwrap()).unwrap_err();
    assert_eq!((e.loc.line, e.loc.col, e.message.as_str()), (2, 8, slice));
    // A stride past the dimension but within the limit means "one element": still fine.
    let text = hlo("  x = f32[4]{0} parameter(0)\n  ROOT s = f32[1]{0} slice(x), slice={[1:4:1000]}\n");
    let m = parse::parse_module(&text).unwrap();
    hloscope_core::verify::verify(&m).unwrap();
    let args = hloscope_core::interp::try_random_inputs(&m, 3).unwrap();
    let y = hloscope_core::interp::run(&m, &args).unwrap();
    assert_eq!(y.as_array().unwrap().get(0), args[0].as_array().unwrap().get(1));
}

#[test]
fn lifted_limits_never_overflow_either() {
    // A caller may lift every limit; sizes then saturate instead of wrapping.
    let unlimited =
        Limits { max_elements: u64::MAX, max_total_bytes: u64::MAX, max_instructions: u64::MAX, max_rank: usize::MAX };
    let big = Shape::new(ElementType::F64, vec![1 << 31, 1 << 31]);
    assert_eq!(unlimited.check_shape(&big), Ok(u64::MAX));
    let m = built(&[Type::Array(big.clone())], vec![(Op::Unary(UnaryOp::Neg), vec![0], Type::Array(big))]);
    check_module(&m, &unlimited).unwrap();
    // Past 64 bits is refused whatever the limits.
    assert!(unlimited.check_shape(&Shape::new(ElementType::F32, vec![65536; 4])).is_err());
}
