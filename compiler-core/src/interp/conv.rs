//! Interpreter: `convolution`, straight from the StableHLO definition.
//!
//! For each output element the kernel window is walked directly in the coordinates of
//! the padded, lhs-dilated input (no padded copy is built): position
//! `q = out * stride + k * rhs_dilation - pad_low` is an input element when
//! `q % lhs_dilation == 0` and `q / lhs_dilation` is in range, and zero otherwise; negative
//! padding simply shifts or shortens the range. `window_reversal` pairs kernel position k
//! with window position K-1-k. Feature groups split the input features and the output
//! features into matching groups; batch groups split the input batch and the output
//! features. Floats accumulate in f64 and round once to the result type; integers wrap.

use super::index::{array_arg, next_index, result_shape};
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
        return Err(format!("lhs, rhs and result must have one rank >= 2 ({}, {}, {})", rank, rhs.shape.rank(), out.rank()));
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
    for (name, v) in [("window_strides", &c.window_strides), ("lhs_dilation", &c.lhs_dilation), ("rhs_dilation", &c.rhs_dilation)] {
        if v.iter().any(|&x| x <= 0) {
            return Err(format!("{name} must be positive"));
        }
    }
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
        let dilated = if n == 0 { 0 } else { (n - 1) * c.lhs_dilation[s] + 1 };
        let padded = c.padding[s].0 + dilated + c.padding[s].1;
        let window = if k == 0 { 0 } else { (k - 1) * c.rhs_dilation[s] + 1 };
        let count = if padded <= 0 || window > padded { 0 } else { (padded - window) / c.window_strides[s] + 1 };
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
        let mut isum = 0i64;
        let mut psum = false;
        ki.iter_mut().for_each(|x| *x = 0);
        for _ in 0..window_count {
            // Input offset of this kernel position, or skip it when it lands on padding.
            let mut inside = true;
            for s in 0..ns {
                let w = if c.window_reversal[s] { kdims[s] - 1 - ki[s] } else { ki[s] };
                let q = oi[dn.output_spatial[s] as usize] * c.window_strides[s] + w * c.rhs_dilation[s] - c.padding[s].0;
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
                        Acc::F(l, r) => fsum += l[li] * r[ri],
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
