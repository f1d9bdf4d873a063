//! What an elemental kernel's index expressions ([`Idx`]) say about the addresses they
//! compute, for everyone who must prove something about an address without computing
//! it: a target's vectorizer (is this load contiguous along the vector variable, or the
//! same for every lane?), the arena (does this loop read an input only at the position
//! it stores?) and the row chains (does this load stay in the row being computed?).
//!
//! One form answers all of them: an index as an affine combination of the loop
//! variables plus *atoms*, its subexpressions that are not affine (a division, a
//! remainder, a clamp, a data-dependent index), each kept with its multiplier, once per
//! occurrence:
//!
//! ```text
//! i = sum(coeffs[v] * var_v) + sum(m * atom) + constant
//! ```
//!
//! An atom is opaque to the form. Whether it varies with a variable is decided by its
//! operand (a data-dependent index always may: its value is loaded), and its value
//! range is the builder's ([`Elemental::idx_range`]). The arithmetic is checked: an index
//! whose form would overflow has none, and nothing is proven about it.
//!
//! Where outputs are stored is part of the same story: [`store_strides`] is the
//! row-major position every target stores an output element at.

use super::elemental::{Elemental, Idx, IdxId, Output};
use crate::ir::{ElementType, Shape};

/// An index as `sum(coeffs[v] * var_v) + sum(m * atom) + constant` (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffineIndex {
    /// One per loop variable of the kernel's space.
    pub coeffs: Vec<i64>,
    /// The subexpressions that are not affine in the variables, with their multipliers.
    pub atoms: Vec<(IdxId, i64)>,
    pub constant: i64,
}

impl AffineIndex {
    fn constant(vars: usize, c: i64) -> AffineIndex {
        AffineIndex { coeffs: vec![0; vars], atoms: Vec::new(), constant: c }
    }

    fn sum(&self, other: &AffineIndex) -> Option<AffineIndex> {
        let coeffs = self.coeffs.iter().zip(&other.coeffs).map(|(a, b)| a.checked_add(*b)).collect::<Option<_>>()?;
        let atoms = self.atoms.iter().chain(&other.atoms).copied().collect();
        Some(AffineIndex { coeffs, atoms, constant: self.constant.checked_add(other.constant)? })
    }

    fn times(&self, k: i64) -> Option<AffineIndex> {
        let coeffs = self.coeffs.iter().map(|c| c.checked_mul(k)).collect::<Option<_>>()?;
        let atoms = self.atoms.iter().map(|&(t, m)| Some((t, m.checked_mul(k)?))).collect::<Option<_>>()?;
        Some(AffineIndex { coeffs, atoms, constant: self.constant.checked_mul(k)? })
    }
}

/// How an index depends on one loop variable.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dependence {
    /// It does not vary with the variable.
    Invariant,
    /// `k * var + (an index that does not vary with var)`, `k != 0`.
    Affine(i64),
    /// Anything else: it varies with the variable through an atom (or has no form).
    Other,
}

/// The affine form of every index of one kernel, computed once: an index is built after
/// its operands, so one pass in id order sees every operand's form first.
pub struct IndexAnalysis<'e> {
    e: &'e Elemental,
    forms: Vec<Option<AffineIndex>>,
    /// By index, then variable: whether the index may vary with the variable.
    varies: Vec<bool>,
}

impl<'e> IndexAnalysis<'e> {
    pub fn new(e: &'e Elemental) -> IndexAnalysis<'e> {
        let vars = e.space.len();
        let mut a = IndexAnalysis { e, forms: Vec::with_capacity(e.idx.len()), varies: Vec::new() };
        for (k, node) in e.idx.iter().enumerate() {
            let id = IdxId(k as u32);
            // An operand at or after `k` (a malformed plan) has no form yet: neither has this.
            let form = |x: IdxId| a.forms.get(x.0 as usize).and_then(Option::as_ref);
            let atom = || AffineIndex { atoms: vec![(id, 1)], ..AffineIndex::constant(vars, 0) };
            let f = match *node {
                Idx::Var(v) => ((v as usize) < vars).then(|| {
                    let mut f = AffineIndex::constant(vars, 0);
                    f.coeffs[v as usize] = 1;
                    f
                }),
                Idx::Const(c) => Some(AffineIndex::constant(vars, c)),
                Idx::Add(x, y) => form(x).zip(form(y)).and_then(|(x, y)| x.sum(y)),
                Idx::Mul(x, m) => form(x).and_then(|x| x.times(m)),
                Idx::Div(..) | Idx::Rem(..) | Idx::Clamp(..) | Idx::Data(_) => Some(atom()),
            };
            for v in 0..vars {
                let varies = match (node, &f) {
                    (Idx::Data(_), _) | (_, None) => true,
                    (Idx::Div(x, _) | Idx::Rem(x, _) | Idx::Clamp(x, _, _), _) => a.varies_with(*x, v as u32),
                    (_, Some(f)) => f.coeffs[v] != 0 || f.atoms.iter().any(|&(t, _)| a.varies_with(t, v as u32)),
                };
                a.varies.push(varies);
            }
            a.forms.push(f);
        }
        a
    }

    /// The affine form of `i` (none when its arithmetic overflows).
    pub fn affine(&self, i: IdxId) -> Option<&AffineIndex> {
        self.forms.get(i.0 as usize)?.as_ref()
    }

    /// Whether `i` may take different values for different values of variable `v`.
    pub fn varies_with(&self, i: IdxId, v: u32) -> bool {
        let vars = self.e.space.len();
        (v as usize) >= vars || *self.varies.get(i.0 as usize * vars + v as usize).unwrap_or(&true)
    }

    /// How `i` depends on variable `v`.
    pub fn dependence(&self, i: IdxId, v: u32) -> Dependence {
        if !self.varies_with(i, v) {
            return Dependence::Invariant;
        }
        match self.affine(i) {
            Some(f) if !f.atoms.iter().any(|&(t, _)| self.varies_with(t, v)) => {
                f.coeffs.get(v as usize).map_or(Dependence::Other, |&k| Dependence::Affine(k))
            }
            _ => Dependence::Other,
        }
    }

    /// The range `[min, max]` that `i` minus its term in variable `v` takes over the
    /// iteration space (none without a form, or when the bounds overflow).
    pub fn range_without(&self, i: IdxId, v: u32) -> Option<(i64, i64)> {
        let f = self.affine(i)?;
        let scaled = |(lo, hi): (i64, i64), m: i64| {
            let (a, b) = (lo.checked_mul(m)?, hi.checked_mul(m)?);
            Some((a.min(b), a.max(b)))
        };
        let vars = f.coeffs.iter().enumerate().filter(|&(w, _)| w != v as usize);
        let terms = vars.map(|(w, &c)| scaled((0, (self.e.space[w] - 1).max(0)), c));
        let atoms = f.atoms.iter().map(|&(t, m)| scaled(*self.e.idx_range.get(t.0 as usize)?, m));
        terms.chain(atoms).try_fold((f.constant, f.constant), |(lo, hi), t| {
            let (a, b) = t?;
            Some((lo.checked_add(a)?, hi.checked_add(b)?))
        })
    }

    /// Whether `i` is exactly `sum(stride * var)` over `position` (variable, stride)
    /// pairs, as [`store_strides`] gives them: no atom, no constant, and every other
    /// variable's coefficient 0, except that a variable of extent at most 1 (always 0)
    /// may have any.
    pub fn is_position(&self, i: IdxId, position: &[(u32, i64)]) -> bool {
        let Some(f) = self.affine(i) else { return false };
        let stride = |v: usize| position.iter().find(|p| p.0 as usize == v).map_or(0, |p| p.1);
        f.atoms.is_empty()
            && f.constant == 0
            && f.coeffs.iter().enumerate().all(|(v, &c)| c == stride(v) || self.e.space[v] <= 1)
    }
}

/// Where output `out` of `e` stores its elements: each of its variables (the whole
/// space for an input-shaped output of a reduction, the kept variables otherwise,
/// outermost first) with its row-major stride, so the element at the current variables
/// is `sum(stride * var)`.
///
/// Strides computed on demand rather than an [`IdxId`] per [`Output`] built at plan
/// time: such an index would be hash-consed with the loads' indices and evaluated
/// through their memo, in their operand order, so the CPU target's store addresses (one
/// multiply-add per variable) would come out as other instructions; and a target that
/// stores vectors needs the stride of its vector variable (1 here: it is innermost)
/// anyway, which an index expression would only give back through this analysis.
pub fn store_strides(e: &Elemental, out: &Output) -> Vec<(u32, i64)> {
    let vars: Vec<u32> = if out.inner { (0..e.space.len() as u32).collect() } else { e.outer_vars() };
    let dims: Vec<i64> = vars.iter().map(|&v| e.space[v as usize]).collect();
    let strides = Shape::new(ElementType::F32, dims).strides();
    vars.into_iter().zip(strides).map(|(v, s)| (v, s as i64)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Computation;
    use crate::kernel::elemental::{Builder, ExprId};
    use std::collections::HashMap;

    /// Builds indices over a space of `dims` (with `reduced` variables) through the
    /// planner's own builder (hash-consed, simplified, with value ranges).
    fn with_space<R>(dims: &[i64], reduced: &[bool], f: impl FnOnce(&mut Builder) -> R) -> (Elemental, R) {
        let comp = Computation::new("t".to_string());
        let mut b = Builder::new(&comp, HashMap::default());
        b.e.space = dims.to_vec();
        b.e.reduced = reduced.to_vec();
        let r = f(&mut b);
        (b.e, r)
    }

    fn var(b: &mut Builder, v: u32) -> IdxId {
        b.idx(Idx::Var(v))
    }

    #[test]
    fn a_row_major_index_has_the_strides_as_coefficients() {
        // [v0, v1 + 2] in a [4, 10] array: 10*v0 + v1 + 2.
        let (e, i) = with_space(&[4, 8], &[false, false], |b| {
            let (v0, v1) = (var(b, 0), var(b, 1));
            let col = b.add_const(v1, 2);
            b.linearize(&[v0, col], &[4, 10])
        });
        let a = IndexAnalysis::new(&e);
        assert_eq!(a.affine(i), Some(&AffineIndex { coeffs: vec![10, 1], atoms: vec![], constant: 2 }));
    }

    #[test]
    fn dependence_on_one_variable_as_the_vectorizer_sees_it() {
        // Space [3, 4, 16], vector variable 2.
        let (e, [contiguous, strided, invariant, through_div, transposed]) =
            with_space(&[3, 4, 16], &[false; 3], |b| {
                let (v0, v1, v2) = (var(b, 0), var(b, 1), var(b, 2));
                let contiguous = b.linearize(&[v0, v1, v2], &[3, 4, 16]);
                // Every third element of rows of 48: 48 * v1 + 3 * v2.
                let (r, s) = (b.idx(Idx::Mul(v1, 48)), b.idx(Idx::Mul(v2, 3)));
                let strided = b.add(r, s);
                // A broadcast along v2 reads at v0 and v1 only, even through a division.
                let row = b.linearize(&[v0, v1], &[3, 4]);
                let invariant = b.idx(Idx::Div(row, 3));
                let through_div = b.add(v2, invariant);
                // A transpose reads v2 through a division of the flattened index.
                let flat = b.linearize(&[v2, v0], &[16, 3]);
                let transposed = b.idx(Idx::Div(flat, 2));
                [contiguous, strided, invariant, through_div, transposed]
            });
        let a = IndexAnalysis::new(&e);
        assert_eq!(a.dependence(contiguous, 2), Dependence::Affine(1));
        assert_eq!(a.dependence(contiguous, 1), Dependence::Affine(16));
        assert_eq!(a.dependence(strided, 2), Dependence::Affine(3));
        assert_eq!(a.dependence(invariant, 2), Dependence::Invariant);
        assert_eq!(a.dependence(invariant, 0), Dependence::Other);
        assert_eq!(a.dependence(through_div, 2), Dependence::Affine(1));
        assert_eq!(a.dependence(transposed, 2), Dependence::Other);
        assert_eq!(a.dependence(transposed, 1), Dependence::Invariant);
    }

    #[test]
    fn terms_that_cancel_leave_no_dependence() {
        let (e, i) = with_space(&[8, 8], &[false, false], |b| {
            let (v0, v1) = (var(b, 0), var(b, 1));
            let minus = b.idx(Idx::Mul(v1, -1));
            let t = b.add(v1, minus);
            b.add(t, v0)
        });
        let a = IndexAnalysis::new(&e);
        assert_eq!(a.dependence(i, 1), Dependence::Invariant);
        assert_eq!(a.dependence(i, 0), Dependence::Affine(1));
    }

    #[test]
    fn a_data_dependent_index_varies_with_every_variable() {
        // A dynamic slice's start: clamp(data) + v1.
        let (e, (i, start)) = with_space(&[2, 5], &[false, false], |b| {
            b.e.nodes.push(crate::kernel::elemental::Expr {
                node: crate::kernel::elemental::Node::Const(crate::ir::Scalar::S(3)),
                elem: ElementType::S32,
            });
            let data = b.idx(Idx::Data(ExprId(0)));
            let start = b.idx(Idx::Clamp(data, 0, 7));
            let v1 = var(b, 1);
            (b.add(start, v1), start)
        });
        let a = IndexAnalysis::new(&e);
        assert_eq!(a.affine(i).map(|f| f.atoms.clone()), Some(vec![(start, 1)]));
        assert_eq!(a.dependence(i, 0), Dependence::Other);
        assert_eq!(a.dependence(i, 1), Dependence::Other);
        assert!(a.varies_with(start, 0));
    }

    #[test]
    fn the_range_without_a_variable_bounds_the_rest_of_the_index() {
        // Space [6, 4, 5]: 20*v0 + 5*v1 + v2 leaves [0, 19] without v0: row 20 holds it.
        let (e, [rows, shifted, wrapped]) = with_space(&[6, 4, 5], &[false, true, true], |b| {
            let (v0, v1, v2) = (var(b, 0), var(b, 1), var(b, 2));
            let rows = b.linearize(&[v0, v1, v2], &[6, 4, 5]);
            let shifted = b.add_const(rows, 20);
            // (v1 + 3) % 4 is an atom of range [0, 3].
            let v1_3 = b.add_const(v1, 3);
            let rem = b.idx(Idx::Rem(v1_3, 4));
            let wrapped = b.linearize(&[v0, rem, v2], &[6, 4, 5]);
            [rows, shifted, wrapped]
        });
        let a = IndexAnalysis::new(&e);
        assert_eq!(a.range_without(rows, 0), Some((0, 19)));
        assert_eq!(a.dependence(rows, 0), Dependence::Affine(20));
        assert_eq!(a.range_without(shifted, 0), Some((20, 39)));
        assert_eq!(a.range_without(wrapped, 0), Some((0, 19)));
        assert_eq!(a.dependence(wrapped, 0), Dependence::Affine(20));
        assert_eq!(a.range_without(wrapped, 2), Some((0, 115)));
    }

    #[test]
    fn a_position_is_exactly_the_stores_strides() {
        let (mut e, [same, transposed, broadcast, shifted, unit]) = with_space(&[4, 1, 6], &[false; 3], |b| {
            let (v0, v1, v2) = (var(b, 0), var(b, 1), var(b, 2));
            let same = b.linearize(&[v0, v1, v2], &[4, 1, 6]);
            let transposed = b.linearize(&[v2, v1, v0], &[6, 1, 4]);
            let broadcast = b.linearize(&[v0], &[4]);
            let shifted = b.add_const(same, 1);
            // Variable 1 has extent 1: its coefficient does not matter.
            let extra = b.idx(Idx::Mul(v1, 7));
            let unit = b.add(same, extra);
            [same, transposed, broadcast, shifted, unit]
        });
        e.outputs.push(Output { expr: ExprId(0), inner: false, elem: ElementType::F32 });
        let position = store_strides(&e, &e.outputs[0]);
        assert_eq!(position, [(0, 6), (1, 6), (2, 1)]);
        let a = IndexAnalysis::new(&e);
        assert!(a.is_position(same, &position));
        assert!(a.is_position(unit, &position));
        assert!(!a.is_position(transposed, &position));
        assert!(!a.is_position(broadcast, &position));
        assert!(!a.is_position(shifted, &position));
    }

    #[test]
    fn outputs_store_at_their_variables_row_major_position() {
        // A row reduction over [3, 4, 5] reducing variable 1: results at the kept (v0, v2),
        // input-shaped outputs at all three.
        let (mut e, ()) = with_space(&[3, 4, 5], &[false, true, false], |_| ());
        e.outputs.push(Output { expr: ExprId(0), inner: false, elem: ElementType::F32 });
        e.outputs.push(Output { expr: ExprId(0), inner: true, elem: ElementType::F32 });
        assert_eq!(store_strides(&e, &e.outputs[0]), [(0, 5), (2, 1)]);
        assert_eq!(store_strides(&e, &e.outputs[1]), [(0, 20), (1, 5), (2, 1)]);
    }

    #[test]
    fn an_overflowing_index_has_no_form() {
        let (e, i) = with_space(&[2], &[false], |b| {
            let v0 = var(b, 0);
            let big = b.idx(Idx::Mul(v0, i64::MAX));
            b.add(big, big)
        });
        let a = IndexAnalysis::new(&e);
        assert_eq!(a.affine(i), None);
        assert_eq!(a.dependence(i, 0), Dependence::Other);
        assert!(!a.is_position(i, &[(0, 1)]));
    }
}
