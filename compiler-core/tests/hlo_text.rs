//! XLA HLO text: the parser on hand-written texts for each attribute form and on real
//! XLA dumps (`tests/hlo_samples/*.hlo`, made by `make.py`), the printer, and the round
//! trip parse -> print -> parse.

use hloscope_core::ir::*;
use hloscope_core::parse::hlo::parse;
use hloscope_core::print::hlo::{print_module, print_module_with, PrintOptions};

fn samples() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hlo_samples");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlo"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    out
}

/// Replaces each called computation's debug id (`comp3`) in `s` by its name.
fn name_comps(m: &Module, op: &Op, s: String) -> String {
    let mut out = s;
    for c in op.called_computations() {
        let id = format!("{c:?}");
        let mut res = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(&id) {
            let after = &rest[i + id.len()..];
            res.push_str(&rest[..i]);
            if after.starts_with(|ch: char| ch.is_ascii_digit()) {
                res.push_str(&id);
            } else {
                res.push_str(&format!("@{}", m.comp(c).name));
            }
            rest = after;
        }
        res.push_str(rest);
        out = res;
    }
    out
}

/// A canonical listing of a module: computations in post order; per instruction its name,
/// op with attributes (computations by name, constants by bit pattern), operands by name,
/// type with layout, and recorded source.
fn describe(m: &Module) -> Vec<String> {
    let mut out = vec![format!("module {}", m.name)];
    for c in m.post_order() {
        let comp = m.comp(c);
        let params: Vec<&str> = comp.params.iter().map(|&p| comp.inst(p).name.as_str()).collect();
        out.push(format!("comp {} entry={} params={params:?} root={}", comp.name, c == m.entry, comp.root_inst().name));
        for &id in &comp.order {
            let inst = comp.inst(id);
            let op = match &inst.op {
                Op::Constant(l) => {
                    let bits: Vec<u64> = (0..l.num_elements()).map(|i| l.bits(i)).collect();
                    format!("Constant({} {bits:?})", l.shape)
                }
                op => name_comps(m, op, format!("{op:?}")),
            };
            let operands: Vec<&str> = inst.operands.iter().map(|&o| comp.inst(o).name.as_str()).collect();
            out.push(format!("  {} = {} {op} {operands:?} {:?}", inst.name, inst.ty, inst.loc.source));
        }
    }
    out
}

/// parse -> print -> parse gives the same module, and printing again the same text.
fn assert_round_trip(name: &str, text: &str) -> Module {
    let m1 = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let t1 = print_module(&m1);
    let m2 = parse(&t1).unwrap_or_else(|e| panic!("{name}: printed text does not parse: {e}\n{t1}"));
    let (d1, d2) = (describe(&m1), describe(&m2));
    for (a, b) in d1.iter().zip(&d2) {
        assert_eq!(a, b, "{name}: round trip changed a line");
    }
    assert_eq!(d1.len(), d2.len(), "{name}: round trip changed the instruction count");
    assert_eq!(print_module(&m2), t1, "{name}: printing is not a fixpoint");
    m1
}

fn entry_inst<'m>(m: &'m Module, name: &str) -> &'m Instruction {
    let e = m.entry_comp();
    e.order.iter().map(|&i| e.inst(i)).find(|i| i.name == name).unwrap_or_else(|| panic!("no {name}"))
}

fn wrap(body: &str) -> String {
    format!("HloModule m\n\nENTRY %main {{\n{body}\n}}\n")
}

#[test]
fn real_xla_dumps_parse_and_round_trip() {
    let all = samples();
    assert!(all.len() >= 12, "expected the fixtures made by make.py");
    for (name, text) in &all {
        let m = assert_round_trip(name, text);
        assert!(m.instruction_count() > 3, "{name}");
    }
}

#[test]
fn real_dump_structure() {
    let all = samples();
    let get = |n: &str| parse(&all.iter().find(|(f, _)| f == n).unwrap().1).unwrap();

    // cond: conditional with an s32 selector and one tuple operand per branch.
    let m = get("cond.hlo");
    let e = m.entry_comp();
    let cond = e.order.iter().map(|&i| e.inst(i)).find(|i| matches!(i.op, Op::Case { .. })).unwrap();
    let Op::Case { branches, branch_operands } = &cond.op else { unreachable!() };
    assert_eq!(branches.len(), 2);
    assert_eq!(branch_operands, &vec![vec![0], vec![1]]);
    assert_eq!(cond.operands.len(), 3);
    assert_eq!(m.comp(branches[0]).name, "region_0.1");
    assert_eq!(cond.ty.to_string(), "(f32[3]{0})");

    // while_loop: one tuple operand, cond and body with one tuple parameter.
    let m = get("while_loop.hlo");
    let w = m
        .comps
        .values()
        .flat_map(|c| c.order.iter().map(move |&i| c.inst(i)))
        .find(|i| matches!(i.op, Op::While { .. }))
        .unwrap();
    let Op::While { cond, body } = w.op else { unreachable!() };
    assert_eq!(w.operands.len(), 1);
    assert_eq!(m.comp(cond).params.len(), 1);
    assert_eq!(m.comp(body).root_inst().ty.to_string(), "(s32[], f32[4]{0})");

    // sort: two operands, stable, comparator with four scalar parameters.
    let m = get("sort.hlo");
    let root = m.entry_comp().root_inst();
    let Op::Sort { dim: 0, stable: true, comparator } = root.op else { panic!("{:?}", root.op) };
    assert_eq!(m.comp(comparator).params.len(), 4);

    // conv: window and dim_labels.
    let m = get("conv_relu_maxpool.hlo");
    let conv = m
        .comps
        .values()
        .flat_map(|c| c.order.iter().map(move |&i| c.inst(i)))
        .find(|i| matches!(i.op, Op::Convolution(_)))
        .unwrap();
    let Op::Convolution(cv) = &conv.op else { unreachable!() };
    assert_eq!(cv.padding, vec![(1, 1), (1, 1)]);
    assert_eq!((cv.dims.input_batch, cv.dims.input_feature, cv.dims.input_spatial.clone()), (0, 3, vec![1, 2]));
    assert_eq!((cv.dims.kernel_input_feature, cv.dims.kernel_output_feature), (2, 3));

    // Metadata with stack frames resolves to the file and line of make.py.
    let m = get("mlp_gelu.hlo");
    let root = m.entry_comp().root_inst();
    let src = root.loc.source.as_deref().unwrap();
    let make_py =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hlo_samples/make.py"))
            .unwrap();
    let line = make_py.lines().position(|l| l.trim() == "return h @ w2 + b2").unwrap() + 1;
    assert_eq!(src, format!("jit(mlp_gelu)/add @ make.py:{line}"));
    assert_eq!(m.entry_comp().name, "main.1");
    assert!(matches!(root.op, Op::Fusion { kind: FusionKind::Loop, .. }));
}

#[test]
fn header_signatures_sigils_and_operand_shapes() {
    // Old style: no `%`, operands printed with shapes, signature in the header.
    let text = "HloModule old, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}\n\n\
        add_f (a: f32[], b: f32[]) -> f32[] {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(f32[] a, f32[] b)\n}\n\n\
        ENTRY main (x: f32[2,3]) -> f32[2,3] {\n  x = f32[2,3]{1,0} parameter(0)\n  \
        ROOT n = f32[2,3]{1,0} negate(f32[2,3]{1,0} x), metadata={op_name=\"jit(f)/neg\" source_file=\"x.py\" source_line=3}\n}\n";
    let m = assert_round_trip("old", text);
    assert_eq!(m.name, "old");
    let n = entry_inst(&m, "n");
    assert_eq!(n.op, Op::Unary(UnaryOp::Neg));
    assert_eq!(n.loc.source.as_deref(), Some("jit(f)/neg @ x.py:3"));
    assert_eq!((n.loc.line, n.loc.col), (11, 8));
    assert_eq!(n.ty.as_array().unwrap().layout, Some(vec![1, 0]));
    let printed = print_module(&m);
    assert!(printed.contains("metadata={op_name=\"jit(f)/neg\" source_file=\"x.py\" source_line=3}"), "{printed}");
    // Source locations as the MLIR parser records them (`name @ file:line:col`).
    let mut m2 = m.clone();
    let e = m2.entry;
    let root = m2.comp(e).root;
    m2.comp_mut(e).inst_mut(root).loc.source = Some("add @ f.py:3:7".into());
    let p = m2.comp(e).params[0];
    m2.comp_mut(e).inst_mut(p).loc.source = Some("f.py:1:2".into());
    let text2 = print_module(&m2);
    assert!(text2.contains("metadata={op_name=\"add\" source_file=\"f.py\" source_line=3 source_column=7}"), "{text2}");
    assert!(text2.contains("metadata={source_file=\"f.py\" source_line=1 source_column=2}"), "{text2}");
    let back = parse(&text2).unwrap();
    assert_eq!(back.entry_comp().root_inst().loc.source.as_deref(), Some("add @ f.py:3:7"));
    assert_eq!(back.entry_comp().inst(back.entry_comp().params[0]).loc.source.as_deref(), Some("f.py:1:2"));
    let bare = print_module_with(&m, &PrintOptions { metadata: false });
    assert!(!bare.contains("metadata"));
    // The unreachable add_f is not printed; the entry comes last.
    assert!(printed.ends_with("ROOT %n = f32[2,3]{1,0} negate(%x), metadata={op_name=\"jit(f)/neg\" source_file=\"x.py\" source_line=3}\n}\n"), "{printed}");
}

#[test]
fn layouts_tiling_tuples_and_comments() {
    let m = assert_round_trip(
        "layouts",
        &wrap(
            "  %p = (f32[2,3]{0,1:T(8,128)}, s32[], /*index=2*/pred[4]{0}) parameter(0)\n  \
             %g = f32[2,3]{0,1} get-tuple-element(%p), index=0\n  \
             %t = token[] after-all()\n  \
             ROOT %r = (f32[2,3]{0,1}, token[]) tuple(%g, %t)",
        ),
    );
    let p = entry_inst(&m, "p");
    let Type::Tuple(ts) = &p.ty else { panic!() };
    assert_eq!(ts[0].as_array().unwrap().layout, Some(vec![0, 1]));
    assert_eq!(ts[2].to_string(), "pred[4]{0}");
    assert_eq!(entry_inst(&m, "g").op, Op::GetTupleElement { index: 0 });
}

#[test]
fn constants_in_literal_syntax() {
    let m = assert_round_trip(
        "constants",
        &wrap(
            "  %a = s32[2,2]{1,0} constant({ {1, 2}, {3, 4} })\n  %b = f32[] constant(-inf)\n  \
             %c = f32[3]{0} constant({nan, -nan, 0.1})\n  %d = pred[2]{0} constant({true, false})\n  \
             %e = f64[] constant(1e-300)\n  %f = bf16[2]{0} constant({0.1, 3.5})\n  \
             %g = u64[] constant(18446744073709551615)\n  %h = s8[] constant(-128)\n  \
             %i = f32[0]{0} constant({})\n  %j = f16[] constant(65504)\n  %k = f32[] constant(-0)\n  \
             %l = f32[] constant(nan(0x400001))\n  %m = f32[] constant(3.4028235e+38)\n  \
             ROOT %t = (s32[2,2]{1,0}, f32[]) tuple(%a, %b)",
        ),
    );
    let lit = |n: &str| match &entry_inst(&m, n).op {
        Op::Constant(l) => l.clone(),
        op => panic!("{op:?}"),
    };
    assert_eq!(lit("a").data, Data::S(vec![1, 2, 3, 4]));
    assert_eq!(lit("b").data, Data::F(vec![f64::NEG_INFINITY]));
    let c = lit("c");
    assert_eq!(c.bits(0), 0x7fc0_0000);
    assert_eq!(c.bits(1), 0xffc0_0000);
    assert_eq!(c.bits(2), 0.1f32.to_bits() as u64);
    assert_eq!(lit("d").data, Data::Pred(vec![true, false]));
    assert_eq!(lit("e").data, Data::F(vec![1e-300]));
    assert_eq!(lit("f").data, Data::F(vec![0.10009765625, 3.5]));
    assert_eq!(lit("g").data, Data::U(vec![u64::MAX]));
    assert_eq!(lit("h").data, Data::S(vec![-128]));
    assert_eq!(lit("i").num_elements(), 0);
    assert_eq!(lit("j").data, Data::F(vec![65504.0]));
    assert_eq!(lit("k").bits(0), 0x8000_0000);
    assert_eq!(lit("l").bits(0), 0x7fc0_0001);
    assert_eq!(lit("m").data, Data::F(vec![f32::MAX as f64]));
    let printed = print_module(&m);
    for s in [
        "constant({ {1, 2}, {3, 4} })",
        "constant(-inf)",
        "constant({nan, -nan, 0.1})",
        "constant(1e-300)",
        "constant(nan(0x400001))",
        "constant(-0)",
    ] {
        assert!(printed.contains(s), "{s} not in\n{printed}");
    }
}

#[test]
fn shape_op_attributes() {
    let m = assert_round_trip(
        "shape ops",
        &wrap(
            "  %x = f32[4,6]{1,0} parameter(0)\n  %z = f32[] constant(0)\n  \
             %s = f32[2,3]{1,0} slice(%x), slice={[0:2], [1:6:2]}\n  \
             %p = f32[5,13]{1,0} pad(%x, %z), padding=0_1x1_2_1\n  \
             %n = f32[2,2]{1,0} pad(%s, %z), padding=0_0x-1_0\n  \
             %b = f32[3,4,6]{2,1,0} broadcast(%x), dimensions={1,2}\n  \
             %t = f32[6,4]{0,1} transpose(%x), dimensions={1,0}\n  \
             %r = f32[4,6]{1,0} reverse(%x), dimensions={0}\n  \
             %c = f32[8,6]{1,0} concatenate(%x, %x), dimensions={0}\n  \
             %i = s32[] constant(1)\n  \
             %ds = f32[2,2]{1,0} dynamic-slice(%x, %i, %i), dynamic_slice_sizes={2,2}\n  \
             %dus = f32[4,6]{1,0} dynamic-update-slice(%x, %ds, %i, %i)\n  \
             %io = s32[4,6]{1,0} iota(), iota_dimension=1\n  \
             %rs = f32[24]{0} reshape(%x)\n  %bc = f32[6,4]{1,0} bitcast(%t)\n  %cp = f32[4,6]{0,1} copy(%x)\n  \
             ROOT %out = (f32[2,3]{1,0}, f32[5,13]{1,0}) tuple(%s, %p)",
        ),
    );
    assert_eq!(entry_inst(&m, "s").op, Op::Slice { start: vec![0, 1], limit: vec![2, 6], stride: vec![1, 2] });
    assert_eq!(entry_inst(&m, "p").op, Op::Pad { low: vec![0, 1], high: vec![1, 2], interior: vec![0, 1] });
    assert_eq!(entry_inst(&m, "n").op, Op::Pad { low: vec![0, -1], high: vec![0, 0], interior: vec![0, 0] });
    assert_eq!(entry_inst(&m, "b").op, Op::BroadcastInDim { dims: vec![1, 2] });
    assert_eq!(entry_inst(&m, "t").op, Op::Transpose { perm: vec![1, 0] });
    assert_eq!(entry_inst(&m, "r").op, Op::Reverse { dims: vec![0] });
    assert_eq!(entry_inst(&m, "c").op, Op::Concatenate { dim: 0 });
    assert_eq!(entry_inst(&m, "ds").op, Op::DynamicSlice { sizes: vec![2, 2] });
    assert_eq!(entry_inst(&m, "dus").op, Op::DynamicUpdateSlice);
    assert_eq!(entry_inst(&m, "io").op, Op::Iota { dim: 1 });
    assert_eq!(entry_inst(&m, "bc").op, Op::Bitcast);
    assert_eq!(entry_inst(&m, "cp").op, Op::Copy);
}

#[test]
fn dot_conv_window_attributes() {
    let m = assert_round_trip(
        "dot conv",
        &wrap(
            "  %a = f32[2,3,4]{2,1,0} parameter(0)\n  %b = f32[2,4,5]{2,1,0} parameter(1)\n  \
             %d = f32[2,3,5]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={default,default}\n  \
             %img = f32[1,8,8,4]{3,2,1,0} parameter(2)\n  %k = f32[3,3,2,8]{3,2,1,0} parameter(3)\n  \
             %cv = f32[1,4,4,8]{3,2,1,0} convolution(%img, %k), window={size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=2\n  \
             %z = f32[] constant(0)\n  %x = f32[4,6]{1,0} parameter(4)\n  \
             %rw = f32[2,6]{1,0} reduce-window(%x, %z), window={size=2x1 stride=2x1 pad=0_0x0_0 lhs_dilate=1x1 rhs_dilate=1x1}, to_apply=%add\n  \
             ROOT %out = (f32[2,3,5]{2,1,0}, f32[1,4,4,8]{3,2,1,0}) tuple(%d, %cv)",
        )
        .replace(
            "ENTRY",
            "%add (p: f32[], q: f32[]) -> f32[] {\n  %p = f32[] parameter(0)\n  %q = f32[] parameter(1)\n  ROOT %s = f32[] add(%p, %q)\n}\n\nENTRY",
        ),
    );
    assert_eq!(
        entry_inst(&m, "d").op,
        Op::Dot(DotDims { lhs_batch: vec![0], rhs_batch: vec![0], lhs_contracting: vec![2], rhs_contracting: vec![1] })
    );
    let Op::Convolution(cv) = &entry_inst(&m, "cv").op else { panic!() };
    assert_eq!(cv.window_strides, vec![2, 2]);
    assert_eq!(cv.padding, vec![(1, 1), (0, 1)]);
    assert_eq!(cv.rhs_dilation, vec![2, 1]);
    assert_eq!(cv.window_reversal, vec![false, true]);
    assert_eq!(cv.feature_group_count, 2);
    assert_eq!(cv.batch_group_count, 1);
    assert_eq!(cv.dims.kernel_spatial, vec![0, 1]);
    assert_eq!((cv.dims.output_batch, cv.dims.output_feature), (0, 3));
    let Op::ReduceWindow(rw) = &entry_inst(&m, "rw").op else { panic!() };
    assert_eq!((rw.window_dims.clone(), rw.strides.clone()), (vec![2, 1], vec![2, 1]));
    assert_eq!(m.comp(rw.body).name, "add");
    let printed = print_module(&m);
    assert!(printed.contains(
        "window={size=3x3 stride=2x2 pad=1_1x0_1 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=2"
    ), "{printed}");
}

#[test]
fn gather_scatter_sort_attributes() {
    let text = "HloModule gs\n\n%add (p: f32[], q: f32[]) -> f32[] {\n  %p = f32[] parameter(0)\n  %q = f32[] parameter(1)\n  ROOT %s = f32[] add(%p, %q)\n}\n\n\
        %lt (a: f32[], b: f32[]) -> pred[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %c = pred[] compare(%a, %b), direction=LT, type=TOTALORDER\n}\n\n\
        ENTRY %main (t: f32[10,4], i: s32[3,1], u: f32[3,4]) -> f32[10,4] {\n  %t = f32[10,4]{1,0} parameter(0)\n  %i = s32[3,1]{1,0} parameter(1)\n  %u = f32[3,4]{1,0} parameter(2)\n  \
        %g = f32[3,4]{1,0} gather(%t, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=true\n  \
        %sc = f32[10,4]{1,0} scatter(%t, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=%add\n  \
        ROOT %so = f32[10,4]{1,0} sort(%sc), dimensions={1}, is_stable=true, to_apply=%lt\n}\n";
    let m = assert_round_trip("gs", text);
    let Op::Gather(g) = &entry_inst(&m, "g").op else { panic!() };
    assert_eq!(
        (g.offset_dims.clone(), g.collapsed_slice_dims.clone(), g.start_index_map.clone()),
        (vec![1], vec![0], vec![0])
    );
    assert_eq!((g.index_vector_dim, g.slice_sizes.clone(), g.indices_are_sorted), (1, vec![1, 4], true));
    let Op::Scatter(s) = &entry_inst(&m, "sc").op else { panic!() };
    assert_eq!((s.update_window_dims.clone(), s.inserted_window_dims.clone()), (vec![1], vec![0]));
    assert_eq!(
        (s.scatter_dims_to_operand_dims.clone(), s.unique_indices, s.indices_are_sorted),
        (vec![0], true, false)
    );
    let Op::Sort { dim: 1, stable: true, comparator } = entry_inst(&m, "so").op else { panic!() };
    assert_eq!(m.comp(comparator).root_inst().op, Op::Compare { dir: CmpDir::Lt, kind: Some(CmpKind::TotalOrder) });
}

#[test]
fn control_flow_and_misc_attributes() {
    let text = "HloModule cf\n\n%t (a: f32[]) -> f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n\n\
        %f (b: f32[]) -> f32[] {\n  %b = f32[] parameter(0)\n  ROOT %n = f32[] negate(%b)\n}\n\n\
        %c (s: (s32[], f32[])) -> pred[] {\n  %s = (s32[], f32[]) parameter(0)\n  %i = s32[] get-tuple-element(%s), index=0\n  %k = s32[] constant(3)\n  ROOT %lt = pred[] compare(%i, %k), direction=LT\n}\n\n\
        %fused (x: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  ROOT %e = f32[] exponential(%x)\n}\n\n\
        ENTRY %main (p: pred[], v: f32[]) -> f32[] {\n  %p = pred[] parameter(0)\n  %v = f32[] parameter(1)\n  \
        %cond = f32[] conditional(%p, %v, %v), true_computation=%t, false_computation=%f\n  \
        %zero = s32[] constant(0)\n  %tup = (s32[], f32[]) tuple(%zero, %cond)\n  \
        %w = (s32[], f32[]) while(%tup), condition=%c, body=%c2, backend_config={\"known_trip_count\":{\"n\":\"3\"}}\n  \
        %idx = s32[] get-tuple-element(%w), index=0\n  \
        %case = f32[] conditional(%idx, %v, %v, %v), branch_computations={%t, %f, %t}\n  \
        %fu = f32[] fusion(%case), kind=kLoop, calls=%fused, sharding={replicated}\n  \
        %cl = f32[] call(%fu), to_apply=%t, frontend_attributes={xla_cpu_small_call=\"true\"}\n  \
        %rp = f32[] reduce-precision(%cl), exponent_bits=5, mantissa_bits=10\n  \
        %st = u64[2]{0} constant({1, 2})\n  \
        %rb = (u64[2]{0}, u32[4]{0}) rng-bit-generator(%st), algorithm=rng_three_fry\n  \
        %cc = f32[] custom-call(%rp), custom_call_target=\"my_target\", custom_call_has_side_effect=true, api_version=API_VERSION_STATUS_RETURNING, backend_config=\"cfg \\\"q\\\"\"\n  \
        %cb = s32[] bitcast-convert(%cc)\n  %cvt = f32[] convert(%cb)\n  \
        %sel = f32[] select(%p, %cvt, %v)\n  %clp = f32[] clamp(%v, %sel, %v)\n  \
        %ob = f32[] opt-barrier(%clp)\n  \
        ROOT %r = f32[] add(%ob, %v), control-predecessors={%cl}\n}\n";
    let text = text.replace(
        "ENTRY",
        "%c2 (s2: (s32[], f32[])) -> (s32[], f32[]) {\n  %s2 = (s32[], f32[]) parameter(0)\n  %i2 = s32[] get-tuple-element(%s2), index=0\n  %one = s32[] constant(1)\n  %j = s32[] add(%i2, %one)\n  %y = f32[] get-tuple-element(%s2), index=1\n  ROOT %o = (s32[], f32[]) tuple(%j, %y)\n}\n\nENTRY",
    );
    let m = assert_round_trip("cf", &text);
    let Op::Case { branches, branch_operands } = &entry_inst(&m, "cond").op else { panic!() };
    assert_eq!((m.comp(branches[0]).name.as_str(), m.comp(branches[1]).name.as_str()), ("t", "f"));
    assert_eq!(branch_operands, &vec![vec![0], vec![1]]);
    let Op::Case { branches, .. } = &entry_inst(&m, "case").op else { panic!() };
    assert_eq!(branches.len(), 3);
    let Op::While { cond, body } = entry_inst(&m, "w").op else { panic!() };
    assert_eq!((m.comp(cond).name.as_str(), m.comp(body).name.as_str()), ("c", "c2"));
    assert!(matches!(entry_inst(&m, "fu").op, Op::Fusion { kind: FusionKind::Loop, .. }));
    assert!(matches!(entry_inst(&m, "cl").op, Op::Call { .. }));
    assert_eq!(entry_inst(&m, "rp").op, Op::ReducePrecision { exponent_bits: 5, mantissa_bits: 10 });
    assert_eq!(entry_inst(&m, "rb").op, Op::RngBitGenerator { algorithm: RngAlgorithm::ThreeFry });
    let Op::CustomCall(cc) = &entry_inst(&m, "cc").op else { panic!() };
    assert_eq!(cc.target, "my_target");
    assert!(cc.has_side_effect);
    assert_eq!(cc.backend_config, "cfg \"q\"");
    assert_eq!(cc.attrs, vec![("api_version".to_string(), "API_VERSION_STATUS_RETURNING".to_string())]);
    assert_eq!(entry_inst(&m, "ob").op, Op::OptimizationBarrier);
    let printed = print_module(&m);
    assert!(printed.contains("conditional(%p, %v, %v), true_computation=%t, false_computation=%f"), "{printed}");
    assert!(printed.contains("branch_computations={%t, %f, %t}"), "{printed}");
}

#[test]
fn non_canonical_case_operands_print_and_read_back() {
    let text = wrap("  %i = s32[] parameter(0)\n  %a = f32[] parameter(1)\n  ROOT %c = f32[] conditional(%i, %a, %a), branch_computations={%b0, %b1}, branch_operands={{0,1},{}}")
        .replace(
            "ENTRY",
            "%b0 (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\n\
             %b1 () -> f32[] {\n  ROOT %k = f32[] constant(1)\n}\n\nENTRY",
        );
    let m = assert_round_trip("case", &text);
    let Op::Case { branch_operands, .. } = &entry_inst(&m, "c").op else { panic!() };
    assert_eq!(branch_operands, &vec![vec![0, 1], vec![]]);
}

#[test]
fn order_independent_and_forward_references() {
    // The entry comes first and uses an instruction defined below it.
    let text = "HloModule fwd\n\nENTRY %main (x: f32[]) -> f32[] {\n  ROOT %r = f32[] map(%y), to_apply=%sq\n  %y = f32[] negate(%x)\n  %x = f32[] parameter(0)\n}\n\n\
        %sq (a: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  ROOT %m = f32[] multiply(%a, %a)\n}\n";
    let m = assert_round_trip("fwd", text);
    let e = m.entry_comp();
    let names: Vec<&str> = e.order.iter().map(|&i| e.inst(i).name.as_str()).collect();
    assert_eq!(names, vec!["x", "y", "r"]);
    assert_eq!(e.root_inst().name, "r");
    // fresh names never collide with parsed ones.
    let mut m = m;
    assert_eq!(m.fresh_name("add"), "add.0");
}

#[test]
fn errors_have_locations_and_never_panic() {
    let cases: &[(&str, (u32, u32), &str)] = &[
        ("HloModule m\nENTRY %e {\n  %x = f32[2] parameter(0)\n  ROOT %y = f32[2] all-reduce(%x), to_apply=%x\n}\n", (4, 20), "unsupported HLO op `all-reduce`"),
        ("HloModule m\nENTRY %e {\n  %x = c64[2] parameter(0)\n}\n", (3, 8), "unsupported element type `c64`"),
        ("HloModule m\nENTRY %e {\n  ROOT %y = f32[2] negate(%nope)\n}\n", (3, 27), "unknown operand `nope`"),
        ("HloModule m\nENTRY %e {\n  ROOT %y = f32[2] constant({1, 2, 3})\n}\n", (3, 29), "constant list has 3 entries"),
        ("HloModule m\nENTRY %e {\n  %x = f32[4] parameter(0)\n  ROOT %y = f32[2] slice(%x), slice={[0:2}\n}\n", (4, 42), "expected `]`"),
        ("HloModule m\nENTRY %e {\n  %x = f32[4] parameter(0)\n  ROOT %y = f32[4] reduce(%x), dimensions={0}\n}\n", (4, 20), "needs the attribute `to_apply`"),
        ("HloModule m\nENTRY %e {\n  %x = f32[4] parameter(0)\n  ROOT %y = f32[4] sort(%x), dimensions={0}, to_apply=%missing\n}\n", (4, 55), "unknown computation `missing`"),
        ("HloModule m\nENTRY %e {\n  %x = f32[4]{0,1} parameter(0)\n}\n", (3, 14), "not a permutation"),
        ("ENTRY %e {\n  %x = f32[4] parameter(0)\n}\n", (1, 1), "HloModule"),
        ("HloModule m\nENTRY %e {\n  %x = f32[4] parameter(0)\n", (4, 1), "not closed"),
        ("HloModule m\nENTRY %e {\n  %x = f32[4] parameter(0)\n  %x = f32[4] parameter(1)\n}\n", (4, 3), "defined twice"),
        ("HloModule m\nENTRY %e {\n  %a = f32[] negate(%b)\n  ROOT %b = f32[] negate(%a)\n}\n", (3, 3), "depends on itself"),
        ("HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant({...})\n}\n", (3, 28), "elided"),
        ("HloModule m\nENTRY %e {\n  ROOT %c = s8[] constant(300)\n}\n", (3, 27), "out of range"),
        ("HloModule m\nENTRY %e {\n  %x = f32[1,4,4,1] parameter(0)\n  ROOT %c = f32[1,4,4,1] convolution(%x, %x), window={size=3x3}, dim_labels=b01f_01o->b01f\n}\n", (4, 77), "bad dim_labels"),
    ];
    for (text, (line, col), msg) in cases {
        let e = parse(text).expect_err(text);
        assert!(e.message.contains(msg), "{text}: got `{e}`, wanted `{msg}`");
        assert_eq!((e.line, e.col), (*line, *col), "{text}: {e}");
    }
    // Every prefix of a real dump either parses or fails cleanly.
    let (_, text) = &samples()[0];
    for cut in (0..text.len()).step_by(7) {
        if text.is_char_boundary(cut) {
            let _ = parse(&text[..cut]);
        }
    }
}

/// A module using every op and attribute form the printers know, shape-correct so that
/// the StableHLO verifier accepts its StableHLO form.
const KITCHEN_SINK: &str = r#"HloModule kitchen_sink

%add (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %s = f32[] add(%p, %q)
}

%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE, type=TOTALORDER
}

%sq (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %m = f32[] multiply(%x, %x)
}

%b0 (u: f32[4], v: f32[4]) -> f32[4] {
  %u = f32[4]{0} parameter(0)
  %v = f32[4]{0} parameter(1)
  ROOT %w = f32[4]{0} add(%u, %v)
}

%b1 () -> f32[4] {
  %k = f32[] constant(1)
  ROOT %kb = f32[4]{0} broadcast(%k), dimensions={}
}

%t (y: f32[4]) -> f32[4] {
  ROOT %y = f32[4]{0} parameter(0)
}

%f (y2: f32[4]) -> f32[4] {
  %y2 = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%y2)
}

%wc (i: s32[], v: f32[4]) -> pred[] {
  %i = s32[] parameter(0)
  %v = f32[4]{0} parameter(1)
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %three), direction=LT
}

%wb (i: s32[], v: f32[4]) -> (s32[], f32[4]) {
  %i = s32[] parameter(0)
  %v = f32[4]{0} parameter(1)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %v2 = f32[4]{0} multiply(%v, %v)
  ROOT %r = (s32[], f32[4]{0}) tuple(%next, %v2)
}

%fz (fa: f32[4], fb: f32[4]) -> (f32[4], f32[4]) {
  %fa = f32[4]{0} parameter(0)
  %fb = f32[4]{0} parameter(1)
  %fs = f32[4]{0} add(%fa, %fb)
  %fm = f32[4]{0} multiply(%fa, %fb)
  ROOT %ft = (f32[4]{0}, f32[4]{0}) tuple(%fs, %fm)
}

ENTRY %main (x: f32[4], img: f32[1,6,6,2], k: f32[3,3,2,4], tbl: f32[10,4], idx: s32[3,1], sel: s32[], p: pred[], a: f32[3,3], st: u64[2]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %img = f32[1,6,6,2]{3,2,1,0} parameter(1)
  %k = f32[3,3,2,4]{3,2,1,0} parameter(2)
  %tbl = f32[10,4]{1,0} parameter(3)
  %idx = s32[3,1]{1,0} parameter(4)
  %sel = s32[] parameter(5)
  %p = pred[] parameter(6)
  %a = f32[3,3]{1,0} parameter(7)
  %st = u64[2]{0} parameter(8)
  %zero = f32[] constant(0)
  %one = f32[] constant(1)
  %h = bf16[3]{0} constant({0.1, inf, -nan})
  %erf = f32[4]{0} erf(%x)
  %fin = pred[4]{0} is-finite(%x)
  %clp = f32[4]{0} clamp(%zero, %x, %one)
  %rp = f32[4]{0} reduce-precision(%x), exponent_bits=5, mantissa_bits=10
  %cv = f32[1,3,3,4]{3,2,1,0} convolution(%img, %k), window={size=3x3 stride=2x2 pad=1_1x1_1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f
  %g = f32[3,4]{1,0} gather(%tbl, %idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  %upd = f32[3,4]{1,0} broadcast(%zero), dimensions={}
  %sc = f32[10,4]{1,0} scatter(%tbl, %idx, %upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  %so = f32[10,4]{1,0} sort(%sc), dimensions={1}, is_stable=true, to_apply=%ge
  %mp = f32[4]{0} map(%x), dimensions={0}, to_apply=%sq
  %rw = f32[2]{0} reduce-window(%x, %zero), window={size=2 stride=2}, to_apply=%add
  %sas = f32[4]{0} select-and-scatter(%x, %rw, %zero), window={size=2 stride=2}, select=%ge, scatter=%add
  %case = f32[4]{0} conditional(%sel, %x, %x), branch_computations={%b0, %b1}, branch_operands={{0,1},{}}
  %if = f32[4]{0} conditional(%p, %x, %erf), true_computation=%t, false_computation=%f
  %pc = f32[4]{0} conditional(%p, %x), branch_computations={%t}
  %ts = f32[3,3]{1,0} triangular-solve(%a, %a), left_side=true, lower=true, unit_diagonal=false, transpose_a=TRANSPOSE
  %ch = f32[3,3]{1,0} cholesky(%a), lower=true
  %rb = (u64[2]{0}, u32[2,2]{1,0}) rng-bit-generator(%st), algorithm=rng_philox
  %rn = f32[2,2]{1,0} rng(%zero, %one), distribution=rng_uniform
  %ds = f32[2]{0} dynamic-slice(%x, %sel), dynamic_slice_sizes={2}
  %dus = f32[4]{0} dynamic-update-slice(%x, %ds, %sel)
  %pad = f32[9]{0} pad(%x, %zero), padding=1_1_1
  %rev = f32[4]{0} reverse(%x), dimensions={0}
  %cat = f32[8]{0} concatenate(%x, %rev), dimensions={0}
  %sl = f32[2]{0} slice(%cat), slice={[0:8:4]}
  %io = s32[2,3]{1,0} iota(), iota_dimension=1
  %tr = s32[3,2]{0,1} transpose(%io), dimensions={1,0}
  %bc = s32[2,3]{1,0} bitcast(%tr)
  %bcf = f32[3,2]{1,0} bitcast(%tr)
  %rs = s32[6]{0} reshape(%io)
  %bcv = f32[3,2]{1,0} bitcast-convert(%tr)
  %cvt = f32[3,2]{1,0} convert(%tr)
  %cp = s32[3,2]{1,0} copy(%tr)
  %rid = u32[] replica-id()
  %pid = u32[] partition-id()
  %tok = token[] after-all()
  %cc = f32[4]{0} custom-call(%x), custom_call_target="foo", custom_call_has_side_effect=true, api_version=API_VERSION_ORIGINAL, tolerance=0.001, backend_config="cfg"
  %ob = (f32[4]{0}, f32[4]{0}) opt-barrier(%clp, %rp)
  %red = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%add
  %dot = f32[4,4]{1,0} dot(%x, %x), lhs_contracting_dims={}, rhs_contracting_dims={}
  %wl = (s32[], f32[4]{0}) while(%sel, %x), condition=%wc, body=%wb
  %fu = (f32[4]{0}, f32[4]{0}) fusion(%x, %erf), kind=kLoop, calls=%fz
  %fu0 = f32[4]{0} get-tuple-element(%fu), index=0
  %cl = f32[4]{0} call(%x), to_apply=%f
  %pw = f32[4]{0} power(%x, %cl)
  %sh = s32[2,3]{1,0} shift-right-logical(%io, %bc)
  ROOT %out = (f32[4]{0}, pred[4]{0}, f32[1,3,3,4]{3,2,1,0}, f32[3,4]{1,0}, f32[10,4]{1,0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[3,3]{1,0}, f32[3,3]{1,0}, (u64[2]{0}, u32[2,2]{1,0}), f32[2,2]{1,0}, f32[4]{0}, f32[9]{0}, f32[2]{0}, s32[2,3]{1,0}, f32[3,2]{1,0}, s32[6]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}, s32[3,2]{1,0}, u32[], u32[], token[], f32[4]{0}, (f32[4]{0}, f32[4]{0}), f32[], f32[4,4]{1,0}, (s32[], f32[4]{0}), f32[4]{0}, f32[4]{0}, bf16[3]{0}, s32[2,3]{1,0}, f32[3,2]{1,0}) tuple(%erf, %fin, %cv, %g, %so, %mp, %sas, %case, %if, %pc, %ts, %ch, %rb, %rn, %dus, %pad, %sl, %bc, %bcv, %rs, %cvt, %bcf, %cp, %rid, %pid, %tok, %cc, %ob, %red, %dot, %wl, %fu0, %pw, %h, %sh, %bcf)
}
"#;

/// Every hand-written and real module of these tests, for the StableHLO checks.
fn all_texts() -> Vec<(String, String)> {
    let mut v = samples();
    v.push(("kitchen_sink".into(), KITCHEN_SINK.into()));
    v
}

#[test]
fn kitchen_sink_round_trips() {
    let m = assert_round_trip("kitchen_sink", KITCHEN_SINK);
    assert_eq!(m.entry_comp().params.len(), 9);
}

#[test]
fn stablehlo_of_real_dumps() {
    let dump = std::env::var("HLOSCOPE_DUMP_STABLEHLO").ok();
    for (name, text) in all_texts() {
        let m = parse(&text).unwrap();
        let s = hloscope_core::print::stablehlo::print_module(&m);
        assert!(s.starts_with("module @"), "{name}");
        assert!(s.contains("func.func public @main("), "{name}");
        if let Some(dir) = &dump {
            std::fs::write(format!("{dir}/{name}.mlir"), &s).unwrap();
        }
    }
}

#[test]
fn hlo_printer_output_is_xla_style() {
    let text = "HloModule jit_f, entry_computation_layout={(f32[2,3]{1,0})->f32[2]{0}}\n\n\
        %sum (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %add.1 = f32[] add(f32[] %a, f32[] %b)\n}\n\n\
        ENTRY %main.4 (x: f32[2,3]) -> f32[2] {\n  %x = f32[2,3]{1,0} parameter(0), metadata={op_name=\"x\"}\n  %c = f32[] constant(0)\n  \
        ROOT %r = f32[2]{0} reduce(f32[2,3]{1,0} %x, f32[] %c), dimensions={1}, to_apply=%sum, metadata={op_name=\"jit(f)/reduce_sum\" source_file=\"f.py\" source_line=7}\n}\n";
    let m = parse(text).unwrap();
    let expected = "HloModule jit_f\n\n\
        %sum (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %add.1 = f32[] add(%a, %b)\n}\n\n\
        ENTRY %main.4 (x: f32[2,3]) -> f32[2] {\n  %x = f32[2,3]{1,0} parameter(0), metadata={op_name=\"x\"}\n  %c = f32[] constant(0)\n  \
        ROOT %r = f32[2]{0} reduce(%x, %c), dimensions={1}, to_apply=%sum, metadata={op_name=\"jit(f)/reduce_sum\" source_file=\"f.py\" source_line=7}\n}\n";
    assert_eq!(print_module(&m), expected);
}

#[test]
fn stablehlo_printer_output() {
    let text = "HloModule jit_f\n\n\
        %sum (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %add.1 = f32[] add(%a, %b)\n}\n\n\
        %fused (p0: f32[2,3]) -> f32[2,3] {\n  %p0 = f32[2,3]{1,0} parameter(0)\n  ROOT %e = f32[2,3]{1,0} exponential(%p0)\n}\n\n\
        ENTRY %main.4 (x: f32[2,3]) -> (f32[2], f32[2,3]) {\n  %x = f32[2,3]{1,0} parameter(0)\n  %c = f32[] constant(0.1)\n  \
        %fu = f32[2,3]{1,0} fusion(%x), kind=kLoop, calls=%fused\n  %cp = f32[2,3]{0,1} copy(%fu)\n  \
        %r = f32[2]{0} reduce(%x, %c), dimensions={1}, to_apply=%sum\n  ROOT %t = (f32[2]{0}, f32[2,3]{0,1}) tuple(%r, %cp)\n}\n";
    let m = parse(text).unwrap();
    let expected = r#"module @jit_f {
  func.func private @fused(%p0: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %e = stablehlo.exponential %p0 : tensor<2x3xf32>
    return %e : tensor<2x3xf32>
  }
  func.func public @main(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2x3xf32>) {
    %c = stablehlo.constant dense<0.1> : tensor<f32>
    %fu = func.call @fused(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %r = "stablehlo.reduce"(%x, %c) <{dimensions = array<i64: 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %add.1 = stablehlo.add %a, %b : tensor<f32>
      "stablehlo.return"(%add.1) : (tensor<f32>) -> ()
    }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    return %r, %fu : tensor<2xf32>, tensor<2x3xf32>
  }
}
"#;
    assert_eq!(hloscope_core::print::stablehlo::print_module(&m), expected);
}

#[test]
fn mutated_texts_never_panic() {
    // A fixed pseudo-random sequence of byte edits (deletions, insertions, swaps) of the
    // kitchen-sink module: the parser must return Ok or Err, and whatever parses must
    // round-trip through the HLO printer and print as StableHLO.
    let base = KITCHEN_SINK.as_bytes();
    let alphabet = b"{}[]()%,=:_x-.0123456789 \n\"abfioT";
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut parsed = 0;
    for _ in 0..3000 {
        let mut bytes = base.to_vec();
        for _ in 0..1 + next() % 3 {
            let i = (next() as usize) % bytes.len();
            let c = alphabet[(next() as usize) % alphabet.len()];
            match next() % 3 {
                0 => {
                    bytes.remove(i);
                }
                1 => bytes.insert(i, c),
                _ => bytes[i] = c,
            }
        }
        let text = String::from_utf8(bytes).unwrap();
        if let Ok(m) = parse(&text) {
            parsed += 1;
            assert_round_trip("a mutated kitchen sink", &text);
            let _ = hloscope_core::print::stablehlo::print_module(&m);
        }
    }
    // Many edits land in names or numbers and still parse.
    assert!(parsed > 100, "{parsed}");
}

/// How many times each op runs per call of the entry, as an inliner would see it:
/// fusion and call bodies and region computations are counted at every use. Ops that
/// only move tuples or layouts around (and which the StableHLO form spells differently)
/// are left out.
fn op_counts(m: &Module) -> std::collections::BTreeMap<&'static str, usize> {
    fn walk(m: &Module, c: CompId, out: &mut std::collections::BTreeMap<&'static str, usize>) {
        let comp = m.comp(c);
        for &i in &comp.order {
            let op = &comp.inst(i).op;
            for callee in op.called_computations() {
                walk(m, callee, out);
            }
            let skip = matches!(
                op,
                Op::Fusion { .. }
                    | Op::Call { .. }
                    | Op::Tuple
                    | Op::GetTupleElement { .. }
                    | Op::Copy
                    | Op::Bitcast
                    | Op::Reshape
                    | Op::Transpose { .. }
                    | Op::Parameter(_)
            );
            // XLA's bitcast between element types prints as a bitcast_convert.
            let inst = comp.inst(i);
            let elem = |t: &Type| t.as_array().map(|s| s.elem);
            if matches!(op, Op::Bitcast) && elem(&inst.ty) != elem(&comp.inst(inst.operands[0]).ty) {
                *out.entry("bitcast-convert").or_default() += 1;
            } else if !skip {
                *out.entry(op.hlo_name()).or_default() += 1;
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(m, m.entry, &mut out);
    out
}

#[test]
fn stablehlo_reads_back_with_the_mlir_parser() {
    for (name, text) in all_texts() {
        // `erf` prints as `chlo.erf`, which the MLIR parser decomposes into other ops.
        let text = text.replace("erf(%x)", "tanh(%x)");
        let m1 = parse(&text).unwrap();
        let s = hloscope_core::print::stablehlo::print_module(&m1);
        let m2 = hloscope_core::parse::mlir::parse(&s).unwrap_or_else(|e| panic!("{name}: {e}\n{s}"));
        let mut want = op_counts(&m1);
        // The StableHLO form adds a shape constant per `rng`, and turns the pred selector
        // of a conditional with other than two branches into an index (not + convert).
        for c in m1.post_order() {
            let comp = m1.comp(c);
            for &i in &comp.order {
                let inst = comp.inst(i);
                match &inst.op {
                    Op::Rng { .. } => *want.entry("constant").or_default() += 1,
                    Op::Case { branches, .. }
                        if branches.len() != 2
                            && comp
                                .inst(inst.operands[0])
                                .ty
                                .as_array()
                                .is_some_and(|s| s.elem == ElementType::Pred) =>
                    {
                        *want.entry("not").or_default() += 1;
                        *want.entry("convert").or_default() += 1;
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(want, op_counts(&m2), "{name}");
        let leaves = |m: &Module| -> Vec<String> {
            let e = m.entry_comp();
            e.root_inst().ty.leaf_shapes().iter().map(|s| Shape { layout: None, ..(*s).clone() }.to_string()).collect()
        };
        assert_eq!(leaves(&m1), leaves(&m2), "{name}");
    }
}

/// Modules from the StableHLO parser (JAX's lowered programs in `tests/mlir_samples`,
/// when that folder exists): the HLO printer's text reads back to the same module.
#[test]
fn modules_from_the_mlir_parser_round_trip_through_hlo_text() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mlir_samples");
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let dump = std::env::var("HLOSCOPE_DUMP_STABLEHLO").ok();
    let mut checked = 0;
    for path in entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "mlir")) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(m) = hloscope_core::parse::mlir::parse(&std::fs::read_to_string(&path).unwrap()) else { continue };
        let text = print_module(&m);
        let back = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(describe(&m), describe(&back), "{name}");
        let s = hloscope_core::print::stablehlo::print_module(&m);
        if let Some(dir) = &dump {
            std::fs::write(format!("{dir}/from_mlir_{name}"), &s).unwrap();
        }
        checked += 1;
    }
    assert!(checked > 0);
}
