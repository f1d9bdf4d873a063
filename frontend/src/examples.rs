//! The built-in examples: real JAX exports (`jax.jit(f).lower(...).as_text()`) from the
//! JAX corpus (`backend/tests/corpus/`) and `examples/`. Shared with the worker's tests,
//! which check that every one compiles.

/// A built-in example: its id in the URL, its menu label and its StableHLO text.
pub struct Example {
    pub id: &'static str,
    pub label: &'static str,
    pub source: &'static str,
}

macro_rules! corpus {
    ($id:literal, $label:literal) => {
        Example {
            id: $id,
            label: $label,
            source: include_str!(concat!("../../backend/tests/corpus/", $id, "/module.mlir")),
        }
    };
}

pub const EXAMPLES: &[Example] = &[
    Example {
        id: "mlp",
        label: "MLP: softmax(relu(x @ W1 + b1) @ W2 + b2)",
        source: include_str!("../../examples/mlp.mlir"),
    },
    corpus!("matmul_chain", "Matrix multiplies alone: (x @ W1) @ W2 and a batched a @ b"),
    corpus!("bf16_mlp", "relu(x @ W + b) in bfloat16"),
    corpus!("mlp_gelu_erf", "GELU MLP (erf)"),
    corpus!("mlp_gelu_tanh", "GELU MLP (tanh)"),
    corpus!("layernorm", "LayerNorm"),
    corpus!("rmsnorm", "RMSNorm"),
    corpus!("softmax", "Softmax"),
    corpus!("causal_attention", "Causal attention"),
    corpus!("transformer_block", "Transformer block"),
    corpus!("conv_relu_maxpool", "Conv + ReLU + max pool"),
    corpus!("train_step", "Training step (grad + SGD)"),
    corpus!("adam_update", "Adam update"),
    corpus!("cross_entropy", "Cross-entropy loss"),
    corpus!("fori_loop", "A loop (fori_loop): 0.9·x + sin x, six times"),
];

/// The example shown when the URL names none.
pub const DEFAULT_EXAMPLE: &str = "mlp";

pub fn by_id(id: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|e| e.id == id)
}
