//! The operations of the IR and their typed attributes.
//!
//! The op set follows XLA HLO, since that is what the passes and targets reason about;
//! StableHLO ops map onto it one to one except where noted on the variant. Ops with
//! several results (variadic reduce, sort, while, case, scatter, reduce_window,
//! rng_bit_generator, optimization_barrier) produce one tuple value; a single result is
//! never wrapped in a tuple. Sub-computations (bodies, comparators, branches) are
//! referenced by `CompId`.

use super::literal::Literal;
use super::module::CompId;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// Entry or sub-computation parameter number `index`.
    Parameter(u32),
    Constant(Literal),
    /// Counts along `dim` of the result shape.
    Iota {
        dim: i64,
    },

    Unary(UnaryOp),
    Binary(BinaryOp),
    /// Operands: lhs, rhs. Result: pred with the operands' dims.
    Compare {
        dir: CmpDir,
        kind: Option<CmpKind>,
    },
    /// Operands: pred, on_true, on_false (pred may be a scalar).
    Select,
    /// Operands: min, x, max (min/max may be scalars).
    Clamp,
    /// Element type conversion (the result type says to what).
    Convert,
    /// Bit reinterpretation between types of equal width (or width-changing, with a
    /// trailing dimension, as StableHLO allows).
    BitcastConvert,
    ReducePrecision {
        exponent_bits: u32,
        mantissa_bits: u32,
    },

    /// Operand dimension i maps to result dimension `dims[i]`.
    BroadcastInDim {
        dims: Vec<i64>,
    },
    Reshape,
    /// XLA `bitcast`: a reshape/transpose that only reinterprets the physical layout.
    Bitcast,
    /// A copy of the operand (XLA uses it to change layouts).
    Copy,
    /// Result dimension i is operand dimension `perm[i]`.
    Transpose {
        perm: Vec<i64>,
    },
    Slice {
        start: Vec<i64>,
        limit: Vec<i64>,
        stride: Vec<i64>,
    },
    /// Operands: operand, then one scalar start index per dimension.
    DynamicSlice {
        sizes: Vec<i64>,
    },
    /// Operands: operand, update, then one scalar start index per dimension.
    DynamicUpdateSlice,
    Concatenate {
        dim: i64,
    },
    /// Operands: operand, padding value (scalar).
    Pad {
        low: Vec<i64>,
        high: Vec<i64>,
        interior: Vec<i64>,
    },
    Reverse {
        dims: Vec<i64>,
    },

    Dot(DotDims),
    /// Operands: lhs, rhs. (This and the other wide attribute sets are boxed: every
    /// instruction is as wide as the widest variant, and a program's instructions are
    /// moved and copied by every pass.)
    Convolution(Box<ConvAttrs>),

    /// Operands: N inputs, then N scalar init values. Result: one array, or a tuple of N.
    Reduce {
        dims: Vec<i64>,
        body: CompId,
    },
    /// Operands: N inputs, then N init values.
    ReduceWindow(Box<ReduceWindowAttrs>),
    /// Operands: operand, source, init value.
    SelectAndScatter(SelectAndScatterAttrs),
    /// Operands: operand, start indices.
    Gather(Box<GatherDims>),
    /// Operands: N inputs, scatter indices, N updates.
    Scatter(Box<ScatterDims>),
    /// Operands: N arrays sorted together along `dim` by `comparator`.
    Sort {
        dim: i64,
        stable: bool,
        comparator: CompId,
    },
    /// Applies `body` elementwise over `dims` (which must be all dimensions).
    Map {
        dims: Vec<i64>,
        body: CompId,
    },

    /// Operands: the N loop-carried values; `cond` and `body` take N parameters.
    While {
        cond: CompId,
        body: CompId,
    },
    /// Operand 0 is the branch index (s32; out of range selects the last branch) or a
    /// pred (true selects branch 0, as XLA's conditional). Branch i receives the operands
    /// listed in `branch_operands[i]` (indices into the operands after the selector).
    Case {
        branches: Vec<CompId>,
        branch_operands: Vec<Vec<u32>>,
    },
    /// Calls `comp` with all operands (XLA `call`; StableHLO `func.call` is inlined instead).
    Call {
        comp: CompId,
    },
    /// A fused kernel: `body` computes the result from the operands. Built by the fusion
    /// pass or read from XLA's dumps.
    Fusion {
        kind: FusionKind,
        body: CompId,
    },

    Tuple,
    GetTupleElement {
        index: u32,
    },
    /// Returns its operands unchanged (a tuple when there are several).
    OptimizationBarrier,

    /// Operand: initial state. Result: tuple (new state, random bits).
    RngBitGenerator {
        algorithm: RngAlgorithm,
    },
    /// Operands: a, b (scalars): uniform in [a, b) or normal(mean=a, sigma=b).
    Rng {
        distribution: RngDistribution,
    },
    /// Operands: a, b.
    TriangularSolve(TriangularSolveAttrs),
    Cholesky {
        lower: bool,
    },
    /// Scalars that a single-device run knows: both 0.
    ReplicaId,
    PartitionId,
    AfterAll,

    /// A call into code hloscope does not compile. The only ones the interpreter runs are
    /// the `check.*` assertions of the conformance corpus, through a caller-supplied hook.
    CustomCall(CustomCallAttrs),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnaryOp {
    Abs,
    Neg,
    /// Bitwise not for integers, logical not for pred.
    Not,
    Exp,
    Expm1,
    Log,
    Log1p,
    Logistic,
    Sqrt,
    Rsqrt,
    Cbrt,
    Tanh,
    Sin,
    Cos,
    Tan,
    Erf,
    Floor,
    Ceil,
    /// Round half away from zero.
    RoundAfz,
    /// Round half to even.
    RoundEven,
    Sign,
    IsFinite,
    PopCnt,
    Clz,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Max,
    Min,
    Pow,
    Atan2,
    And,
    Or,
    Xor,
    ShiftLeft,
    ShiftRightArithmetic,
    ShiftRightLogical,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CmpDir {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// StableHLO's `compare_type` / XLA's `type=`: how to compare.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CmpKind {
    Float,
    TotalOrder,
    Signed,
    Unsigned,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct DotDims {
    pub lhs_batch: Vec<i64>,
    pub rhs_batch: Vec<i64>,
    pub lhs_contracting: Vec<i64>,
    pub rhs_contracting: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvDims {
    pub input_batch: i64,
    pub input_feature: i64,
    pub input_spatial: Vec<i64>,
    pub kernel_input_feature: i64,
    pub kernel_output_feature: i64,
    pub kernel_spatial: Vec<i64>,
    pub output_batch: i64,
    pub output_feature: i64,
    pub output_spatial: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvAttrs {
    pub dims: ConvDims,
    /// One entry per spatial dimension (all default to 1 / 0 / false).
    pub window_strides: Vec<i64>,
    pub padding: Vec<(i64, i64)>,
    pub lhs_dilation: Vec<i64>,
    pub rhs_dilation: Vec<i64>,
    pub window_reversal: Vec<bool>,
    pub feature_group_count: i64,
    pub batch_group_count: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReduceWindowAttrs {
    /// One entry per operand dimension.
    pub window_dims: Vec<i64>,
    pub strides: Vec<i64>,
    pub base_dilations: Vec<i64>,
    pub window_dilations: Vec<i64>,
    pub padding: Vec<(i64, i64)>,
    pub body: CompId,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectAndScatterAttrs {
    pub window_dims: Vec<i64>,
    pub strides: Vec<i64>,
    pub padding: Vec<(i64, i64)>,
    pub select: CompId,
    pub scatter: CompId,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GatherDims {
    pub offset_dims: Vec<i64>,
    pub collapsed_slice_dims: Vec<i64>,
    pub operand_batching_dims: Vec<i64>,
    pub start_indices_batching_dims: Vec<i64>,
    pub start_index_map: Vec<i64>,
    pub index_vector_dim: i64,
    pub slice_sizes: Vec<i64>,
    pub indices_are_sorted: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScatterDims {
    pub update_window_dims: Vec<i64>,
    pub inserted_window_dims: Vec<i64>,
    pub input_batching_dims: Vec<i64>,
    pub scatter_indices_batching_dims: Vec<i64>,
    pub scatter_dims_to_operand_dims: Vec<i64>,
    pub index_vector_dim: i64,
    pub indices_are_sorted: bool,
    pub unique_indices: bool,
    /// Combines the current value with the update (N scalars each, N results).
    pub body: CompId,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FusionKind {
    /// Elementwise and data-movement ops: one thread per output element.
    Loop,
    /// A reduction with its fused producers (XLA `kInput`).
    Input,
    /// A library call (dot/conv) with a fused epilogue (XLA `kOutput`).
    Output,
    /// Anything else XLA dumps (`kCustom`, ...): interpreted, not specialized.
    Custom,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RngAlgorithm {
    /// Backend default; hloscope uses Threefry, as XLA's CPU and GPU backends do.
    Default,
    ThreeFry,
    Philox,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RngDistribution {
    Uniform,
    Normal,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Transpose {
    NoTranspose,
    Transpose,
    Adjoint,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriangularSolveAttrs {
    pub left_side: bool,
    pub lower: bool,
    pub unit_diagonal: bool,
    pub transpose_a: Transpose,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CustomCallAttrs {
    pub target: String,
    pub has_side_effect: bool,
    pub backend_config: String,
    /// Attributes kept as text (`name`, printed value) for the printers and for hooks
    /// such as the conformance checks (`tolerance`, `max_ulp_difference`).
    pub attrs: Vec<(String, String)>,
}

impl Op {
    /// The op's name as XLA prints it (`add`, `broadcast`, `reduce-window`, ...).
    pub fn hlo_name(&self) -> &'static str {
        match self {
            Op::Parameter(_) => "parameter",
            Op::Constant(_) => "constant",
            Op::Iota { .. } => "iota",
            Op::Unary(u) => u.hlo_name(),
            Op::Binary(b) => b.hlo_name(),
            Op::Compare { .. } => "compare",
            Op::Select => "select",
            Op::Clamp => "clamp",
            Op::Convert => "convert",
            Op::BitcastConvert => "bitcast-convert",
            Op::ReducePrecision { .. } => "reduce-precision",
            Op::BroadcastInDim { .. } => "broadcast",
            Op::Reshape => "reshape",
            Op::Bitcast => "bitcast",
            Op::Copy => "copy",
            Op::Transpose { .. } => "transpose",
            Op::Slice { .. } => "slice",
            Op::DynamicSlice { .. } => "dynamic-slice",
            Op::DynamicUpdateSlice => "dynamic-update-slice",
            Op::Concatenate { .. } => "concatenate",
            Op::Pad { .. } => "pad",
            Op::Reverse { .. } => "reverse",
            Op::Dot(_) => "dot",
            Op::Convolution(_) => "convolution",
            Op::Reduce { .. } => "reduce",
            Op::ReduceWindow(_) => "reduce-window",
            Op::SelectAndScatter(_) => "select-and-scatter",
            Op::Gather(_) => "gather",
            Op::Scatter(_) => "scatter",
            Op::Sort { .. } => "sort",
            Op::Map { .. } => "map",
            Op::While { .. } => "while",
            Op::Case { .. } => "conditional",
            Op::Call { .. } => "call",
            Op::Fusion { .. } => "fusion",
            Op::Tuple => "tuple",
            Op::GetTupleElement { .. } => "get-tuple-element",
            Op::OptimizationBarrier => "opt-barrier",
            Op::RngBitGenerator { .. } => "rng-bit-generator",
            Op::Rng { .. } => "rng",
            Op::TriangularSolve(_) => "triangular-solve",
            Op::Cholesky { .. } => "cholesky",
            Op::ReplicaId => "replica-id",
            Op::PartitionId => "partition-id",
            Op::AfterAll => "after-all",
            Op::CustomCall(_) => "custom-call",
        }
    }

    /// Sub-computations this op calls, in a fixed order.
    pub fn called_computations(&self) -> SmallVec<[CompId; 2]> {
        use smallvec::smallvec;
        match self {
            Op::Reduce { body, .. } | Op::Map { body, .. } | Op::Fusion { body, .. } => smallvec![*body],
            Op::ReduceWindow(a) => smallvec![a.body],
            Op::SelectAndScatter(a) => smallvec![a.select, a.scatter],
            Op::Scatter(a) => smallvec![a.body],
            Op::Sort { comparator, .. } => smallvec![*comparator],
            Op::While { cond, body } => smallvec![*cond, *body],
            Op::Case { branches, .. } => branches.iter().copied().collect(),
            Op::Call { comp } => smallvec![*comp],
            _ => SmallVec::new(),
        }
    }

    /// Replaces each called computation id through `f` (used when copying computations
    /// between modules and by inlining).
    pub fn map_called_computations(&mut self, mut f: impl FnMut(CompId) -> CompId) {
        match self {
            Op::Reduce { body, .. } | Op::Map { body, .. } | Op::Fusion { body, .. } => *body = f(*body),
            Op::ReduceWindow(a) => a.body = f(a.body),
            Op::SelectAndScatter(a) => {
                a.select = f(a.select);
                a.scatter = f(a.scatter);
            }
            Op::Scatter(a) => a.body = f(a.body),
            Op::Sort { comparator, .. } => *comparator = f(*comparator),
            Op::While { cond, body } => {
                *cond = f(*cond);
                *body = f(*body);
            }
            Op::Case { branches, .. } => branches.iter_mut().for_each(|b| *b = f(*b)),
            Op::Call { comp } => *comp = f(*comp),
            _ => {}
        }
    }

    /// Elementwise ops: each output element depends only on the same-index operand elements.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Unary(_)
                | Op::Binary(_)
                | Op::Compare { .. }
                | Op::Select
                | Op::Clamp
                | Op::Convert
                | Op::ReducePrecision { .. }
        ) || (matches!(self, Op::BitcastConvert))
    }

    /// Ops whose every output element is an input element at a computed index (or, for
    /// iota, the index itself): what fusion and the elemental kernel layer fold into
    /// index arithmetic instead of memory traffic.
    pub fn is_data_movement(&self) -> bool {
        matches!(
            self,
            Op::Iota { .. }
                | Op::BroadcastInDim { .. }
                | Op::Reshape
                | Op::Bitcast
                | Op::Copy
                | Op::Transpose { .. }
                | Op::Slice { .. }
                | Op::Concatenate { .. }
                | Op::Pad { .. }
                | Op::Reverse { .. }
        )
    }

    /// Ops whose execution has effects beyond their result; never removed or merged.
    pub fn has_side_effect(&self) -> bool {
        match self {
            Op::CustomCall(c) => c.has_side_effect,
            Op::Rng { .. } => true,
            _ => false,
        }
    }
}

impl UnaryOp {
    pub const ALL: [UnaryOp; 24] = [
        UnaryOp::Abs,
        UnaryOp::Neg,
        UnaryOp::Not,
        UnaryOp::Exp,
        UnaryOp::Expm1,
        UnaryOp::Log,
        UnaryOp::Log1p,
        UnaryOp::Logistic,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Cbrt,
        UnaryOp::Tanh,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Erf,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::RoundAfz,
        UnaryOp::RoundEven,
        UnaryOp::Sign,
        UnaryOp::IsFinite,
        UnaryOp::PopCnt,
        UnaryOp::Clz,
    ];

    pub fn hlo_name(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Abs => "abs",
            Neg => "negate",
            Not => "not",
            Exp => "exponential",
            Expm1 => "exponential-minus-one",
            Log => "log",
            Log1p => "log-plus-one",
            Logistic => "logistic",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Cbrt => "cbrt",
            Tanh => "tanh",
            Sin => "sine",
            Cos => "cosine",
            Tan => "tan",
            Erf => "erf",
            Floor => "floor",
            Ceil => "ceil",
            RoundAfz => "round-nearest-afz",
            RoundEven => "round-nearest-even",
            Sign => "sign",
            IsFinite => "is-finite",
            PopCnt => "popcnt",
            Clz => "count-leading-zeros",
        }
    }

    /// The StableHLO op name without the dialect prefix (`exponential`, `log_plus_one`).
    pub fn stablehlo_name(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Abs => "abs",
            Neg => "negate",
            Not => "not",
            Exp => "exponential",
            Expm1 => "exponential_minus_one",
            Log => "log",
            Log1p => "log_plus_one",
            Logistic => "logistic",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Cbrt => "cbrt",
            Tanh => "tanh",
            Sin => "sine",
            Cos => "cosine",
            Tan => "tan",
            Erf => "erf",
            Floor => "floor",
            Ceil => "ceil",
            RoundAfz => "round_nearest_afz",
            RoundEven => "round_nearest_even",
            Sign => "sign",
            IsFinite => "is_finite",
            PopCnt => "popcnt",
            Clz => "count_leading_zeros",
        }
    }

    /// Transcendental ops: costly per element (the cost model and the fusion heuristics
    /// treat them as expensive to duplicate).
    pub fn is_transcendental(self) -> bool {
        use UnaryOp::*;
        matches!(self, Exp | Expm1 | Log | Log1p | Logistic | Sqrt | Rsqrt | Cbrt | Tanh | Sin | Cos | Tan | Erf)
    }
}

impl BinaryOp {
    pub const ALL: [BinaryOp; 15] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Pow,
        BinaryOp::Atan2,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::ShiftLeft,
        BinaryOp::ShiftRightArithmetic,
        BinaryOp::ShiftRightLogical,
    ];

    pub fn hlo_name(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "add",
            Sub => "subtract",
            Mul => "multiply",
            Div => "divide",
            Rem => "remainder",
            Max => "maximum",
            Min => "minimum",
            Pow => "power",
            Atan2 => "atan2",
            And => "and",
            Or => "or",
            Xor => "xor",
            ShiftLeft => "shift-left",
            ShiftRightArithmetic => "shift-right-arithmetic",
            ShiftRightLogical => "shift-right-logical",
        }
    }

    pub fn stablehlo_name(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "add",
            Sub => "subtract",
            Mul => "multiply",
            Div => "divide",
            Rem => "remainder",
            Max => "maximum",
            Min => "minimum",
            Pow => "power",
            Atan2 => "atan2",
            And => "and",
            Or => "or",
            Xor => "xor",
            ShiftLeft => "shift_left",
            ShiftRightArithmetic => "shift_right_arithmetic",
            ShiftRightLogical => "shift_right_logical",
        }
    }

    pub fn is_commutative(self) -> bool {
        use BinaryOp::*;
        matches!(self, Add | Mul | Max | Min | And | Or | Xor)
    }
}

impl CmpDir {
    pub fn name(self) -> &'static str {
        match self {
            CmpDir::Eq => "EQ",
            CmpDir::Ne => "NE",
            CmpDir::Lt => "LT",
            CmpDir::Le => "LE",
            CmpDir::Gt => "GT",
            CmpDir::Ge => "GE",
        }
    }
    pub fn from_name(s: &str) -> Option<CmpDir> {
        [CmpDir::Eq, CmpDir::Ne, CmpDir::Lt, CmpDir::Le, CmpDir::Gt, CmpDir::Ge]
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s))
    }
}

impl CmpKind {
    pub fn name(self) -> &'static str {
        match self {
            CmpKind::Float => "FLOAT",
            CmpKind::TotalOrder => "TOTALORDER",
            CmpKind::Signed => "SIGNED",
            CmpKind::Unsigned => "UNSIGNED",
        }
    }
    pub fn from_name(s: &str) -> Option<CmpKind> {
        [CmpKind::Float, CmpKind::TotalOrder, CmpKind::Signed, CmpKind::Unsigned]
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s))
    }
}

impl FusionKind {
    pub fn hlo_name(self) -> &'static str {
        match self {
            FusionKind::Loop => "kLoop",
            FusionKind::Input => "kInput",
            FusionKind::Output => "kOutput",
            FusionKind::Custom => "kCustom",
        }
    }
    pub fn from_hlo_name(s: &str) -> Option<FusionKind> {
        [FusionKind::Loop, FusionKind::Input, FusionKind::Output, FusionKind::Custom]
            .into_iter()
            .find(|k| k.hlo_name() == s)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.hlo_name())
    }
}
