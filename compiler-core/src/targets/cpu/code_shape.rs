//! How a kernel's code runs, as the emitter chose it: SIMD code (its vector plan, the
//! fast row max/min, the native block calls of a strip-mined loop) or scalar code and
//! why.
//!
//! Everything that tells how a kernel runs is rendered from this value: the short form
//! (`Display`: `simd 4x4 + native exp`, `simd 4x2 + fast max/min`, `scalar`) in the
//! CLI's, the server's and the explorer's kernel lists, and the sentences of
//! [`CodeShape::notes`], which also head the kernel's CLIF listing as comments. Nothing
//! reads a listing back. Artifacts store it beside the machine code.

use super::vector::VecPlan;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How one kernel's function runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CodeShape {
    /// SIMD code along the plan's variable, with a scalar tail.
    Vector {
        plan: VecPlan,
        /// Row max/min reductions take the fast path: one `maxps`/`minps` per vector and
        /// a NaN tracker, a row with a NaN or a zero result run again exactly.
        fast_extrema: bool,
        /// Present when the vector loop is strip-mined into native block calls.
        strip_mined: Option<StripMining>,
    },
    /// Scalar code only.
    Scalar {
        /// Why: what the vector plan refused, or how Cranelift failed on the vector code.
        reason: String,
    },
}

/// A vector loop run in blocks, each through native block functions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StripMining {
    /// Elements per block.
    pub block: i64,
    /// One per blocked op, in the order of its ops.
    pub calls: Vec<BlockCall>,
}

/// One blocked op of a strip-mined loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockCall {
    /// The op, as summaries name it (`exp`, `div`).
    pub op: String,
    /// The native function's symbol (`hs_block_exp_f32`).
    pub symbol: String,
    /// The stage whose loop first reads its results.
    pub stage: u32,
    /// The kernel input the function reads itself, when its argument is a contiguous
    /// load of one.
    pub from_input: Option<u32>,
    /// The kernel output the function writes itself, when its values are that result.
    pub into_output: Option<usize>,
}

impl CodeShape {
    /// How the kernel runs, in sentences: how it was vectorized and what it strip-mined,
    /// or why it is scalar (the first line of the reason).
    pub fn notes(&self) -> Vec<String> {
        match self {
            CodeShape::Scalar { reason } => vec![format!("scalar: {}", reason.lines().next().unwrap_or(""))],
            CodeShape::Vector { plan, fast_extrema, strip_mined } => {
                let mut notes = vec![format!(
                    "vectorized: {} lanes x {}, {:?} along variable {}",
                    plan.lanes, plan.unroll, plan.kind, plan.var
                )];
                if *fast_extrema {
                    notes.push(
                        "max/min rows: one maxps/minps per vector and a NaN tracker; rows with a NaN or a zero result run again exactly".into(),
                    );
                }
                if let Some(s) = strip_mined {
                    let calls: Vec<String> = s
                        .calls
                        .iter()
                        .map(|c| {
                            let from = c.from_input.map(|input| format!(", from input {input}")).unwrap_or_default();
                            let to = c.into_output.map(|o| format!(", into output {o}")).unwrap_or_default();
                            format!("{} (stage {}{from}{to})", c.symbol, c.stage)
                        })
                        .collect();
                    notes.push(format!(
                        "strip-mined in blocks of {} elements, native block calls: {}",
                        s.block,
                        calls.join(", ")
                    ));
                }
                notes
            }
        }
    }

    /// The notes as the comment lines that head the kernel's CLIF listing (the JIT's;
    /// the explorer's listings keep the notes apart).
    #[cfg_attr(not(feature = "cpu"), allow(dead_code))]
    pub fn header(&self) -> String {
        self.notes().iter().map(|n| format!("; {n}\n")).collect()
    }
}

impl fmt::Display for CodeShape {
    /// `simd 4x4` (lanes x unrolled vectors), `+ fast max/min` for the fast row
    /// max/min, `+ native exp, tanh` for the ops of a strip-mined loop; or `scalar`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CodeShape::Vector { plan, fast_extrema, strip_mined } = self else { return f.write_str("scalar") };
        write!(f, "simd {}x{}", plan.lanes, plan.unroll)?;
        if *fast_extrema {
            f.write_str(" + fast max/min")?;
        }
        if let Some(s) = strip_mined {
            let mut ops: Vec<&str> = Vec::new();
            for c in &s.calls {
                if !ops.contains(&c.op.as_str()) {
                    ops.push(&c.op);
                }
            }
            write!(f, " + native {}", ops.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::vector::VecKind;
    use super::*;
    use crate::ir::BinaryOp;

    fn plan(kind: VecKind, lanes: u32, unroll: u32) -> VecPlan {
        VecPlan { kind, lanes, unroll, width: 16 / lanes, var: 1 }
    }

    fn call(op: &str, stage: u32, from_input: Option<u32>, into_output: Option<usize>) -> BlockCall {
        BlockCall { op: op.into(), symbol: format!("hs_block_{op}_f32"), stage, from_input, into_output }
    }

    #[test]
    fn a_vector_loop_in_short_and_in_sentences() {
        let shape = CodeShape::Vector { plan: plan(VecKind::Loop, 4, 4), fast_extrema: false, strip_mined: None };
        assert_eq!(shape.to_string(), "simd 4x4");
        assert_eq!(shape.header(), "; vectorized: 4 lanes x 4, Loop along variable 1\n");
    }

    #[test]
    fn a_fast_row_max() {
        let shape = CodeShape::Vector {
            plan: plan(VecKind::Row(vec![BinaryOp::Max]), 4, 2),
            fast_extrema: true,
            strip_mined: None,
        };
        assert_eq!(shape.to_string(), "simd 4x2 + fast max/min");
        assert_eq!(
            shape.notes(),
            [
                "vectorized: 4 lanes x 2, Row([Max]) along variable 1",
                "max/min rows: one maxps/minps per vector and a NaN tracker; rows with a NaN or a zero result run again exactly",
            ]
        );
    }

    #[test]
    fn a_strip_mined_loop_names_each_op_once() {
        let calls = vec![call("exp", 1, Some(0), None), call("div", 2, None, Some(1)), call("exp", 2, None, None)];
        let shape = CodeShape::Vector {
            plan: plan(VecKind::Loop, 4, 4),
            fast_extrema: false,
            strip_mined: Some(StripMining { block: 512, calls }),
        };
        assert_eq!(shape.to_string(), "simd 4x4 + native exp, div");
        assert_eq!(
            shape.notes()[1],
            "strip-mined in blocks of 512 elements, native block calls: hs_block_exp_f32 (stage 1, from input 0), \
             hs_block_div_f32 (stage 2, into output 1), hs_block_exp_f32 (stage 2)"
        );
    }

    #[test]
    fn a_scalar_kernel_gives_the_first_line_of_its_reason() {
        let shape = CodeShape::Scalar { reason: "vector code failed: cranelift: bad\nmore detail".into() };
        assert_eq!(shape.to_string(), "scalar");
        assert_eq!(shape.header(), "; scalar: vector code failed: cranelift: bad\n");
    }
}
