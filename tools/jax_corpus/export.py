"""Exports the JAX corpus: real JAX programs, their StableHLO and XLA's outputs.

Each program becomes a folder under backend/tests/corpus/<name>/ holding
  module.mlir        jax.jit(f).lower(*args).as_text()
  module_debug.mlir  the same with debug_info=True (loc(...) attributes, #loc aliases)
  xla.hlo            lowered.compile().as_text(): XLA's optimized HLO for the CPU
  in0.npy ...        the arguments, in entry-parameter order (bf16 ones widened to f32)
  out0.npy ...       XLA's results, tuples flattened (bf16 ones widened exactly to f32)
  meta.json          name, description, inputs, outputs with a tolerance per output
The hloscope CLI test (backend/tests/cli.rs) runs all three texts through
`hloscope run` and compares with out*.npy.

Run with the project's Python (JAX on the CPU), here from the repo root:
    .venv/bin/python tools/jax_corpus/export.py [--out DIR] [--only NAME...]
Everything is regenerated deterministically: inputs come from a generator seeded with
the program's name, and source paths in the debug locations are made relative.
"""

import argparse
import json
import os
import shutil
import sys
import zlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(REPO, "backend", "tests", "corpus")

# Locations in module_debug.mlir / xla.hlo name this file relative to the repository,
# so the output does not depend on where the checkout lives.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/(?=tools/jax_corpus/)")

F32 = dict(rtol=1e-5, atol=1e-6)
# Long f32 chains (matmuls feeding softmax feeding matmuls, gradients): XLA's CPU
# kernels reassociate sums and use polynomial exp/tanh/log, so allow a few more ulps.
# (Measured against the reference interpreter: at most 0.04 of F32 for any output.)
F32_DEEP = dict(rtol=3e-5, atol=3e-6)
F16 = dict(rtol=4e-3, atol=4e-3)  # a few f16 ulps (eps 2^-10)
BF16 = dict(rtol=3e-2, atol=3e-2)  # a few bf16 ulps (eps 2^-7)


def default_tol(dtype):
    """Tolerance for an output of this dtype when the program does not say."""
    dtype = np.dtype(dtype) if dtype != jnp.bfloat16 else dtype
    if dtype == jnp.bfloat16:
        return BF16
    if dtype == np.float16:
        return F16
    if np.issubdtype(dtype, np.floating):
        return F32
    return None  # integers and bool: exact


PROGRAMS = []


def program(description, tol=None):
    """Registers `make(rng) -> (fn, args)` as a corpus program named after it."""

    def register(make):
        PROGRAMS.append(dict(name=make.__name__, description=description, make=make, tol=tol))
        return make

    return register


def normal(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def uniform(rng, shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def mlp_params(rng, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params.append(normal(rng, (n_in, n_out), scale=1.0 / np.sqrt(n_in)))
        params.append(normal(rng, (n_out,), scale=0.1))
    return params


# ---------------------------------------------------------------------------------
# The programs.


@program("two-layer MLP with GELU, tanh approximation")
def mlp_gelu_tanh(rng):
    def f(x, w1, b1, w2, b2):
        h = jax.nn.gelu(x @ w1 + b1, approximate=True)
        return h @ w2 + b2

    return f, [normal(rng, (4, 8))] + mlp_params(rng, [8, 16, 4])


@program("two-layer MLP with exact GELU written with erf; also jax.nn.gelu (which uses erfc)")
def mlp_gelu_erf(rng):
    def f(x, w1, b1, w2, b2):
        z = x @ w1 + b1
        h = 0.5 * z * (1.0 + lax.erf(z / np.float32(np.sqrt(2.0))))
        return h @ w2 + b2, jax.nn.gelu(z, approximate=False)

    return f, [normal(rng, (4, 8))] + mlp_params(rng, [8, 16, 4])


@program("matrix multiplies alone: a chain of two and a batched one, no other op", tol=F32_DEEP)
def matmul_chain(rng):
    def f(x, w1, w2, a, b):
        return (x @ w1) @ w2, a @ b

    shapes = [(32, 48), (48, 64), (64, 24), (2, 16, 24), (2, 24, 8)]
    return f, [normal(rng, s) for s in shapes]


@program("layer normalization over the last axis, with scale and bias")
def layernorm(rng):
    def f(x, gamma, beta):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-5) * gamma + beta

    return f, [normal(rng, (4, 16)), normal(rng, (16,)), normal(rng, (16,))]


@program("RMS normalization")
def rmsnorm(rng):
    def f(x, w):
        ms = jnp.mean(x * x, axis=-1, keepdims=True)
        return x * lax.rsqrt(ms + 1e-6) * w

    return f, [normal(rng, (4, 16)), normal(rng, (16,))]


@program("softmax over the last axis (max-subtracted)")
def softmax(rng):
    return (lambda x: jax.nn.softmax(x, axis=-1)), [normal(rng, (4, 10), scale=3.0)]


@program("mean cross-entropy of logits against integer labels")
def cross_entropy(rng):
    def f(logits, labels):
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))

    return f, [normal(rng, (6, 10)), rng.integers(0, 10, (6,)).astype(np.int32)]


def attention(q, k, v):
    d = q.shape[-1]
    s = jnp.einsum("...qd,...kd->...qk", q, k) / np.sqrt(d).astype(np.float32)
    n = q.shape[-2]
    mask = jnp.tril(jnp.ones((n, n), bool))
    s = jnp.where(mask, s, -1e9)
    return jnp.einsum("...qk,...kd->...qd", jax.nn.softmax(s, axis=-1), v)


@program("single-head causal self-attention", tol=F32_DEEP)
def causal_attention(rng):
    return attention, [normal(rng, (8, 16)), normal(rng, (8, 16)), normal(rng, (8, 16))]


@program("pre-norm transformer block: 2-head causal attention and a GELU MLP", tol=F32_DEEP)
def transformer_block(rng):
    t, d, h = 8, 16, 2

    def ln(x):
        m = jnp.mean(x, -1, keepdims=True)
        v = jnp.var(x, -1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5)

    def f(x, wqkv, wo, w1, w2):
        q, k, v = jnp.split(ln(x) @ wqkv, 3, axis=-1)
        heads = lambda a: a.reshape(t, h, d // h).transpose(1, 0, 2)  # noqa: E731
        o = attention(heads(q), heads(k), heads(v)).transpose(1, 0, 2).reshape(t, d)
        x = x + o @ wo
        return x + jax.nn.gelu(ln(x) @ w1) @ w2

    s = 1.0 / np.sqrt(d)
    return f, [
        normal(rng, (t, d)),
        normal(rng, (d, 3 * d), scale=s),
        normal(rng, (d, d), scale=s),
        normal(rng, (d, 4 * d), scale=s),
        normal(rng, (4 * d, d), scale=0.5 * s),
    ]


@program("NHWC 3x3 convolution, bias, ReLU and 2x2 max-pooling", tol=F32_DEEP)
def conv_relu_maxpool(rng):
    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.relu(y + b)
        return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    return f, [normal(rng, (1, 6, 6, 3)), normal(rng, (3, 3, 3, 4), scale=0.3), normal(rng, (4,), scale=0.1)]


@program("batch normalization in training mode: batch statistics, scale and shift")
def batch_norm(rng):
    def f(x, gamma, beta):
        mean = jnp.mean(x, axis=0)
        var = jnp.var(x, axis=0)
        return gamma * (x - mean) / jnp.sqrt(var + 1e-5) + beta, mean, var

    return f, [normal(rng, (8, 6), scale=2.0), normal(rng, (6,)), normal(rng, (6,))]


@program("a long chain of elementwise math", tol=F32_DEEP)
def elementwise_chain(rng):
    def f(x, y):
        a = jnp.exp(-x * x) + jnp.log1p(jnp.abs(y))
        b = jnp.sin(a) * jnp.cos(x) - jnp.tanh(y)
        c = jnp.sqrt(jnp.abs(b) + 1.0) + lax.rsqrt(a + 1.0)
        d = jnp.maximum(c, x) - jnp.minimum(b, y)
        e = jax.nn.sigmoid(d) * jnp.expm1(x / 4) + jnp.power(jnp.abs(y) + 0.5, 1.5)
        g = jnp.where(x > y, e, -e) + jnp.floor(x * 3) - jnp.ceil(y * 2) + jnp.round(x * 5)
        return jnp.clip(g, -3.0, 3.0) + jnp.arctan2(x, y) + jnp.sign(y) * 0.5

    return f, [normal(rng, (4, 8)), normal(rng, (4, 8))]


@program("reductions: sum, product, max, min, mean, argmax, argmin")
def reductions(rng):
    def f(x):
        return (
            jnp.sum(x, axis=1),
            jnp.prod(x, axis=0),
            jnp.max(x),
            jnp.min(x, axis=1),
            jnp.mean(x, axis=0),
            jnp.argmax(x, axis=1).astype(jnp.int32),
            jnp.argmin(x, axis=0).astype(jnp.int32),
        )

    return f, [uniform(rng, (5, 7), 0.5, 1.5)]


@program("cumulative sum, product and maximum")
def cumulative(rng):
    def f(x, i):
        return jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0), lax.cummax(x, axis=1), jnp.cumsum(i)

    return f, [uniform(rng, (4, 6), 0.5, 1.5), rng.integers(-5, 5, (9,)).astype(np.int32)]


@program("embedding lookup (gather) followed by a mean over tokens")
def embedding_gather(rng):
    def f(table, ids):
        e = table[ids]
        return e, jnp.mean(e, axis=0)

    return f, [normal(rng, (10, 8)), rng.integers(0, 10, (5,)).astype(np.int32)]


@program("scatter-add of rows into a table, duplicate indices included")
def scatter_add(rng):
    def f(x, idx, upd):
        return x.at[idx].add(upd)

    return f, [normal(rng, (6, 4)), np.array([0, 2, 2, 5, 1], np.int32), normal(rng, (5, 4))]


@program("fori_loop: 6 steps of x <- 0.9 x + sin(x) with a counter")
def fori_loop(rng):
    def f(x):
        def body(i, c):
            x, s = c
            return 0.9 * x + jnp.sin(x), s + i

        return lax.fori_loop(0, 6, body, (x, jnp.int32(0)))

    return f, [normal(rng, (3, 4))]


@program("while_loop: Newton iterations for sqrt until converged")
def while_loop(rng):
    def f(a):
        def cond(c):
            y, n = c
            return jnp.logical_and(jnp.max(jnp.abs(y * y - a)) > 1e-5, n < 50)

        def body(c):
            y, n = c
            return 0.5 * (y + a / y), n + 1

        return lax.while_loop(cond, body, (jnp.maximum(a, 1.0), jnp.int32(0)))

    return f, [uniform(rng, (6,), 0.5, 9.0)]


@program("lax.cond on a predicate and lax.switch on an index")
def cond_switch(rng):
    def f(p, i, x):
        a = lax.cond(p, lambda x: jnp.sin(x) * 2, lambda x: jnp.cos(x) - 1, x)
        b = lax.switch(i, [lambda x: x + 1, lambda x: x * x, lambda x: -x], x)
        c = lax.switch(i + 5, [lambda x: x + 1, lambda x: x * 3], x)  # out of range: last branch
        return a, b, c

    return f, [np.array(True), np.array(1, np.int32), normal(rng, (2, 3))]


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    p = h @ w2 + b2
    return jnp.mean((p - y) ** 2)


@program("SGD training step: value_and_grad of an MLP loss, then the update", tol=F32_DEEP)
def train_step(rng):
    def f(w1, b1, w2, b2, x, y):
        params = (w1, b1, w2, b2)
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
        return (loss,) + tuple(p - 0.1 * g for p, g in zip(params, grads))

    return f, mlp_params(rng, [4, 8, 2]) + [normal(rng, (6, 4)), normal(rng, (6, 2))]


@program("backward pass of a 3-layer ReLU MLP: the gradients alone, weight gradients as transposed dots", tol=F32_DEEP)
def mlp_grad(rng):
    def loss(params, x, y):
        h = x
        for w, b in zip(params[:-2:2], params[1:-2:2]):
            h = jax.nn.relu(h @ w + b)
        p = h @ params[-2] + params[-1]
        return jnp.mean((p - y) ** 2)

    def f(w1, b1, w2, b2, w3, b3, x, y):
        return jax.grad(loss)((w1, b1, w2, b2, w3, b3), x, y)

    return f, mlp_params(rng, [16, 32, 32, 4]) + [normal(rng, (8, 16)), normal(rng, (8, 4))]


@program("one Adam update with bias correction", tol=F32_DEEP)
def adam_update(rng):
    def f(p, g, m, v, step):
        b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        t = step.astype(jnp.float32)
        mhat = m / (1 - b1**t)
        vhat = v / (1 - b2**t)
        return p - lr * mhat / (jnp.sqrt(vhat) + eps), m, v, step + 1

    return f, [
        normal(rng, (4, 5)),
        normal(rng, (4, 5)),
        normal(rng, (4, 5), scale=0.1),
        uniform(rng, (4, 5), 0.0, 0.1),
        np.array(3, np.int32),
    ]


@program("sort, argsort, descending sort of ints and a two-key lexsort")
def sort_argsort(rng):
    def f(x, k):
        return (
            jnp.sort(x, axis=-1),
            jnp.argsort(x, axis=0).astype(jnp.int32),
            -jnp.sort(-k),
            jnp.lexsort((x[0], k)).astype(jnp.int32),
        )

    return f, [normal(rng, (3, 7)), rng.integers(0, 4, (7,)).astype(np.int32)]


@program("bfloat16 MLP layer with ReLU, a bf16 reduction and a cast back to f32", tol=BF16)
def bf16_mlp(rng):
    def f(x, w, b):
        h = jax.nn.relu(x @ w + b)
        return h, jnp.sum(h.astype(jnp.float32), axis=0), (h * 2 - 1).astype(jnp.float32)

    bf = jnp.bfloat16
    return f, [
        normal(rng, (4, 8)).astype(bf),
        normal(rng, (8, 6), scale=0.35).astype(bf),
        normal(rng, (6,), scale=0.1).astype(bf),
    ]


@program("float16 elementwise math, a dot and a reduction")
def f16_ops(rng):
    def f(x, y):
        a = jnp.exp(x * 0.5) - y * y
        b = jnp.tanh(a) + jnp.sqrt(jnp.abs(y))
        return b, x @ y.T, jnp.max(a, axis=1)

    return f, [normal(rng, (4, 6)).astype(np.float16), normal(rng, (4, 6)).astype(np.float16)]


@program("integer bit operations on int32 and uint8: and/or/xor/not, shifts, popcount, clz, div/rem")
def int_bitops(rng):
    def f(a, b, u):
        sh = jnp.abs(b) % 32
        return (
            (a & b) | (a ^ ~b),
            lax.shift_left(a, sh),
            lax.shift_right_arithmetic(a, sh),
            lax.shift_right_logical(a, sh),
            lax.population_count(a),
            lax.clz(a),
            lax.div(a, jnp.where(b == 0, 1, b)),
            lax.rem(a, jnp.where(b == 0, 1, b)),
            (u * 37 + 11) ^ (u >> 3),
            lax.population_count(u),
        )

    return f, [
        rng.integers(-(2**31), 2**31 - 1, (12,)).astype(np.int32),
        rng.integers(-40, 40, (12,)).astype(np.int32),
        rng.integers(0, 256, (12,)).astype(np.uint8),
    ]


@program("jax.random.normal and jax.random.uniform from a threefry key", tol=F32_DEEP)
def random_normal(rng):
    def f(key):
        k1, k2 = jax.random.split(key)
        return jax.random.normal(k1, (4, 8)), jax.random.uniform(k2, (5,)), jax.random.bits(k2, (3,))

    return f, [np.asarray(jax.random.key_data(jax.random.PRNGKey(42)))]


@program("top-k of each row and the mean of the selected values")
def top_k(rng):
    def f(x):
        v, i = lax.top_k(x, 3)
        return v, i.astype(jnp.int32), jnp.mean(v, axis=-1)

    return f, [normal(rng, (4, 9))]


@program("mixed dtypes: converts between f32, f16, int8, uint32 and bool, with saturation")
def converts(rng):
    def f(x):
        return (
            x.astype(jnp.float16),
            jnp.clip(x * 40, -128, 127).astype(jnp.int8),
            (jnp.abs(x) * 1000).astype(jnp.uint32),
            x > 0,
            (x > 0).astype(jnp.float32) + x.astype(jnp.bfloat16).astype(jnp.float32),
        )

    return f, [normal(rng, (3, 5), scale=2.0)]


# ---------------------------------------------------------------------------------
# Export.


def to_numpy(a):
    """A host array, with bf16 widened exactly to f32 (NumPy has no bfloat16)."""
    a = np.asarray(a)
    if a.dtype == jnp.bfloat16:
        return a.astype(np.float32), "bfloat16"
    return a, a.dtype.name


def tol_for(prog, dtype):
    base = default_tol(dtype)
    if base is None:
        return dict(exact=True)
    tol = dict(base)
    if prog["tol"] is not None:
        # A program's own tolerance loosens (never tightens) every float output: f32
        # results computed from bf16 values carry the bf16 rounding with them.
        tol = {k: max(v, prog["tol"][k]) for k, v in tol.items()}
    return dict(exact=False, **tol)


def save_npy(path, a):
    # np.save writes the same bytes for the same array, so the output is reproducible.
    # (np.ascontiguousarray would turn a 0-d array into shape (1,).)
    np.save(path, np.array(a, order="C"), allow_pickle=False)


def export(prog, out_root):
    rng = np.random.default_rng(zlib.crc32(prog["name"].encode()))
    fn, args = prog["make"](rng)
    args = [jnp.asarray(a) for a in args]
    jitted = jax.jit(fn, keep_unused=True)  # keep every argument as an entry parameter
    lowered = jitted.lower(*args)
    compiled = lowered.compile()
    results = jax.tree_util.tree_leaves(compiled(*args))

    folder = os.path.join(out_root, prog["name"])
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    with open(os.path.join(folder, "module.mlir"), "w") as f:
        f.write(lowered.as_text())
    with open(os.path.join(folder, "module_debug.mlir"), "w") as f:
        f.write(lowered.as_text(debug_info=True))
    with open(os.path.join(folder, "xla.hlo"), "w") as f:
        f.write(compiled.as_text())

    meta = dict(name=prog["name"], description=prog["description"], inputs=[], outputs=[])
    for i, a in enumerate(args):
        host, dtype = to_numpy(a)
        save_npy(os.path.join(folder, f"in{i}.npy"), host)
        meta["inputs"].append(dict(file=f"in{i}.npy", dtype=dtype, shape=list(host.shape)))
    for i, r in enumerate(results):
        host, dtype = to_numpy(r)
        save_npy(os.path.join(folder, f"out{i}.npy"), host)
        entry = dict(file=f"out{i}.npy", dtype=dtype, shape=list(host.shape))
        entry.update(tol_for(prog, np.asarray(r).dtype))
        meta["outputs"].append(entry)
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return len(args), len(results)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="corpus folder (default: backend/tests/corpus)")
    ap.add_argument("--only", nargs="*", help="export only these programs")
    opts = ap.parse_args()
    names = {p["name"] for p in PROGRAMS}
    unknown = set(opts.only or []) - names
    if unknown:
        sys.exit(f"unknown program(s): {', '.join(sorted(unknown))}")
    os.makedirs(opts.out, exist_ok=True)
    for prog in PROGRAMS:
        if opts.only and prog["name"] not in opts.only:
            continue
        n_in, n_out = export(prog, opts.out)
        print(f"{prog['name']}: {n_in} inputs, {n_out} outputs")
    print(f"jax {jax.__version__}, {len(PROGRAMS)} programs")


if __name__ == "__main__":
    main()
