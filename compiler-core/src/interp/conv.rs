//! Interpreter: `convolution`, straight from the StableHLO definition.
//!
//! For each output element the kernel window is walked directly in the coordinates of
//! the padded, lhs-dilated input (no padded copy is built): position
//! `q = out * stride + k * rhs_dilation - pad_low` is an input element when
//! `q % lhs_dilation == 0` and `q / lhs_dilation` is in range, and zero otherwise; negative
//! padding simply shifts or shortens the range. `window_reversal` pairs kernel position k
//! with window position K-1-k. Feature groups split the input features and the output
//! features into matching groups; batch groups split the input batch and the output
//! features. f32 sums are rounded step by step in f32 as XLA's are (see `dot.rs`); f16,
//! bf16 and f64 accumulate in f64 and round once; integers wrap.

use super::index::{array_arg, check_attr_range, next_index, result_shape};
use super::Interpreter;
use crate::ir::literal::{round_float, wrap_signed, wrap_unsigned};
use crate::ir::{Data, Instruction, Literal, Op, Scalar, Value};

pub(super) fn convolution(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Convolution(c) = &inst.op else { return Err("not a convolution".into()) };
    let lhs = array_arg(args, 0)?;
    let rhs = array_arg(args, 1)?;
    let out = result_shape(inst)?;
    let dn = &c.dims;
    let rank = lhs.shape.rank();
    if rhs.shape.rank() != rank || out.rank() != rank || rank < 2 {
        return Err(format!(
            "lhs, rhs and result must have one rank >= 2 ({}, {}, {})",
            rank,
            rhs.shape.rank(),
            out.rank()
        ));
    }
    let ns = rank - 2;
    let lists: [(&str, usize); 8] = [
        ("input_spatial_dimensions", dn.input_spatial.len()),
        ("kernel_spatial_dimensions", dn.kernel_spatial.len()),
        ("output_spatial_dimensions", dn.output_spatial.len()),
        ("window_strides", c.window_strides.len()),
        ("padding", c.padding.len()),
        ("lhs_dilation", c.lhs_dilation.len()),
        ("rhs_dilation", c.rhs_dilation.len()),
        ("window_reversal", c.window_reversal.len()),
    ];
    for (name, len) in lists {
        if len != ns {
            return Err(format!("{name} has {len} entries, expected {ns}"));
        }
    }
    let perm_ok = |what: &str, dims: Vec<i64>| -> Result<(), String> {
        let mut seen = vec![false; rank];
        for d in dims {
            if d < 0 || d as usize >= rank || std::mem::replace(&mut seen[d as usize], true) {
                return Err(format!("{what} dimension numbers are not a permutation of 0..{rank}"));
            }
        }
        Ok(())
    };
    perm_ok("input", [vec![dn.input_batch, dn.input_feature], dn.input_spatial.clone()].concat())?;
    perm_ok("kernel", [vec![dn.kernel_input_feature, dn.kernel_output_feature], dn.kernel_spatial.clone()].concat())?;
    perm_ok("output", [vec![dn.output_batch, dn.output_feature], dn.output_spatial.clone()].concat())?;
    for (name, v) in
        [("window_strides", &c.window_strides), ("lhs_dilation", &c.lhs_dilation), ("rhs_dilation", &c.rhs_dilation)]
    {
        if v.iter().any(|&x| x <= 0) {
            return Err(format!("{name} must be positive"));
        }
    }
    check_attr_range("window", c.window_strides.iter().chain(&c.lhs_dilation).chain(&c.rhs_dilation))?;
    check_attr_range("padding", c.padding.iter().flat_map(|(lo, hi)| [lo, hi]))?;
    let (fgc, bgc) = (c.feature_group_count, c.batch_group_count);
    if fgc <= 0 || bgc <= 0 || (fgc > 1 && bgc > 1) {
        return Err(format!("invalid group counts: feature {fgc}, batch {bgc}"));
    }
    let ld = &lhs.shape.dims;
    let rd = &rhs.shape.dims;
    let od = &out.dims;
    let in_batch = ld[dn.input_batch as usize];
    let in_feat = ld[dn.input_feature as usize];
    let k_in = rd[dn.kernel_input_feature as usize];
    let k_out = rd[dn.kernel_output_feature as usize];
    if in_batch % bgc != 0 || in_feat % fgc != 0 || k_out % fgc != 0 || k_out % bgc != 0 || k_in * fgc != in_feat {
        return Err(format!(
            "feature/batch sizes do not fit the groups: batch {in_batch}, features {in_feat}, kernel in {k_in}, kernel out {k_out}, groups {fgc}/{bgc}"
        ));
    }
    if od[dn.output_batch as usize] != in_batch / bgc || od[dn.output_feature as usize] != k_out {
        return Err(format!("result batch/feature sizes {od:?} do not match the operands"));
    }
    for s in 0..ns {
        let n = ld[dn.input_spatial[s] as usize];
        let k = rd[dn.kernel_spatial[s] as usize];
        let count = crate::verify::infer::num_windows(
            n,
            c.lhs_dilation[s],
            c.padding[s],
            k,
            c.rhs_dilation[s],
            c.window_strides[s],
        )?;
        if od[dn.output_spatial[s] as usize] != count {
            return Err(format!("result spatial dim {s} is {}, expected {count}", od[dn.output_spatial[s] as usize]));
        }
    }

    enum Acc {
        F(Vec<f64>, Vec<f64>),
        I(Vec<i64>, Vec<i64>),
        P(Vec<bool>, Vec<bool>),
    }
    let elem = out.elem;
    let acc = if elem.is_float() {
        Acc::F(lhs.to_f64_vec(), rhs.to_f64_vec())
    } else if elem.is_pred() {
        let b = |l: &Literal| (0..l.num_elements()).map(|i| l.get(i).as_f64() != 0.0).collect();
        Acc::P(b(lhs), b(rhs))
    } else {
        // Two's complement wrapping arithmetic is the same for signed and unsigned.
        let ints = |l: &Literal| {
            (0..l.num_elements())
                .map(|i| match l.get(i) {
                    Scalar::U(v) => v as i64,
                    s => s.as_i64(),
                })
                .collect()
        };
        Acc::I(ints(lhs), ints(rhs))
    };

    let ls = lhs.shape.strides();
    let rs = rhs.shape.strides();
    let kdims: Vec<i64> = dn.kernel_spatial.iter().map(|&d| rd[d as usize]).collect();
    let window_count: usize = kdims.iter().map(|&k| k.max(0) as usize).product();
    let out_feat_per_group = k_out / fgc.max(bgc);
    let batch_per_group = in_batch / bgc;
    let total = out.num_elements();
    let (mut fvals, mut ivals, mut pvals) = (Vec::new(), Vec::new(), Vec::new());
    let mut oi = vec![0i64; rank];
    let mut ki = vec![0i64; ns];
    let mut lhs_sp = vec![0usize; ns];
    for _ in 0..total {
        let ob = oi[dn.output_batch as usize];
        let of = oi[dn.output_feature as usize];
        let group = of / out_feat_per_group;
        let batch = if bgc > 1 { group * batch_per_group + ob } else { ob };
        let feat0 = if fgc > 1 { group * k_in } else { 0 };
        let mut fsum = 0.0f64;
        let f32_steps = elem == crate::ir::ElementType::F32;
        let mut isum = 0i64;
        let mut psum = false;
        ki.iter_mut().for_each(|x| *x = 0);
        for _ in 0..window_count {
            // Input offset of this kernel position, or skip it when it lands on padding.
            let mut inside = true;
            for s in 0..ns {
                let w = if c.window_reversal[s] { kdims[s] - 1 - ki[s] } else { ki[s] };
                let q =
                    oi[dn.output_spatial[s] as usize] * c.window_strides[s] + w * c.rhs_dilation[s] - c.padding[s].0;
                let n = ld[dn.input_spatial[s] as usize];
                if q < 0 || q % c.lhs_dilation[s] != 0 || q / c.lhs_dilation[s] >= n {
                    inside = false;
                    break;
                }
                lhs_sp[s] = (q / c.lhs_dilation[s]) as usize;
            }
            if inside {
                let mut l_base = batch as usize * ls[dn.input_batch as usize];
                let mut r_base = of as usize * rs[dn.kernel_output_feature as usize];
                for s in 0..ns {
                    l_base += lhs_sp[s] * ls[dn.input_spatial[s] as usize];
                    r_base += ki[s] as usize * rs[dn.kernel_spatial[s] as usize];
                }
                let lf = ls[dn.input_feature as usize];
                let rf = rs[dn.kernel_input_feature as usize];
                for i in 0..k_in as usize {
                    let li = l_base + (feat0 as usize + i) * lf;
                    let ri = r_base + i * rf;
                    match &acc {
                        Acc::F(l, r) => {
                            // f32 sums step by step in f32, as XLA does (see dot.rs).
                            fsum = if f32_steps {
                                round_float(elem, fsum + round_float(elem, l[li] * r[ri]))
                            } else {
                                fsum + l[li] * r[ri]
                            }
                        }
                        Acc::I(l, r) => isum = isum.wrapping_add(l[li].wrapping_mul(r[ri])),
                        Acc::P(l, r) => psum |= l[li] && r[ri],
                    }
                }
            }
            next_index(&mut ki, &kdims);
        }
        match &acc {
            Acc::F(..) => fvals.push(round_float(elem, fsum)),
            Acc::I(..) => ivals.push(isum),
            Acc::P(..) => pvals.push(psum),
        }
        next_index(&mut oi, od);
    }
    let data = match acc {
        Acc::F(..) => Data::F(fvals),
        Acc::P(..) => Data::Pred(pvals),
        Acc::I(..) if elem.is_signed_int() => Data::S(ivals.into_iter().map(|v| wrap_signed(elem, v)).collect()),
        Acc::I(..) => Data::U(ivals.into_iter().map(|v| wrap_unsigned(elem, v as u64)).collect()),
    };
    Ok(Value::Array(Literal::new(out, data)))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{ConvAttrs, ConvDims, ElementType, ElementType::*, Literal, Op};

    /// Dimension numbers from StableHLO's `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` notation.
    fn dims(input: &str, kernel: &str, output: &str) -> ConvDims {
        let pos = |s: &str, c: &str| s.split(',').map(str::trim).position(|x| x == c).unwrap() as i64;
        let spatial = |s: &str| {
            let n = s.split(',').filter(|x| x.trim().parse::<u32>().is_ok()).count();
            (0..n).map(|k| pos(s, &k.to_string())).collect::<Vec<_>>()
        };
        ConvDims {
            input_batch: pos(input, "b"),
            input_feature: pos(input, "f"),
            input_spatial: spatial(input),
            kernel_input_feature: pos(kernel, "i"),
            kernel_output_feature: pos(kernel, "o"),
            kernel_spatial: spatial(kernel),
            output_batch: pos(output, "b"),
            output_feature: pos(output, "f"),
            output_spatial: spatial(output),
        }
    }

    fn attrs(d: ConvDims) -> ConvAttrs {
        let n = d.input_spatial.len();
        ConvAttrs {
            dims: d,
            window_strides: vec![1; n],
            padding: vec![(0, 0); n],
            lhs_dilation: vec![1; n],
            rhs_dilation: vec![1; n],
            window_reversal: vec![false; n],
            feature_group_count: 1,
            batch_group_count: 1,
        }
    }

    fn conv(a: ConvAttrs, lhs: Literal, rhs: Literal, out_elem: ElementType, out: &[i64]) -> Vec<f64> {
        run_op_array(Op::Convolution(Box::new(a)), arr(out_elem, out), &[lhs.into(), rhs.into()]).to_f64_vec()
    }

    fn lhs_4x4(elem: ElementType) -> Literal {
        ints(elem, &[1, 4, 4, 1], &[1, 2, 5, 6, 3, 4, 7, 8, 10, 11, 14, 15, 12, 13, 16, 17])
    }

    #[test]
    fn spec_examples_strides_lhs_dilation_padding() {
        // stablehlo interpret/convolution.mlir: si64, si8 -> si32, padding.
        let mut a = attrs(dims("b,0,1,f", "0,1,i,o", "b,0,1,f"));
        a.window_strides = vec![4, 4];
        a.lhs_dilation = vec![2, 2];
        let ones = ints(S64, &[3, 3, 1, 1], &[1; 9]);
        assert_eq!(conv(a.clone(), lhs_4x4(S64), ones.clone(), S64, &[1, 2, 2, 1]), [10.0, 26.0, 46.0, 62.0]);
        let tens = ints(S8, &[3, 3, 1, 1], &[10; 9]);
        assert_eq!(conv(a.clone(), lhs_4x4(S8), tens, S32, &[1, 2, 2, 1]), [100.0, 260.0, 460.0, 620.0]);
        a.padding = vec![(1, 1), (1, 1)];
        assert_eq!(conv(a, lhs_4x4(S64), ones, S64, &[1, 2, 2, 1]), [1.0, 5.0, 10.0, 14.0]);
    }

    #[test]
    fn spec_examples_groups() {
        // stablehlo interpret/convolution.mlir: batch_group_count 4, feature_group_count 2.
        let mut a = attrs(dims("0,b,1,f", "0,1,i,o", "b,0,1,f"));
        a.window_strides = vec![4, 4];
        a.lhs_dilation = vec![2, 2];
        a.batch_group_count = 4;
        let ones = ints(S64, &[1, 2, 1, 4], &[1; 8]);
        let got = conv(a, lhs_4x4(S64), ones.clone(), S64, &[1, 1, 2, 4]);
        assert_eq!(got, [1.0, 3.0, 10.0, 12.0, 5.0, 7.0, 14.0, 16.0]);

        let mut a = attrs(dims("b,0,f,1", "0,i,1,o", "b,0,1,f"));
        a.window_strides = vec![4, 4];
        a.lhs_dilation = vec![2, 2];
        a.feature_group_count = 2;
        let got = conv(a, lhs_4x4(S64), ones, S64, &[1, 2, 1, 4]);
        assert_eq!(got, [3.0, 3.0, 11.0, 11.0, 21.0, 21.0, 29.0, 29.0]);
    }

    fn one_d() -> (ConvAttrs, Literal, Literal) {
        let a = attrs(dims("b,f,0", "o,i,0", "b,f,0"));
        (a, f32s(&[1, 1, 5], &[1.0, 2.0, 3.0, 4.0, 5.0]), f32s(&[1, 1, 2], &[1.0, 10.0]))
    }

    #[test]
    fn window_options_in_one_dimension() {
        let (a, x, k) = one_d();
        assert_eq!(conv(a.clone(), x.clone(), k.clone(), F32, &[1, 1, 4]), [21.0, 32.0, 43.0, 54.0]);
        let mut r = a.clone();
        r.window_reversal = vec![true];
        assert_eq!(conv(r, x.clone(), k.clone(), F32, &[1, 1, 4]), [12.0, 23.0, 34.0, 45.0]);
        let mut d = a.clone();
        d.rhs_dilation = vec![2];
        assert_eq!(conv(d, x.clone(), k.clone(), F32, &[1, 1, 3]), [31.0, 42.0, 53.0]);
        let mut p = a.clone();
        p.padding = vec![(-1, 1)];
        assert_eq!(conv(p, x.clone(), k.clone(), F32, &[1, 1, 4]), [32.0, 43.0, 54.0, 5.0]);
        let mut l = a;
        l.lhs_dilation = vec![2];
        assert_eq!(conv(l, x, k, F32, &[1, 1, 8]), [1.0, 20.0, 2.0, 30.0, 3.0, 40.0, 4.0, 50.0]);
    }

    #[test]
    fn f32_sums_step_in_f32() {
        // In f32, 1e8 + 1 - 1e8 step by step is 0 (XLA's answer); in f64 it is 1.
        let a = attrs(dims("b,f,0", "o,i,0", "b,f,0"));
        let x = f32s(&[1, 1, 3], &[1e8, 1.0, -1e8]);
        let k = f32s(&[1, 1, 3], &[1.0, 1.0, 1.0]);
        assert_eq!(conv(a, x, k, F32, &[1, 1, 1]), [0.0]);
    }

    #[test]
    fn integer_sums_wrap() {
        let a = attrs(dims("b,f,0", "o,i,0", "b,f,0"));
        let x = ints(S8, &[1, 1, 2], &[100, 100]);
        let k = ints(S8, &[1, 1, 2], &[1, 1]);
        assert_eq!(conv(a, x, k, S8, &[1, 1, 1]), [-56.0]);
    }

    #[test]
    fn extreme_strides_are_errors() {
        let (mut a, x, k) = one_d();
        a.window_strides = vec![i64::MAX];
        let args = [x.into(), k.into()];
        // Refused by the limits (`crate::limits`) before it runs ...
        let err = run_op(Op::Convolution(Box::new(a.clone())), arr(F32, &[1, 1, 1]), &args).unwrap_err();
        assert_eq!(err.message, "convolution stride 9223372036854775807 is beyond the limit of ±536870912");
        // ... and behind them by the interpreter's own range check.
        let err = run_op_unlimited(Op::Convolution(Box::new(a)), arr(F32, &[1, 1, 1]), &args).unwrap_err();
        assert!(err.message.contains("out of the supported range"), "{err}");
    }

    #[test]
    fn rejects_mismatched_result() {
        let (a, x, k) = one_d();
        let err = run_op(Op::Convolution(Box::new(a)), arr(F32, &[1, 1, 5]), &[x.into(), k.into()]).unwrap_err();
        assert!(err.message.contains("expected 4"), "{err}");
    }
}
