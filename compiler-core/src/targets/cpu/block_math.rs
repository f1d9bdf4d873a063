//! The native block versions of the f32 transcendentals, as the CPU target sees them:
//! `hloscope_approx::block` has the functions (`hs_block_<op>_f32(ptr, n)`, compiled
//! by LLVM for AVX-512, AVX2 or the baseline, chosen at run time, bit for bit the JIT's
//! inline code); this module maps the IR's [`UnaryOp`] onto them, for the emitter
//! (which strip-mines a kernel's transcendentals into calls of them when
//! [`native_lanes`] is wider than its own 4 lanes), the JIT's symbol table and the tests.
//!
//! They live in their own crate so that debug builds optimize, and vectorize, them as
//! release builds do: the tests then check the code that ships.

use crate::ir::UnaryOp;
use hloscope_approx::block::{self, BlockOp};

pub use hloscope_approx::block::{level, native_lanes, Level, DIV_SYMBOL, EXP_CHUNK};

/// The block op of `op`, if it has one.
fn block_op(op: UnaryOp) -> Option<BlockOp> {
    Some(match op {
        UnaryOp::Exp => BlockOp::Exp,
        UnaryOp::Expm1 => BlockOp::Expm1,
        UnaryOp::Log => BlockOp::Log,
        UnaryOp::Log1p => BlockOp::Log1p,
        UnaryOp::Tanh => BlockOp::Tanh,
        UnaryOp::Logistic => BlockOp::Logistic,
        UnaryOp::Erf => BlockOp::Erf,
        _ => return None,
    })
}

/// A native block function as the emitter names it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockFunction {
    /// The op, as summaries name it (`exp`, `div`).
    pub name: &'static str,
    pub symbol: &'static str,
}

/// The division's block function ([`DIV_SYMBOL`]).
pub const DIV: BlockFunction = BlockFunction { name: "div", symbol: DIV_SYMBOL };

/// The block function of `op`, if it has one.
pub fn block_function(op: UnaryOp) -> Option<BlockFunction> {
    block_op(op).map(|b| BlockFunction { name: b.name(), symbol: b.symbol() })
}

/// Every block function: symbol and address (for the JIT's symbol table).
pub fn block_symbols() -> Vec<(&'static str, *const u8)> {
    block::symbols()
}

/// Applies `op` (one of the block ops) in place at `level`; an error when `op` has no
/// block function or this CPU lacks `level`. For tests and benchmarks.
#[doc(hidden)]
pub fn apply(op: UnaryOp, level: Level, xs: &mut [f32]) -> Result<(), String> {
    let op = block_op(op).ok_or_else(|| format!("{op:?} has no block function"))?;
    block::apply(op, level, xs)
}
