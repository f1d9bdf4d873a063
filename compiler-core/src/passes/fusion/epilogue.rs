//! Epilogue (XLA `kOutput`) fusion: a dot or convolution with the elementwise work that
//! follows it.
//!
//! Our choice: `relu(x @ W + b)` becomes ONE kernel, an output fusion whose body holds the
//! dot and its whole elementwise epilogue (bias add, activation such as relu or the tanh
//! of gelu, residual add), as a GEMM with a fused epilogue does (cuBLASLt epilogues, or a
//! Triton/CUTLASS GEMM writing its tile after applying the epilogue in registers). The
//! matrix product is never written to memory. With `epilogue: false` the same program
//! is two kernels: the library dot, then one loop fusion for the epilogue.
//!
//! What it refuses:
//! - fusing anything into the dot's operands: the library call reads its operands from
//!   memory (XLA fuses only bitcasts there, which cost nothing anyway);
//! - a non-elementwise op, or an op at another shape, after the dot (a transpose, a
//!   reduce): the epilogue runs per output element of the GEMM tile;
//! - two dots, or a dot and a reduction, in one kernel.

use super::members::Members;
use super::rules::{Graph, Refusal};
use super::FusionConfig;
use crate::ir::InstId;

pub(super) fn check(
    g: &Graph,
    members: &Members,
    heroes: &[InstId],
    outputs: &[InstId],
    cfg: &FusionConfig,
) -> Result<(), Refusal> {
    let hero = heroes[0];
    if !cfg.epilogue {
        return Err(Refusal::hard(
            "epilogue-disabled",
            format!("{} ({}) is a library call and epilogue fusion is turned off", g.name(hero), g.inst(hero).op),
        ));
    }
    if heroes.len() > 1 {
        return Err(Refusal::hard(
            "refuse-two-heroes",
            format!(
                "{} and {} are both library calls; one kernel makes one call",
                g.name(heroes[0]),
                g.name(heroes[1])
            ),
        ));
    }
    if let Some(&o) = g.inst(hero).operands.iter().find(|o| members.contains(o)) {
        return Err(Refusal::hard(
            "refuse-library-operand",
            format!(
                "{} ({}) reads its operands from memory through the library call; {} is not fused into it",
                g.name(hero),
                g.inst(hero).op,
                g.name(o)
            ),
        ));
    }
    let hero_dims = g.dims(hero);
    for d in g.downstream(members, hero) {
        let inst = g.inst(d);
        if !inst.op.is_elementwise() || g.dims(d) != hero_dims {
            return Err(Refusal::hard(
                "refuse-epilogue-shape",
                format!(
                    "{} ({}, {}) is not an elementwise op on the {} result of {}, so it cannot run in its epilogue",
                    g.name(d),
                    inst.op,
                    inst.ty,
                    g.inst(hero).ty,
                    g.name(hero)
                ),
            ));
        }
    }
    if let Some(&bad) = outputs.iter().find(|&&o| g.dims(o) != hero_dims) {
        return Err(Refusal::hard(
            "refuse-output-shapes",
            format!("{} would be an output of the epilogue kernel of {} at another shape", g.name(bad), g.name(hero)),
        ));
    }
    Ok(())
}
