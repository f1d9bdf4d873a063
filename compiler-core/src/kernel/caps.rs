//! What a target can do, told to the planner: the plan is shared by every target, but a
//! few of its choices are the target's (whether a GEMM library exists, how buffers must
//! be aligned, whether chunk-by-chunk row chains help, which element types it computes).
//!
//! The planner reads these and nothing else about a target, so adding a target means
//! adding a constructor here, never a target check inside the planner.

use crate::ir::ElementType;
use serde::{Deserialize, Serialize};

/// The capabilities of one target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetCaps {
    /// The target's name, for error messages (`cpu`, `webgpu`, ...).
    pub name: String,
    /// Float dots (and output fusions holding one) become library GEMM calls. Without
    /// one, dots are Reduction kernels (multiply, then sum), in an output fusion too (its
    /// epilogue then reads the reduction's result).
    pub library_dot: bool,
    /// Every arena offset, and the arena's size, is a multiple of this (a power of two).
    /// WebGPU binds storage sub-ranges only at 256-byte offsets.
    pub arena_alignment: u64,
    /// Whether the planner forms row chains ([`super::chains`]): a CPU policy (chunks of
    /// rows kept in a core's cache) that also keeps the chains' buffers live and out of
    /// place, so a target that never interleaves kernels should not pay for it.
    pub row_chains: bool,
    /// Element types the target cannot compute in at all: planning a computation that
    /// holds a value of one fails with an error naming the instruction.
    pub refused_elems: Vec<ElementType>,
}

impl TargetCaps {
    /// The CPU target's JIT: everything.
    pub fn cpu() -> TargetCaps {
        TargetCaps {
            name: "cpu".into(),
            library_dot: true,
            arena_alignment: crate::passes::buffers::ARENA_ALIGNMENT,
            row_chains: true,
            refused_elems: Vec::new(),
        }
    }

    /// The CPU target's ahead-of-time objects: plain C-callable code that links no GEMM
    /// library.
    pub fn cpu_object() -> TargetCaps {
        TargetCaps { name: "cpu object".into(), library_dot: false, ..TargetCaps::cpu() }
    }

    /// Whether `elem` is one the target refuses.
    pub fn refuses(&self, elem: ElementType) -> bool {
        self.refused_elems.contains(&elem)
    }
}

impl Default for TargetCaps {
    fn default() -> TargetCaps {
        TargetCaps::cpu()
    }
}
