//! 64-bit integers on the WebGPU target (`targets/webgpu/wide.rs`: pairs of 32-bit
//! words): s64 and u64 programs on the device (lavapipe in CI) against the interpreter,
//! bit for bit, and every kernel placed on the device, except the scatters that would
//! need 64-bit atomics. Needs feature `webgpu` and an adapter.

#![cfg(all(feature = "webgpu", feature = "cpu"))]

use crate::common::Rng;
use hloscope_core::interp::Interpreter;
use hloscope_core::ir::{ElementType, Literal, Shape, Value};
use hloscope_core::targets::{optimize, webgpu};
use webgpu::runtime::WebGpuExecutable;

/// `hlo` after the target's pipeline on the device, its outputs' bytes against the
/// interpreter's (on the module as written), every shader valid for naga first; the
/// program, for its placement.
fn agree(hlo: &str, args: &[Value]) -> webgpu::WebGpuProgram {
    agree_with(hlo, args, webgpu::wgsl::Options::default())
}

/// [`agree`] with the emitter's `options`.
fn agree_with(hlo: &str, args: &[Value], options: webgpu::wgsl::Options) -> webgpu::WebGpuProgram {
    let module = hloscope_core::parse::parse_module(hlo).unwrap_or_else(|e| panic!("{e:?}"));
    let optimized = optimize(&module).unwrap();
    let program = webgpu::compile_with(&optimized, options).unwrap();
    for s in program.shaders.iter().flatten().flat_map(|s| s.passes()) {
        let parsed =
            naga::front::wgsl::parse_str(&s.source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&s.source)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
            .validate(&parsed)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", s.source));
    }
    let exe = WebGpuExecutable::new(&optimized, program.clone()).unwrap_or_else(|e| panic!("{e}"));
    let got = exe.run(args).unwrap_or_else(|e| panic!("{e}")).0.flatten();
    let want = Interpreter::new(&module).run(args).unwrap().flatten();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.shape, w.shape, "output {i}");
        let width = w.shape.elem.byte_size();
        let (gb, wb) = (g.to_le_bytes(), w.to_le_bytes());
        let wrong: Vec<String> = (0..w.num_elements())
            .filter(|&k| gb[k * width..(k + 1) * width] != wb[k * width..(k + 1) * width])
            .take(6)
            .map(|k| format!("element {k}: {:?}, want {:?}", g.get(k), w.get(k)))
            .collect();
        assert!(wrong.is_empty(), "output {i} ({}): {}\n{}", w.shape, wrong.join("; "), program.listing());
    }
    program
}

/// Every kernel on the device.
fn all_on_device(program: &webgpu::WebGpuProgram) {
    assert_eq!(program.counts().1, 0, "everything runs on the device:\n{}", program.listing());
}

fn lit(elem: ElementType, dims: &[i64], v: &[i64]) -> Value {
    Value::Array(Literal::from_i64s(Shape::new(elem, dims), v))
}

/// The edges of both types: zero, ones, the extremes, the words' edges.
const SPECIAL: [i64; 20] = [
    0,
    1,
    -1,
    2,
    -2,
    3,
    i64::MIN,
    i64::MAX,
    i64::MIN + 1,
    1 << 31,
    (1 << 31) - 1,
    1 << 32,
    (1 << 32) - 1,
    -(1 << 32),
    0xffff_ffff_0000_0000u64 as i64,
    0x1_ffff_ffff,
    12_345_678_901_234,
    -9_876_543_210,
    1 << 62,
    0x5555_5555_aaaa_aaaa,
];

/// Every pair of [`SPECIAL`] values, then random pairs: of full width, and of random
/// widths (so that quotients and remainders are of every size).
fn operand_pairs(rng: &mut Rng, random: usize) -> (Vec<i64>, Vec<i64>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &SPECIAL {
        for &y in &SPECIAL {
            a.push(x);
            b.push(y);
        }
    }
    for k in 0..random {
        let (x, y) = (rng.next() as i64, rng.next() as i64);
        if k % 2 == 0 {
            a.push(x);
            b.push(y);
        } else {
            a.push(x >> rng.int(0, 63));
            b.push(y >> rng.int(0, 63));
        }
    }
    (a, b)
}

#[test]
fn wide_arithmetic_wraps_divides_and_compares_as_the_interpreter_does() {
    let mut rng = Rng(0x5eed_0064);
    let (a, b) = operand_pairs(&mut rng, 1600);
    let n = a.len();
    for ty in ["s64", "u64"] {
        let binary = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor"];
        let unary = ["negate", "abs", "sign", "not", "popcnt", "count-leading-zeros"];
        // sign is for signed types only.
        let unary = if ty == "s64" { &unary[..] } else { &unary[..2] }.iter().chain(&unary[3..]);
        let dirs = ["EQ", "NE", "LT", "LE", "GT", "GE"];
        let mut lines = Vec::new();
        let mut outs = Vec::new();
        for (k, op) in binary.iter().enumerate() {
            lines.push(format!("  %b{k} = {ty}[{n}] {op}(%a, %b)"));
            outs.push((format!("%b{k}"), format!("{ty}[{n}]")));
        }
        for (k, op) in unary.enumerate() {
            lines.push(format!("  %u{k} = {ty}[{n}] {op}(%a)"));
            outs.push((format!("%u{k}"), format!("{ty}[{n}]")));
        }
        for (k, dir) in dirs.iter().enumerate() {
            lines.push(format!("  %c{k} = pred[{n}] compare(%a, %b), direction={dir}"));
            outs.push((format!("%c{k}"), format!("pred[{n}]")));
        }
        lines.push(format!("  %s = {ty}[{n}] select(%c2, %b, %a)"));
        lines.push(format!("  %l = {ty}[{n}] clamp(%b, %a, %b3)"));
        outs.push(("%s".into(), format!("{ty}[{n}]")));
        outs.push(("%l".into(), format!("{ty}[{n}]")));
        let types: Vec<&str> = outs.iter().map(|o| o.1.as_str()).collect();
        let names: Vec<&str> = outs.iter().map(|o| o.0.as_str()).collect();
        let tuple = format!("({})", types.join(", "));
        let hlo = format!(
            "HloModule m
ENTRY %main (a: {ty}[{n}], b: {ty}[{n}]) -> {tuple} {{
  %a = {ty}[{n}] parameter(0)
  %b = {ty}[{n}] parameter(1)
{}
  ROOT %t = {tuple} tuple({})
}}",
            lines.join("\n"),
            names.join(", ")
        );
        let elem = if ty == "s64" { ElementType::S64 } else { ElementType::U64 };
        let program = agree(&hlo, &[lit(elem, &[n as i64], &a), lit(elem, &[n as i64], &b)]);
        all_on_device(&program);
    }
}

#[test]
fn wide_shifts_count_unsigned_and_empty_past_the_width() {
    // Every value of a list shifted by counts in and past the width, negative ones too
    // (huge unsigned counts), each way, for both types.
    let values = [1, -1, i64::MIN, i64::MAX, 0x0123_4567_89ab_cdef, -0x0123_4567_89ab_cdef, 0xffff_ffff, 1 << 32];
    let counts = [0, 1, 31, 32, 33, 63, 64, 65, 127, -1, -64, i64::MIN, 1 << 32, (1 << 32) + 1];
    let (mut a, mut s) = (Vec::new(), Vec::new());
    for &v in &values {
        for &c in &counts {
            a.push(v);
            s.push(c);
        }
    }
    let n = a.len();
    for (ty, elem) in [("s64", ElementType::S64), ("u64", ElementType::U64)] {
        let hlo = format!(
            "HloModule m
ENTRY %main (a: {ty}[{n}], s: {ty}[{n}]) -> ({ty}[{n}], {ty}[{n}], {ty}[{n}]) {{
  %a = {ty}[{n}] parameter(0)
  %s = {ty}[{n}] parameter(1)
  %l = {ty}[{n}] shift-left(%a, %s)
  %r = {ty}[{n}] shift-right-arithmetic(%a, %s)
  %g = {ty}[{n}] shift-right-logical(%a, %s)
  ROOT %t = ({ty}[{n}], {ty}[{n}], {ty}[{n}]) tuple(%l, %r, %g)
}}"
        );
        let program = agree(&hlo, &[lit(elem, &[n as i64], &a), lit(elem, &[n as i64], &s)]);
        all_on_device(&program);
    }
}

/// Integers near where f32 (24 bits), f64 (53) and the types themselves (63, 64) run
/// out of precision: each power of two, its neighbours, and the halfway points between
/// f32 neighbours there and next to them (ties to even, either way, and just off them).
fn near_roundings() -> Vec<i64> {
    let mut v = Vec::new();
    for k in [23u32, 24, 25, 31, 32, 33, 52, 53, 54, 62, 63] {
        let p = 1u64 << k;
        let half = if k > 24 { 1u64 << (k - 24) } else { 1 };
        for base in [p, p.wrapping_add(2 * half), p.wrapping_add(4 * half)] {
            for d in [0, 1, half - 1, half, half + 1, 2 * half, 3 * half] {
                v.push(base.wrapping_add(d) as i64);
                v.push(base.wrapping_sub(d) as i64);
                v.push((base.wrapping_add(d) as i64).wrapping_neg());
            }
        }
    }
    v.extend([u64::MAX as i64, (u64::MAX - (1 << 39)) as i64, (u64::MAX - (1 << 40)) as i64]);
    v
}

#[test]
fn wide_converts_round_saturate_and_wrap_as_the_interpreter_does() {
    let mut rng = Rng(0x5eed_0065);
    // Integers to every type: near the roundings, the edges, and random ones.
    let mut ints = near_roundings();
    ints.extend(SPECIAL);
    ints.extend((0..2000).map(|k| (rng.next() as i64) >> (k % 64)));
    let n = ints.len();
    let targets = ["f32", "f16", "bf16", "s32", "u32", "s16", "u16", "s8", "u8", "pred", "s64", "u64"];
    for ty in ["s64", "u64"] {
        let outs: Vec<String> = targets.iter().map(|t| format!("{t}[{n}]")).collect();
        let tuple = format!("({})", outs.join(", "));
        let lines: Vec<String> =
            targets.iter().enumerate().map(|(k, t)| format!("  %o{k} = {t}[{n}] convert(%a)")).collect();
        let names: Vec<String> = (0..targets.len()).map(|k| format!("%o{k}")).collect();
        let hlo = format!(
            "HloModule m
ENTRY %main (a: {ty}[{n}]) -> {tuple} {{
  %a = {ty}[{n}] parameter(0)
{}
  ROOT %t = {tuple} tuple({})
}}",
            lines.join("\n"),
            names.join(", ")
        );
        let elem = if ty == "s64" { ElementType::S64 } else { ElementType::U64 };
        all_on_device(&agree(&hlo, &[lit(elem, &[n as i64], &ints)]));
    }

    // Floats to both: NaN, infinities, the types' bounds, around 2^24, 2^53, 2^63 and
    // 2^64, fractions, and random bit patterns (every exponent).
    let p = |e: i32| 2f32.powi(e);
    let mut floats = vec![
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.99999994,
        -0.99999994,
        1.0,
        -1.0,
        1.5,
        -1.5,
        p(63),
        -p(63),
        p(64),
        -p(64),
        p(62) * 1.5,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        1e-45,
    ];
    for e in [24, 31, 32, 53, 63, 64] {
        let x = p(e);
        for y in [x, f32::from_bits(x.to_bits() + 1), f32::from_bits(x.to_bits() - 1)] {
            floats.extend([y, -y]);
        }
    }
    floats.extend((0..3000).map(|_| rng.f32_bits()));
    let m = floats.len();
    let hlo = format!(
        "HloModule m
ENTRY %main (x: f32[{m}], h: f16[{m}], b: bf16[{m}]) -> (s64[{m}], u64[{m}], s64[{m}], u64[{m}], s64[{m}], u64[{m}]) {{
  %x = f32[{m}] parameter(0)
  %h = f16[{m}] parameter(1)
  %b = bf16[{m}] parameter(2)
  %xs = s64[{m}] convert(%x)
  %xu = u64[{m}] convert(%x)
  %hs = s64[{m}] convert(%h)
  %hu = u64[{m}] convert(%h)
  %bs = s64[{m}] convert(%b)
  %bu = u64[{m}] convert(%b)
  ROOT %t = (s64[{m}], u64[{m}], s64[{m}], u64[{m}], s64[{m}], u64[{m}]) tuple(%xs, %xu, %hs, %hu, %bs, %bu)
}}"
    );
    let f = |elem| {
        let values: Vec<f64> = floats.iter().map(|&v| f64::from(v)).collect();
        Value::Array(Literal::from_f64s(Shape::new(elem, vec![m as i64]), &values))
    };
    all_on_device(&agree(&hlo, &[f(ElementType::F32), f(ElementType::F16), f(ElementType::BF16)]));

    // The narrow and 32-bit types (and pred) to both, extended by their signedness.
    let small: Vec<i64> = (0..1024).map(|k| (rng.next() as i64) >> (k % 64)).chain(SPECIAL).collect();
    let k = small.len();
    let sources = ["s32", "u32", "s16", "u16", "s8", "u8", "pred"];
    let params: Vec<String> = sources.iter().enumerate().map(|(i, t)| format!("p{i}: {t}[{k}]")).collect();
    let mut lines: Vec<String> =
        sources.iter().enumerate().map(|(i, t)| format!("  %p{i} = {t}[{k}] parameter({i})")).collect();
    let mut outs = Vec::new();
    for i in 0..sources.len() {
        for ty in ["s64", "u64"] {
            lines.push(format!("  %{ty}_{i} = {ty}[{k}] convert(%p{i})"));
            outs.push((format!("%{ty}_{i}"), format!("{ty}[{k}]")));
        }
    }
    let types: Vec<&str> = outs.iter().map(|o| o.1.as_str()).collect();
    let names: Vec<&str> = outs.iter().map(|o| o.0.as_str()).collect();
    let tuple = format!("({})", types.join(", "));
    let hlo = format!(
        "HloModule m
ENTRY %main ({}) -> {tuple} {{
{}
  ROOT %t = {tuple} tuple({})
}}",
        params.join(", "),
        lines.join("\n"),
        names.join(", ")
    );
    use ElementType::*;
    let args: Vec<Value> = [S32, U32, S16, U16, S8, U8, Pred].iter().map(|&t| lit(t, &[k as i64], &small)).collect();
    all_on_device(&agree(&hlo, &args));
}

#[test]
fn wide_iotas_constants_reductions_and_indices_run_on_the_device() {
    // An s64 iota offset by i64::MIN (a constant of any 64 bits); sums that wrap, in a
    // serial loop (short rows) and shared by a workgroup (long rows, a whole array), a
    // column sum, max and min; a gather and a dynamic slice whose s64 and u64 indices lie
    // inside, before and far past the operand (clamped, as 32-bit ones are).
    let hlo = "HloModule m
%add (a: s64[], b: s64[]) -> s64[] {
  %a = s64[] parameter(0)
  %b = s64[] parameter(1)
  ROOT %s = s64[] add(%a, %b)
}
%max (a: u64[], b: u64[]) -> u64[] {
  %a = u64[] parameter(0)
  %b = u64[] parameter(1)
  ROOT %s = u64[] maximum(%a, %b)
}
%min (a: s64[], b: s64[]) -> s64[] {
  %a = s64[] parameter(0)
  %b = s64[] parameter(1)
  ROOT %s = s64[] minimum(%a, %b)
}
ENTRY %main (x: s64[6,1000], y: u64[37,5], t: s64[9,3], i: s64[9,1], j: u64[], k: s64[]) -> (s64[2000], s64[6], s64[37], s64[], s64[1000], u64[6], s64[6], s64[9,3], s64[4,3], s64[4,3]) {
  %x = s64[6,1000] parameter(0)
  %y = u64[37,5] parameter(1)
  %t = s64[9,3] parameter(2)
  %i = s64[9,1] parameter(3)
  %j = u64[] parameter(4)
  %k = s64[] parameter(5)
  %io = s64[2000] iota(), iota_dimension=0
  %mn = s64[] constant(-9223372036854775808)
  %mnb = s64[2000] broadcast(%mn), dimensions={}
  %o = s64[2000] add(%io, %mnb)
  %z = s64[] constant(0)
  %rows = s64[6] reduce(%x, %z), dimensions={1}, to_apply=%add
  %yc = s64[37,5] convert(%y)
  %short = s64[37] reduce(%yc, %z), dimensions={1}, to_apply=%add
  %all = s64[] reduce(%x, %z), dimensions={0,1}, to_apply=%add
  %cols = s64[1000] reduce(%x, %z), dimensions={0}, to_apply=%add
  %xu = u64[6,1000] convert(%x)
  %zu = u64[] constant(0)
  %mx = u64[6] reduce(%xu, %zu), dimensions={1}, to_apply=%max
  %big = s64[] constant(9223372036854775807)
  %mi = s64[6] reduce(%x, %big), dimensions={1}, to_apply=%min
  %g = s64[9,3] gather(%t, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
  %d = s64[4,3] dynamic-slice(%t, %j, %zu), dynamic_slice_sizes={4,3}
  %e = s64[4,3] dynamic-slice(%t, %k, %z), dynamic_slice_sizes={4,3}
  ROOT %r = (s64[2000], s64[6], s64[37], s64[], s64[1000], u64[6], s64[6], s64[9,3], s64[4,3], s64[4,3]) tuple(%o, %rows, %short, %all, %cols, %mx, %mi, %g, %d, %e)
}";
    let mut rng = Rng(0x5eed_0066);
    let mut random = |n: usize| -> Vec<i64> { (0..n).map(|_| rng.next() as i64).collect() };
    let (x, y, t) = (random(6000), random(185), random(27));
    // Words that would be in range alone: a high word of all ones or ones.
    let indices = [0, 3, 8, -1, i64::MIN, (1 << 32) + 2, -(1 << 32) + 5, 0xffff_ffff, -(1 << 31) - 3];
    let starts =
        [(2, 5), (u64::MAX as i64, -7), ((1 << 40) + 1, (1 << 33) + 1), (7, i64::MAX), ((1 << 32) + 3, -(1 << 32) + 4)];
    for (j, k) in starts {
        let args = [
            lit(ElementType::S64, &[6, 1000], &x),
            lit(ElementType::U64, &[37, 5], &y),
            lit(ElementType::S64, &[9, 3], &t),
            lit(ElementType::S64, &[9, 1], &indices),
            lit(ElementType::U64, &[], &[j]),
            lit(ElementType::S64, &[], &[k]),
        ];
        let program = agree(hlo, &args);
        all_on_device(&program);
        let shared = program.shaders.iter().flatten().filter(|s| s.mapping == webgpu::wgsl::Mapping::BlockReduction);
        assert!(shared.count() > 0, "a long s64 row is shared by a workgroup:\n{}", program.listing());
    }
}

#[test]
fn wide_transposes_and_dots_run_on_the_device() {
    // A u64 transpose big enough for workgroup tiles (with staging, as a GPU runs it),
    // its elements negated on the way; an s64 dot (a reduction kernel), wrapping.
    let hlo = "HloModule m
ENTRY %main (x: u64[70,90], a: s64[9,40], b: s64[40,7]) -> (u64[90,70], s64[9,7]) {
  %x = u64[70,90] parameter(0)
  %a = s64[9,40] parameter(1)
  %b = s64[40,7] parameter(2)
  %t = u64[90,70] transpose(%x), dimensions={1,0}
  %n = u64[90,70] negate(%t)
  %d = s64[9,7] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = (u64[90,70], s64[9,7]) tuple(%n, %d)
}";
    let mut rng = Rng(0x5eed_0067);
    let mut random = |n: usize| -> Vec<i64> { (0..n).map(|_| rng.next() as i64).collect() };
    let args = [
        lit(ElementType::U64, &[70, 90], &random(6300)),
        lit(ElementType::S64, &[9, 40], &random(360)),
        lit(ElementType::S64, &[40, 7], &random(280)),
    ];
    let staging = webgpu::wgsl::Options { workgroup_staging: true };
    for options in [webgpu::wgsl::Options::default(), staging] {
        all_on_device(&agree_with(hlo, &args, options));
    }
    let program = agree_with(hlo, &args, staging);
    let tiles = program.shaders.iter().flatten().any(|s| s.mapping == webgpu::wgsl::Mapping::TransposeTiles);
    assert!(tiles, "the transpose goes through workgroup tiles:\n{}", program.listing());
}

#[test]
fn a_wide_scatter_stays_on_the_host_and_its_indices_may_be_wide() {
    // No 64-bit atomics in WGSL: an s64 scatter runs on the host; an f32 scatter with
    // s64 indices runs on the device.
    let hlo = "HloModule m
%add (a: s64[], b: s64[]) -> s64[] {
  %a = s64[] parameter(0)
  %b = s64[] parameter(1)
  ROOT %s = s64[] add(%a, %b)
}
%fadd (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: s64[10], f: f32[10], i: s64[6,1], u: s64[6], v: f32[6]) -> (s64[10], f32[10]) {
  %x = s64[10] parameter(0)
  %f = f32[10] parameter(1)
  %i = s64[6,1] parameter(2)
  %u = s64[6] parameter(3)
  %v = f32[6] parameter(4)
  %s = s64[10] scatter(%x, %i, %u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  %g = f32[10] scatter(%f, %i, %v), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%fadd
  ROOT %t = (s64[10], f32[10]) tuple(%s, %g)
}";
    let args = [
        lit(ElementType::S64, &[10], &[i64::MAX, 1, 2, 3, 4, 5, 6, 7, 8, -9]),
        Value::Array(Literal::from_f64s(Shape::new(ElementType::F32, vec![10]), &[0.5; 10])),
        lit(ElementType::S64, &[6, 1], &[0, 9, 3, 3, -1, 1 << 40]),
        lit(ElementType::S64, &[6], &[1, i64::MIN, 3, 4, 5, 6]),
        Value::Array(Literal::from_f64s(Shape::new(ElementType::F32, vec![6]), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
    ];
    let program = agree(hlo, &args);
    let on_host: Vec<String> = program
        .plan
        .kernels
        .iter()
        .zip(&program.shaders)
        .filter(|(_, s)| s.is_none())
        .map(|(k, _)| k.kind.to_string())
        .collect();
    assert_eq!(on_host.len(), 1, "{on_host:?}\n{}", program.listing());
    assert!(on_host[0].contains("scatter of s64"), "{on_host:?}");
}
