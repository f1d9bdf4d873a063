//! Native block versions of the f32 transcendentals, for kernels that strip-mine a
//! compute-bound loop: the CPU target's JIT writes a transcendental's arguments for a
//! block of elements into a buffer, calls `hs_block_<op>_f32(src, dst, n)` to apply the
//! op (in place when `src == dst`; from the kernel's input itself, with no copy, when
//! the argument is a plain contiguous load), and goes on. Cranelift's x86-64 backend has 128-bit vectors only (4 f32
//! lanes); these functions are compiled by LLVM for AVX-512 (16 lanes) or AVX2 (8
//! lanes), so the transcendental part of such a kernel runs two to four times wider.
//!
//! The algorithms are those of [`crate::algorithms`] instantiated with native `f32`
//! lanes ([`Scalar`]), and the results are bit for bit those of the JIT's own inline
//! code (`compiler-core/tests/cpu_block_math.rs` checks every op at every level the
//! machine has), as long as the fma choice is the JIT's: the AVX levels fuse (`fma` is
//! part of their target features, and the JIT uses fma on such a CPU), the portable
//! level does not on x86-64 (the JIT on an x86-64 without FMA) and does elsewhere
//! (Cranelift always fuses on aarch64 and riscv64). An x86-64 with FMA but without AVX2
//! would get the portable level with the JIT fusing; [`native_lanes`] says 4 there, and
//! the JIT calls these functions only when it says more.
//!
//! Each level is one generic loop per op, monomorphized inside a `#[target_feature]`
//! function with all lane code `#[inline(always)]`, so LLVM vectorizes it for that
//! level (from opt-level 2: hence this crate's opt-level 3 in the dev profile too); the
//! level is detected once ([`level`]). exp decides per chunk of [`EXP_CHUNK`] elements
//! between its fast and its clamped form (a vectorizable test of the whole chunk: a
//! branch per element would stop vectorization); the two give the same bits on the
//! fast range, so the chunk's choice does not change any result, and neither does the
//! JIT's choice per vector of 4. logistic uses the clamped form (its `exp` argument is
//! `-|x|`, in the fast range exactly where the JIT's vector may take the fast path),
//! erf the fast form (its argument is in `[-16, 0]` or NaN).
//!
//! The functions are `unsafe extern "C"` for the JIT (the pointers must be valid for `n`
//! elements, and equal or not overlapping), take any `n` (`n <= 0` or a null pointer
//! does nothing) and cannot panic: no indexing, wrapping integer arithmetic.

use crate::algorithms as a;
use crate::lanes::Scalar;
use std::sync::OnceLock;

/// The ops that have a block function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockOp {
    Exp,
    Expm1,
    Log,
    Log1p,
    Tanh,
    Logistic,
    Erf,
}

/// A block function: `dst[i] = op(src[i])` for `i < n`, in place when `src == dst`.
pub type BlockFn = unsafe extern "C" fn(src: *const f32, dst: *mut f32, n: i64);

impl BlockOp {
    pub const ALL: [BlockOp; 7] =
        [BlockOp::Exp, BlockOp::Expm1, BlockOp::Log, BlockOp::Log1p, BlockOp::Tanh, BlockOp::Logistic, BlockOp::Erf];

    /// The op's short name, the `<op>` of its symbol (`exp`).
    pub fn name(self) -> &'static str {
        match self {
            BlockOp::Exp => "exp",
            BlockOp::Expm1 => "expm1",
            BlockOp::Log => "log",
            BlockOp::Log1p => "log1p",
            BlockOp::Tanh => "tanh",
            BlockOp::Logistic => "logistic",
            BlockOp::Erf => "erf",
        }
    }

    /// The exported symbol of this op's block function (`hs_block_<op>_f32`).
    pub fn symbol(self) -> &'static str {
        match self {
            BlockOp::Exp => "hs_block_exp_f32",
            BlockOp::Expm1 => "hs_block_expm1_f32",
            BlockOp::Log => "hs_block_log_f32",
            BlockOp::Log1p => "hs_block_log1p_f32",
            BlockOp::Tanh => "hs_block_tanh_f32",
            BlockOp::Logistic => "hs_block_logistic_f32",
            BlockOp::Erf => "hs_block_erf_f32",
        }
    }

    /// This op's block function.
    pub fn function(self) -> BlockFn {
        match self {
            BlockOp::Exp => hs_block_exp_f32,
            BlockOp::Expm1 => hs_block_expm1_f32,
            BlockOp::Log => hs_block_log_f32,
            BlockOp::Log1p => hs_block_log1p_f32,
            BlockOp::Tanh => hs_block_tanh_f32,
            BlockOp::Logistic => hs_block_logistic_f32,
            BlockOp::Erf => hs_block_erf_f32,
        }
    }
}

/// Every block function: symbol and address (for the JIT's symbol table).
pub fn symbols() -> Vec<(&'static str, *const u8)> {
    let mut all: Vec<(&'static str, *const u8)> =
        BlockOp::ALL.iter().map(|op| (op.symbol(), op.function() as *const u8)).collect();
    all.push((DIV_SYMBOL, hs_block_div_f32 as *const u8));
    all
}

/// The symbol of the division block function ([`hs_block_div_f32`]).
pub const DIV_SYMBOL: &str = "hs_block_div_f32";

/// A division block function: `dst[i] = src[i] / *divisor` for `i < n`.
pub type DivFn = unsafe extern "C" fn(src: *const f32, dst: *mut f32, n: i64, divisor: *const f32);

/// `dst[i] = src[i] / *divisor` for `i < n` (IEEE division, the bits of any other), in
/// place when `src == dst`; nothing when `n <= 0` or a pointer is null. For a kernel
/// that divides by a value the vector loop does not change (a row's sum): the JIT's
/// 4-lane `divps` is the bottleneck of such a loop, the CPU's widest one is not.
///
/// # Safety
/// As the other block functions, and `divisor` must be valid for one read.
#[no_mangle]
pub unsafe extern "C" fn hs_block_div_f32(src: *const f32, dst: *mut f32, n: i64, divisor: *const f32) {
    if divisor.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { block(Work::Div(*divisor), src, dst, n) }
}

/// `xs[i] / d` (in place or into another slice) at `level`; an error when this CPU lacks
/// it. For tests.
pub fn apply_div(level: Level, src: &[f32], dst: &mut [f32], d: f32) -> Result<(), String> {
    apply_checked(Work::Div(d), level, src, dst)
}

/// What a block function does to each element.
#[derive(Clone, Copy)]
enum Work {
    Op(BlockOp),
    /// Divide by this.
    Div(f32),
}

/// A code path of the block functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// AVX-512F (and DQ, AVX2, FMA): 16 lanes, fused multiply-adds.
    Avx512,
    /// AVX2 and FMA: 8 lanes, fused.
    Avx2,
    /// Whatever the target's baseline gives; fused except on x86-64.
    Portable,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Avx512, Level::Avx2, Level::Portable];

    /// Whether this CPU can run this level.
    pub fn available(self) -> bool {
        match self {
            Level::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
            #[cfg(not(target_arch = "x86_64"))]
            Level::Avx512 | Level::Avx2 => false,
        }
    }

    /// Whether this level's multiply-adds are fused.
    pub fn fused(self) -> bool {
        match self {
            Level::Avx512 | Level::Avx2 => true,
            Level::Portable => PORTABLE_FMA,
        }
    }
}

/// Whether the portable level fuses: as the JIT on a CPU of the baseline target (x86-64
/// without FMA; aarch64 and riscv64 always have it).
const PORTABLE_FMA: bool = !cfg!(target_arch = "x86_64");

/// The best level of this CPU, detected once.
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| Level::ALL.into_iter().find(|l| l.available()).unwrap_or(Level::Portable))
}

/// The f32 lanes the block functions run per instruction on this CPU: 16 with AVX-512F,
/// 8 with AVX2 and FMA, else 4 (the JIT's own width, so block calls would gain nothing).
pub fn native_lanes() -> u32 {
    match level() {
        Level::Avx512 => 16,
        Level::Avx2 => 8,
        Level::Portable => 4,
    }
}

/// The elements a block function works on.
enum Buffers<'a> {
    InPlace(&'a mut [f32]),
    /// Two slices of the same length (which cannot overlap).
    From(&'a [f32], &'a mut [f32]),
}

/// `dst[i] = op(src[i])` for `i < n` at the detected level.
///
/// # Safety
/// When `n > 0`, `src` must be valid for reads and `dst` for writes of `n` f32, and they
/// must be equal or not overlap.
unsafe fn block(work: Work, src: *const f32, dst: *mut f32, n: i64) {
    // SAFETY: the caller's contract.
    let Some(bufs) = (unsafe { buffers(src, dst, n) }) else { return };
    // SAFETY: `level()` only returns a level this CPU has.
    unsafe { run_level(level(), work, bufs) }
}

/// The elements of an exported call: none when `n <= 0` or a pointer is null.
///
/// # Safety
/// As [`block`]'s.
unsafe fn buffers<'a>(src: *const f32, dst: *mut f32, n: i64) -> Option<Buffers<'a>> {
    if n <= 0 || src.is_null() || dst.is_null() {
        return None;
    }
    let n = n as usize;
    // SAFETY: the caller's contract. Two distinct pointers do not overlap, so the
    // slices alias nothing (and LLVM needs no overlap check that would send an in-place
    // call down its scalar path).
    Some(unsafe {
        if std::ptr::eq(src, dst) {
            Buffers::InPlace(std::slice::from_raw_parts_mut(dst, n))
        } else {
            Buffers::From(std::slice::from_raw_parts(src, n), std::slice::from_raw_parts_mut(dst, n))
        }
    })
}

macro_rules! block_fns {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("`dst[i] = ", stringify!($op), "(src[i])` for `i < n`, in place when `src == dst` (nothing when `n <= 0`).")]
        ///
        /// # Safety
        /// When `n > 0`, `src` must be valid for reads and `dst` for writes of `n` f32,
        /// and they must be equal or not overlap.
        #[no_mangle]
        pub unsafe extern "C" fn $name(src: *const f32, dst: *mut f32, n: i64) {
            // SAFETY: the caller's contract (the JIT passes its own stack buffer, and
            // maybe the block of an input it only reads).
            unsafe { block(Work::Op(BlockOp::$op), src, dst, n) }
        }
    )*};
}

block_fns!(
    hs_block_exp_f32 => Exp,
    hs_block_expm1_f32 => Expm1,
    hs_block_log_f32 => Log,
    hs_block_log1p_f32 => Log1p,
    hs_block_tanh_f32 => Tanh,
    hs_block_logistic_f32 => Logistic,
    hs_block_erf_f32 => Erf,
);

/// Applies `op` in place at `level`; an error when this CPU lacks `level`. For tests
/// and benchmarks (the JIT calls the `hs_block_*_f32` functions, at [`level`]).
pub fn apply(op: BlockOp, level: Level, xs: &mut [f32]) -> Result<(), String> {
    checked(level)?;
    // SAFETY: checked just above.
    unsafe { run_level(level, Work::Op(op), Buffers::InPlace(xs)) };
    Ok(())
}

/// `dst[i] = op(src[i])` at `level`, as the block functions called with two pointers;
/// an error when this CPU lacks `level` or the lengths differ. For tests.
pub fn apply_to(op: BlockOp, level: Level, src: &[f32], dst: &mut [f32]) -> Result<(), String> {
    apply_checked(Work::Op(op), level, src, dst)
}

/// `work` from `src` into `dst` at `level`, once the level and the lengths are checked.
fn apply_checked(work: Work, level: Level, src: &[f32], dst: &mut [f32]) -> Result<(), String> {
    checked(level)?;
    if src.len() != dst.len() {
        return Err(format!("{} elements in, room for {} out", src.len(), dst.len()));
    }
    // SAFETY: checked just above.
    unsafe { run_level(level, work, Buffers::From(src, dst)) };
    Ok(())
}

fn checked(level: Level) -> Result<(), String> {
    if level.available() {
        Ok(())
    } else {
        Err(format!("this CPU lacks the {level:?} level"))
    }
}

/// # Safety
/// The CPU must have `level` ([`Level::available`]).
unsafe fn run_level(level: Level, work: Work, bufs: Buffers) {
    match level {
        // SAFETY: the caller's contract.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { x86::avx512(work, bufs) },
        // SAFETY: the caller's contract.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { x86::avx2(work, bufs) },
        #[cfg(not(target_arch = "x86_64"))]
        Level::Avx512 | Level::Avx2 => run::<PORTABLE_FMA>(work, bufs),
        Level::Portable => run::<PORTABLE_FMA>(work, bufs),
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{run, Buffers, Work};

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub(super) fn avx512(work: Work, bufs: Buffers) {
        run::<true>(work, bufs)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn avx2(work: Work, bufs: Buffers) {
        run::<true>(work, bufs)
    }
}

/// exp's chunk: the fast/clamped test runs once per this many elements (a multiple of
/// 16; a rare value costs its chunk the clamped form, a few percent slower; 256 measured
/// 6% faster than 64 with AVX-512, the loop's setup spread over more elements).
pub const EXP_CHUNK: usize = 256;

/// The loops, inlined into each level's function so that they vectorize for it: each op
/// twice, in place and from one slice into another (`$each` applies a lane function to
/// the buffers, `$chunks` splits them into exp's chunks).
macro_rules! ops {
    ($op:expr, $fma:ident, $bufs:expr, $each:ident, $chunks:ident) => {{
        let l = &mut Scalar::<$fma>;
        match $op {
            BlockOp::Exp => {
                let limit = a::exp_fast_limit($fma);
                for chunk in $chunks($bufs) {
                    if rare(chunk.src(), limit) {
                        $each(chunk, |x| a::exp_clamped(l, x));
                    } else {
                        $each(chunk, |x| a::exp_fast(l, x));
                    }
                }
            }
            BlockOp::Expm1 => $each($bufs, |x| a::expm1(l, x)),
            BlockOp::Log => $each($bufs, |x| a::log(l, x)),
            BlockOp::Log1p => $each($bufs, |x| a::log1p(l, x)),
            BlockOp::Tanh => $each($bufs, |x| a::tanh(l, x)),
            BlockOp::Logistic => $each($bufs, |x| a::logistic(l, x, a::exp_clamped)),
            BlockOp::Erf => $each($bufs, |x| a::erf(l, x, a::exp_fast)),
        }
    }};
}

#[inline(always)]
fn run<const FMA: bool>(work: Work, bufs: Buffers) {
    match (work, bufs) {
        (Work::Op(op), Buffers::InPlace(xs)) => ops!(op, FMA, xs, each, chunks_in_place),
        (Work::Op(op), Buffers::From(src, dst)) => ops!(op, FMA, (src, dst), each_to, chunks_to),
        (Work::Div(d), Buffers::InPlace(xs)) => each(xs, |x| x / d),
        (Work::Div(d), Buffers::From(src, dst)) => each_to((src, dst), |x| x / d),
    }
}

/// The source elements of a chunk, for exp's range test.
trait Src {
    fn src(&self) -> &[f32];
}

impl Src for &mut [f32] {
    fn src(&self) -> &[f32] {
        self
    }
}

impl Src for (&[f32], &mut [f32]) {
    fn src(&self) -> &[f32] {
        self.0
    }
}

#[inline(always)]
fn chunks_in_place(xs: &mut [f32]) -> impl Iterator<Item = &mut [f32]> {
    xs.chunks_mut(EXP_CHUNK)
}

#[inline(always)]
fn chunks_to<'a>((src, dst): (&'a [f32], &'a mut [f32])) -> impl Iterator<Item = (&'a [f32], &'a mut [f32])> {
    src.chunks(EXP_CHUNK).zip(dst.chunks_mut(EXP_CHUNK))
}

/// Whether exp's chunk holds an argument outside the fast form's range (`>` as the
/// JIT's test: NaN is not rare, both forms give NaN).
#[inline(always)]
fn rare(chunk: &[f32], limit: f32) -> bool {
    chunk.iter().fold(false, |r, &x| r | (x.abs() > limit))
}

#[inline(always)]
fn each(xs: &mut [f32], mut f: impl FnMut(f32) -> f32) {
    for x in xs {
        *x = f(*x);
    }
}

#[inline(always)]
fn each_to((src, dst): (&[f32], &mut [f32]), mut f: impl FnMut(f32) -> f32) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = f(x);
    }
}
