//! Interpreter: `triangular_solve` and `cholesky` over batches of matrices.
//!
//! Both work on the last two dimensions, batched over the leading ones, in f64, and round
//! once to the element type at the end. Only the triangle named by `lower` is read.
//! Transpose and adjoint are the same for the real types hloscope supports. cholesky
//! writes zeros in the unused triangle (the spec leaves it implementation-defined); a
//! matrix that is not positive definite yields NaNs, as XLA's does.

use super::index::{array_arg, result_shape};
use super::Interpreter;
use crate::ir::literal::round_float;
use crate::ir::{Data, Instruction, Literal, Op, Transpose, Value};

/// Splits `dims` into (batch count, rows, cols) after checking rank >= 2.
fn matrix_dims(what: &str, dims: &[i64]) -> Result<(usize, usize, usize), String> {
    if dims.len() < 2 {
        return Err(format!("{what} must have rank >= 2, got {dims:?}"));
    }
    let r = dims[dims.len() - 2] as usize;
    let c = dims[dims.len() - 1] as usize;
    let batch = dims[..dims.len() - 2].iter().map(|&d| d as usize).product();
    Ok((batch, r, c))
}

fn floats(what: &str, l: &Literal) -> Result<Vec<f64>, String> {
    if !l.elem().is_float() {
        return Err(format!("{what} must be a float array, got {}", l.elem()));
    }
    Ok(l.to_f64_vec())
}

pub(super) fn triangular_solve(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::TriangularSolve(t) = &inst.op else { return Err("not a triangular_solve".into()) };
    let a = array_arg(args, 0)?;
    let b = array_arg(args, 1)?;
    let out = result_shape(inst)?;
    let (batch, m, m2) = matrix_dims("a", &a.shape.dims)?;
    let (batch_b, rows, cols) = matrix_dims("b", &b.shape.dims)?;
    let ra = a.shape.rank();
    if m != m2 || ra != b.shape.rank() || a.shape.dims[..ra - 2] != b.shape.dims[..ra - 2] || batch != batch_b {
        return Err(format!("a {:?} must be square with the batch dims of b {:?}", a.shape.dims, b.shape.dims));
    }
    if (t.left_side && rows != m) || (!t.left_side && cols != m) {
        return Err(format!(
            "b {:?} does not match a {m}x{m} on the {} side",
            b.shape.dims,
            if t.left_side { "left" } else { "right" }
        ));
    }
    if !out.same_dims(&b.shape) || out.elem != b.elem() || a.elem() != b.elem() {
        return Err(format!("result {out} must have the type of b"));
    }
    let av = floats("a", a)?;
    let bv = floats("b", b)?;
    let transposed = t.transpose_a != Transpose::NoTranspose;
    let mut res = Vec::with_capacity(bv.len());
    for k in 0..batch {
        let am = &av[k * m * m..(k + 1) * m * m];
        // op(a) as a dense matrix, zero outside the triangle that is read.
        let mut op = vec![0.0f64; m * m];
        for i in 0..m {
            for j in 0..m {
                let in_triangle = if t.lower { j <= i } else { j >= i };
                let v = if i == j && t.unit_diagonal {
                    1.0
                } else if in_triangle {
                    am[i * m + j]
                } else {
                    0.0
                };
                if transposed {
                    op[j * m + i] = v;
                } else {
                    op[i * m + j] = v;
                }
            }
        }
        let op_lower = t.lower != transposed;
        let bm = &bv[k * rows * cols..(k + 1) * rows * cols];
        let x = if t.left_side {
            // op(a) x = b, column by column of b.
            solve(&op, op_lower, m, bm, cols)
        } else {
            // x op(a) = b  <=>  op(a)^T x^T = b^T.
            let mut op_t = vec![0.0; m * m];
            let mut b_t = vec![0.0; rows * cols];
            for i in 0..m {
                for j in 0..m {
                    op_t[j * m + i] = op[i * m + j];
                }
            }
            for i in 0..rows {
                for j in 0..cols {
                    b_t[j * rows + i] = bm[i * cols + j];
                }
            }
            let x_t = solve(&op_t, !op_lower, m, &b_t, rows);
            let mut x = vec![0.0; rows * cols];
            for i in 0..rows {
                for j in 0..cols {
                    x[i * cols + j] = x_t[j * rows + i];
                }
            }
            x
        };
        res.extend(x);
    }
    let elem = out.elem;
    Ok(Value::Array(Literal::new(out, Data::F(res.into_iter().map(|v| round_float(elem, v)).collect()))))
}

/// Solves `t x = b` for a triangular m x m matrix `t` and an m x n right-hand side.
fn solve(t: &[f64], lower: bool, m: usize, b: &[f64], n: usize) -> Vec<f64> {
    let mut x = b.to_vec();
    for col in 0..n {
        let order: Vec<usize> = if lower { (0..m).collect() } else { (0..m).rev().collect() };
        for &i in &order {
            let mut s = x[i * n + col];
            let known = if lower { 0..i } else { i + 1..m };
            for j in known {
                s -= t[i * m + j] * x[j * n + col];
            }
            x[i * n + col] = s / t[i * m + i];
        }
    }
    x
}

pub(super) fn cholesky(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Cholesky { lower } = inst.op else { return Err("not a cholesky".into()) };
    let a = array_arg(args, 0)?;
    let out = result_shape(inst)?;
    let (batch, n, n2) = matrix_dims("a", &a.shape.dims)?;
    if n != n2 {
        return Err(format!("a must be square, got {:?}", a.shape.dims));
    }
    if !out.same_dims(&a.shape) || out.elem != a.elem() {
        return Err(format!("result {out} must have the type of a"));
    }
    let av = floats("a", a)?;
    let mut res = vec![0.0f64; av.len()];
    for k in 0..batch {
        let am = &av[k * n * n..(k + 1) * n * n];
        // Entry (i, j), i >= j, of the lower triangle that is read: a's own lower
        // triangle, or the mirror of its upper one.
        let read = |i: usize, j: usize| if lower { am[i * n + j] } else { am[j * n + i] };
        let mut l = vec![0.0f64; n * n];
        for j in 0..n {
            let mut d = read(j, j);
            for p in 0..j {
                d -= l[j * n + p] * l[j * n + p];
            }
            let d = d.sqrt();
            l[j * n + j] = d;
            for i in j + 1..n {
                let mut s = read(i, j);
                for p in 0..j {
                    s -= l[i * n + p] * l[j * n + p];
                }
                l[i * n + j] = s / d;
            }
        }
        let r = &mut res[k * n * n..(k + 1) * n * n];
        for i in 0..n {
            for j in 0..=i {
                if lower {
                    r[i * n + j] = l[i * n + j];
                } else {
                    r[j * n + i] = l[i * n + j];
                }
            }
        }
    }
    let elem = out.elem;
    Ok(Value::Array(Literal::new(out, Data::F(res.into_iter().map(|v| round_float(elem, v)).collect()))))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{ElementType::*, Op, Transpose, TriangularSolveAttrs};

    fn solve(left: bool, lower: bool, unit: bool, tr: Transpose, a: &[f64], b: &[f64], bdims: &[i64]) -> Vec<f64> {
        let n = (a.len() as f64).sqrt() as i64;
        let attrs = TriangularSolveAttrs { left_side: left, lower, unit_diagonal: unit, transpose_a: tr };
        let out = run_op_array(
            Op::TriangularSolve(attrs),
            arr(F64, bdims),
            &[lit(F64, &[n, n], a).into(), lit(F64, bdims, b).into()],
        );
        out.to_f64_vec()
    }

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "got {got:?}, want {want:?}");
        }
    }

    // The two matrices of stablehlo interpret/triangular_solve.mlir; each reads only one
    // triangle, so junk (99) in the other must not matter.
    const LOWER: [f64; 9] = [1.0, 99.0, 99.0, 2.0, 3.0, 99.0, 4.0, 5.0, 6.0];
    const UPPER: [f64; 9] = [1.0, 2.0, 4.0, 99.0, 3.0, 5.0, 99.0, 99.0, 6.0];
    const B: [f64; 3] = [7.0, 8.0, 9.0];
    const X1: [f64; 3] = [7.0, -2.0, -1.5];
    const X2: [f64; 3] = [2.0 / 3.0, 1.0 / 6.0, 1.5];

    #[test]
    fn all_sides_triangles_and_transposes() {
        use crate::ir::Transpose::{Adjoint, NoTranspose, Transpose};
        let col = [3, 1];
        let row = [1, 3];
        close(&solve(true, true, false, NoTranspose, &LOWER, &B, &col), &X1);
        close(&solve(true, false, false, NoTranspose, &UPPER, &B, &col), &X2);
        close(&solve(false, true, false, NoTranspose, &LOWER, &B, &row), &X2);
        close(&solve(false, false, false, NoTranspose, &UPPER, &B, &row), &X1);
        close(&solve(true, true, false, Transpose, &LOWER, &B, &col), &X2);
        close(&solve(true, false, false, Transpose, &UPPER, &B, &col), &X1);
        close(&solve(false, true, false, Adjoint, &LOWER, &B, &row), &X1);
        close(&solve(false, false, false, Transpose, &UPPER, &B, &row), &X2);
    }

    #[test]
    fn unit_diagonal_ignores_the_diagonal() {
        // [[1,0],[2,1]] x = [3, 8]  ->  x = [3, 2], whatever the stored diagonal says.
        let got = solve(true, true, true, Transpose::NoTranspose, &[5.0, 0.0, 2.0, 7.0], &[3.0, 8.0], &[2, 1]);
        close(&got, &[3.0, 2.0]);
    }

    #[test]
    fn batched_solve_in_f32() {
        let a = lit(F32, &[2, 2, 2], &[2.0, 0.0, 1.0, 4.0, 1.0, 0.0, 0.0, 3.0]);
        let b = lit(F32, &[2, 2, 1], &[2.0, 9.0, 1.0, 1.0]);
        let attrs = TriangularSolveAttrs {
            left_side: true,
            lower: true,
            unit_diagonal: false,
            transpose_a: Transpose::NoTranspose,
        };
        let out = run_op_array(Op::TriangularSolve(attrs), arr(F32, &[2, 2, 1]), &[a.into(), b.into()]);
        // Batch 0: x0 = 1, x1 = (9 - 1) / 4 = 2. Batch 1: x = [1, 1/3] rounded to f32.
        assert_eq!(out.to_f64_vec(), [1.0, 2.0, 1.0, (1.0f32 / 3.0) as f64]);
    }

    #[test]
    fn cholesky_spec_example_lower_and_upper() {
        let a = [1.0, 2.0, 3.0, 2.0, 20.0, 26.0, 3.0, 26.0, 70.0];
        let l = run_op_array(Op::Cholesky { lower: true }, arr(F32, &[3, 3]), &[lit(F32, &[3, 3], &a).into()]);
        assert_eq!(l.to_f64_vec(), [1.0, 0.0, 0.0, 2.0, 4.0, 0.0, 3.0, 5.0, 6.0]);
        let u = run_op_array(Op::Cholesky { lower: false }, arr(F32, &[3, 3]), &[lit(F32, &[3, 3], &a).into()]);
        assert_eq!(u.to_f64_vec(), [1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 0.0, 0.0, 6.0]);
    }

    #[test]
    fn cholesky_batched_and_not_positive_definite() {
        let a = lit(F64, &[2, 2, 2], &[4.0, 2.0, 2.0, 5.0, 1.0, 2.0, 2.0, 1.0]);
        let out = run_op_array(Op::Cholesky { lower: true }, arr(F64, &[2, 2, 2]), &[a.into()]).to_f64_vec();
        // [[4,2],[2,5]] = L L^T with L = [[2,0],[1,2]]; the second matrix is indefinite.
        assert_eq!(out[..4], [2.0, 0.0, 1.0, 2.0]);
        assert!(out[7].is_nan());
    }

    #[test]
    fn rejects_non_float_and_non_square() {
        let err = run_op(Op::Cholesky { lower: true }, arr(S32, &[2, 2]), &[ints(S32, &[2, 2], &[1, 0, 0, 1]).into()]);
        assert!(err.unwrap_err().message.contains("float"));
        let err = run_op(Op::Cholesky { lower: true }, arr(F32, &[2, 3]), &[f32s(&[2, 3], &[0.0; 6]).into()]);
        assert!(err.unwrap_err().message.contains("square"));
    }
}
