//! Resource limits: how large a module may be before anything is allocated for it.
//!
//! Text written by strangers can declare `f32[65536,65536,65536,65536]` (2^64 elements,
//! which wraps a 64-bit product to 0) or an `iota` of 1e11 elements (an allocation no
//! machine grants, and an abort rather than an error). Every stage that sizes memory
//! from shapes relies on the one check here, [`check_module`]: the readers apply
//! [`Limits::check_shape`] to each type they read (with [`MAX_ELEMENTS`]), the verifier
//! applies [`check_module`] with the default [`Limits`], and the interpreter, the kernel
//! planner and the CPU target apply it again on entry, so that a module built directly
//! (never parsed or verified) still gets an error instead of an abort. A server calls
//! [`check_module`] with its own, lower limits before doing anything else.
//!
//! The check walks the module's live instructions without allocating (the error path
//! aside), so it costs about as much as counting them.

use crate::ir::{Computation, InstId, Loc, Module, Op, Shape, Type};
use std::fmt;

/// Elements of one array, by default: 2^29, so that an array is at most 4 GiB (f64)
/// and every size derived from it (bytes, strides, offsets in an arena of a few such
/// arrays) stays far from 64-bit overflow.
pub const MAX_ELEMENTS: u64 = 1 << 29;

/// Bytes of all the arrays of a module together, by default: 64 GiB.
pub const MAX_TOTAL_BYTES: u64 = 1 << 36;

/// Live instructions of a module, by default (the StableHLO reader also stops expanding
/// a program that grows past it).
pub const MAX_INSTRUCTIONS: u64 = 5_000_000;

/// Dimensions of one array, by default. Real programs stay in single digits; past this,
/// code generation (one loop per dimension) and recursion over dimensions (literal
/// lists) grow without bound while the element count stays 1.
pub const MAX_RANK: usize = 64;

/// How large a module may be. [`Limits::default`] is what the verifier applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most elements of one array. Also bounds the index space of an empty array (the
    /// product of its dimensions with zeros counted as one), since loops run over it;
    /// the positions of a reduce-window's or select-and-scatter's window (attributes,
    /// not an array, but loops over them nest inside the loops over the result); and
    /// the magnitude of every attribute that enters index arithmetic (pad amounts,
    /// strides, dilations, window padding): past the largest dimension they mean
    /// nothing more, and within it `low + i * (interior + 1)` and the like stay far
    /// from 64-bit overflow.
    pub max_elements: u64,
    /// Most bytes of all arrays together: every live instruction's result in every
    /// computation (parameters, results and intermediates; fusion bodies included, since
    /// the interpreter materializes them), an upper bound of what a run holds at once.
    /// Tuples and their elements alias other values and are not counted again.
    pub max_total_bytes: u64,
    /// Most live instructions over all computations.
    pub max_instructions: u64,
    /// Most dimensions of one array.
    pub max_rank: usize,
}

impl Limits {
    /// The defaults: [`MAX_ELEMENTS`], [`MAX_TOTAL_BYTES`], [`MAX_INSTRUCTIONS`],
    /// [`MAX_RANK`].
    pub const DEFAULT: Limits = Limits {
        max_elements: MAX_ELEMENTS,
        max_total_bytes: MAX_TOTAL_BYTES,
        max_instructions: MAX_INSTRUCTIONS,
        max_rank: MAX_RANK,
    };

    /// Checks one array shape against [`Limits::max_elements`] and
    /// [`Limits::max_rank`]; returns its bytes. The message names the shape and its
    /// size: `f32[65536,65536,65536,65536] has 1.8e19 elements, more than the limit of
    /// 536870912`.
    pub fn check_shape(&self, s: &Shape) -> Result<u64, String> {
        if s.rank() > self.max_rank {
            // Not the shape itself: thousands of dimensions make no readable message.
            return Err(format!(
                "{} array of rank {} has more dimensions than the limit of {}",
                s.elem,
                s.rank(),
                self.max_rank
            ));
        }
        // The index space: zeros count as one, so that an empty array with a huge
        // dimension (whose loops would still run) is refused too.
        let span = s.dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d.max(1) as u64));
        match (span, s.checked_num_elements()) {
            // Saturating: a caller's limits may be far above the defaults.
            (Some(span), Some(n)) if span <= self.max_elements => Ok(n.saturating_mul(s.elem.byte_size() as u64)),
            (_, Some(0)) => Err(format!(
                "{s} is empty but spans {} index positions, more than the limit of {} elements",
                count(span, s),
                self.max_elements
            )),
            (_, n) => Err(format!("{s} has {} elements, more than the limit of {}", count(n, s), self.max_elements)),
        }
    }

    /// Checks every array of a type; returns their total bytes (saturating).
    pub fn check_type(&self, ty: &Type) -> Result<u64, String> {
        match ty {
            Type::Array(s) => self.check_shape(s),
            Type::Tuple(ts) => ts.iter().try_fold(0u64, |sum, t| Ok(sum.saturating_add(self.check_type(t)?))),
            Type::Token => Ok(0),
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

/// A module over a limit: the instruction where it went over, its source location (the
/// line and column it was parsed from; 0:0 when a pass made it), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitError {
    pub computation: String,
    pub inst: String,
    pub loc: Loc,
    pub message: String,
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: %{}: {}", self.loc, self.inst, self.message)
    }
}

impl std::error::Error for LimitError {}

impl LimitError {
    fn at(comp: &Computation, inst: InstId, message: String) -> LimitError {
        let i = comp.inst(inst);
        LimitError { computation: comp.name.clone(), inst: i.name.clone(), loc: i.loc.clone(), message }
    }
}

/// Checks every live instruction of every computation (reachable or not: cheaper than
/// finding out, and stricter) against `limits`: each array's elements and rank, the
/// attributes loops run over (windows, paddings, strides, dilations), the total bytes
/// and the instruction count. Allocates nothing unless it fails. Instructions missing
/// from their arena are skipped (the verifier reports those).
pub fn check_module(module: &Module, limits: &Limits) -> Result<(), LimitError> {
    let mut total_bytes = 0u64;
    let mut instructions = 0u64;
    for comp in module.comps.values() {
        for &id in &comp.order {
            let Some(inst) = comp.insts.get(id) else { continue };
            instructions += 1;
            if instructions > limits.max_instructions {
                return Err(LimitError::at(
                    comp,
                    id,
                    format!("the module has more than {} instructions, the limit", limits.max_instructions),
                ));
            }
            let bytes = limits.check_type(&inst.ty).map_err(|m| LimitError::at(comp, id, m))?;
            check_attributes(&inst.op, limits).map_err(|m| LimitError::at(comp, id, m))?;
            if !matches!(inst.op, Op::Tuple | Op::GetTupleElement { .. }) {
                total_bytes = total_bytes.saturating_add(bytes);
            }
            if total_bytes > limits.max_total_bytes {
                return Err(LimitError::at(
                    comp,
                    id,
                    format!(
                        "the results of the module's instructions up to this one total {}, more than the limit of {}",
                        format_bytes(total_bytes),
                        format_bytes(limits.max_total_bytes)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The attributes of `op` that loops and index arithmetic use, against
/// [`Limits::max_elements`] (see there).
fn check_attributes(op: &Op, limits: &Limits) -> Result<(), String> {
    let max = limits.max_elements;
    let each = |what: &str, values: &mut dyn Iterator<Item = i64>| -> Result<(), String> {
        for v in values {
            if v.unsigned_abs() > max {
                return Err(format!("{} {what} {v} is beyond the limit of ±{max}", op.hlo_name()));
            }
        }
        Ok(())
    };
    let window = |window_dims: &[i64], strides: &[i64], padding: &[(i64, i64)]| -> Result<(), String> {
        // Within the limit, window times result stays below 2^58: no product of
        // loop extents overflows, whatever the padding made room for.
        let positions = window_dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d.max(1) as u64));
        if positions.is_none_or(|n| n > max) {
            let n = match positions {
                Some(n) => n.to_string(),
                None => format!("{:.1e}", window_dims.iter().map(|&d| d.max(1) as f64).product::<f64>()),
            };
            return Err(format!("the window {window_dims:?} has {n} positions, more than the limit of {max}"));
        }
        each("stride", &mut strides.iter().copied())?;
        each("padding", &mut padding.iter().flat_map(|&(lo, hi)| [lo, hi]))
    };
    match op {
        Op::Pad { low, high, interior } => {
            each("padding", &mut low.iter().chain(high).copied())?;
            each("interior padding", &mut interior.iter().copied())
        }
        Op::Slice { stride, .. } => each("stride", &mut stride.iter().copied()),
        Op::Convolution(c) => {
            each("stride", &mut c.window_strides.iter().copied())?;
            each("padding", &mut c.padding.iter().flat_map(|&(lo, hi)| [lo, hi]))?;
            each("dilation", &mut c.lhs_dilation.iter().chain(&c.rhs_dilation).copied())
        }
        Op::ReduceWindow(a) => {
            window(&a.window_dims, &a.strides, &a.padding)?;
            each("dilation", &mut a.base_dilations.iter().chain(&a.window_dilations).copied())
        }
        Op::SelectAndScatter(a) => window(&a.window_dims, &a.strides, &a.padding),
        _ => Ok(()),
    }
}

/// A count for a message: exact when it fits 64 bits, else `1.8e19` from the dims.
fn count(n: Option<u64>, s: &Shape) -> String {
    match n {
        Some(n) => n.to_string(),
        None => {
            let approx: f64 = s.dims.iter().map(|&d| d.max(1) as f64).product();
            if approx.is_finite() {
                format!("{approx:.1e}")
            } else {
                "more than 1e308".to_string()
            }
        }
    }
}

/// `68719476736 bytes (64.0 GiB)`.
pub fn format_bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{b} bytes ({:.1} GiB)", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{b} bytes ({:.1} MiB)", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{b} bytes")
    }
}
