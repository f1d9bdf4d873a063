"""The XLA side of `cargo xtask bench`: each benchmark program built in JAX, its StableHLO,
its inputs, XLA:CPU's compile and run times, and its outputs.

    python tools/bench/xla_bench.py export OUT_DIR [--quick] [--depth] [--only NAME...]
        For each program (with --depth: each program of the depth suite, a GPT-2-small
        sized stack at 1, 4, 12 and 48 layers) writes OUT_DIR/<name>/ with
          module.mlir     jax.jit(f).lower(*args).as_text()
          in0.npy ...     the arguments, in entry-parameter order
          xla_out0.npy .. XLA's results, tuples flattened
          xla.json        name, description, xla_compile_s, xla_run_median_s,
                          xla_run_min_s, xla_iters, inputs/outputs, rtol, atol
        compile_s is lower + compile of a fresh function (no cache hit), the best of two;
        run times are over timed runs after a warm-up, each ended by block_until_ready.
    python tools/bench/xla_bench.py time OUT_DIR NAME...
        Times XLA's runs of exported programs again, in this fresh process, on the
        inputs saved by export: one JSON line per program {"name", "run_median_s",
        "run_min_s"}. `cargo xtask bench` alternates such rounds with hloscope's, so
        that a burst of load on a shared machine does not decide a ratio.
    python tools/bench/xla_bench.py compare PROGRAM_DIR HLOSCOPE_OUT_DIR
        Prints one JSON line {"ok", "max_abs_err", "max_rel_err", "detail"} comparing
        hloscope's out*.npy with XLA's xla_out*.npy within the program's tolerance.

Progress goes to standard error. Run with the project's Python (JAX on the CPU).
"""

import argparse
import json
import os
import sys
import time
import zlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "jax_corpus"))

# Benchmark programs are big: XLA reassociates long sums (vectorized reductions, blocked
# GEMMs) and uses its own exp/tanh approximations, so compare with a few f32 ulps of
# slack relative to the magnitudes involved.
TOL = dict(rtol=1e-4, atol=1e-4)
TOL_DEEP = dict(rtol=2e-3, atol=2e-3)

PROGRAMS = []


def program(description, tol=TOL):
    def register(make):
        PROGRAMS.append(dict(name=make.__name__, description=description, make=make, tol=tol))
        return make

    return register


def normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def ln(x, gamma=None, beta=None):
    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.mean(jnp.square(x - m), -1, keepdims=True)
    y = (x - m) * lax.rsqrt(v + 1e-5)
    return y if gamma is None else y * gamma + beta


@program("elementwise chain over 4M f32 elements (one fused loop)")
def elementwise_4m(rng, quick):
    n = 1 << 14 if quick else 1 << 22

    def f(x, y):
        return (x * y + 0.5) * jnp.exp(-x * x) - jnp.maximum(y, 0.0) * 0.25 + jnp.tanh(x)

    return f, [normal(rng, (n,)), normal(rng, (n,))]


@program("memory-bound elementwise chain over 16M f32 elements (no transcendentals)")
def axpy_16m(rng, quick):
    n = 1 << 14 if quick else 1 << 24

    def f(x, y):
        return 2.5 * x + 0.5 * y - 1.0

    return f, [normal(rng, (n,)), normal(rng, (n,))]


@program("layer normalization over the last axis of 4096x1024, with scale and bias")
def layernorm_4096x1024(rng, quick):
    r, c = (64, 128) if quick else (4096, 1024)
    return ln, [normal(rng, (r, c)), normal(rng, (c,)), normal(rng, (c,))]


@program("softmax over the last axis of 4096x1024")
def softmax_4096x1024(rng, quick):
    r, c = (64, 128) if quick else (4096, 1024)
    return (lambda x: jax.nn.softmax(x, axis=-1)), [normal(rng, (r, c), scale=3.0)]


@program("GELU MLP 256x1024x2048: gelu(x@W1+b1)@W2+b2", tol=TOL_DEEP)
def gelu_mlp(rng, quick):
    b, d, h = (16, 64, 128) if quick else (256, 1024, 2048)

    def f(x, w1, b1, w2, b2):
        return jax.nn.gelu(x @ w1 + b1) @ w2 + b2

    return f, [
        normal(rng, (b, d)),
        normal(rng, (d, h), 1 / np.sqrt(d)),
        normal(rng, (h,), 0.1),
        normal(rng, (h, d), 1 / np.sqrt(h)),
        normal(rng, (d,), 0.1),
    ]


def block_weights(rng, d, s):
    """ln1 scale and bias, W_qkv, W_o, ln2 scale and bias, W_1, W_2 of a pre-norm block."""
    return [
        1 + normal(rng, (d,), 0.1),
        normal(rng, (d,), 0.1),
        normal(rng, (d, 3 * d), s),
        normal(rng, (d, d), s),
        1 + normal(rng, (d,), 0.1),
        normal(rng, (d,), 0.1),
        normal(rng, (d, 4 * d), s),
        normal(rng, (4 * d, d), 0.5 * s),
    ]


def causal_attention(q, k, v):
    """softmax(q k^T / sqrt(dh), causal) v over [..., heads, tokens, dh]."""
    t, dh = q.shape[-2], q.shape[-1]
    s = jnp.einsum("...qd,...kd->...qk", q, k) / np.float32(np.sqrt(dh))
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e9)
    return jnp.einsum("...qk,...kd->...qd", jax.nn.softmax(s, axis=-1), v)


def transformer(batch):
    """A pre-norm transformer block (d=256, 4 causal heads, GELU MLP 4x) over `batch`
    sequences of 128 tokens."""

    def make(rng, quick):
        t, d, nh = (16, 32, 2) if quick else (128, 256, 4)
        lead = (batch,) if batch > 1 else ()

        def f(x, g1, b1, wqkv, wo, g2, b2, w1, w2):
            q, k, v = jnp.split(ln(x, g1, b1) @ wqkv, 3, axis=-1)
            heads = lambda a: jnp.moveaxis(a.reshape(*lead, t, nh, d // nh), -2, -3)  # noqa: E731
            o = causal_attention(heads(q), heads(k), heads(v))
            x = x + jnp.moveaxis(o, -3, -2).reshape(*lead, t, d) @ wo
            return x + jax.nn.gelu(ln(x, g2, b2) @ w1) @ w2

        return f, [normal(rng, (*lead, t, d))] + block_weights(rng, d, 1 / np.sqrt(d))

    return make


@program("pre-norm transformer block: 128 tokens, d=256, 4 causal heads, GELU MLP 4x", tol=TOL_DEEP)
def transformer_block(rng, quick):
    return transformer(1)(rng, quick)


@program("the same block over a batch of 4 sequences (4x128 tokens)", tol=TOL_DEEP)
def transformer_block_b4(rng, quick):
    return transformer(4)(rng, quick)


@program("causal attention alone: 4 sequences x 8 heads, 128 tokens, head dim 64", tol=TOL_DEEP)
def causal_attention_4x8(rng, quick):
    b, h, t, dh = (2, 2, 16, 16) if quick else (4, 8, 128, 64)
    return causal_attention, [normal(rng, (b, h, t, dh)) for _ in range(3)]


@program("batched small dots: 16 products of 128x64 by 64x128 (attention's scores)", tol=TOL_DEEP)
def batched_dots_128x128x64(rng, quick):
    b, t, dh = (2, 16, 16) if quick else (16, 128, 64)
    return (lambda q, k: jnp.einsum("bqd,bkd->bqk", q, k)), [normal(rng, (b, t, dh)), normal(rng, (b, t, dh))]


@program("one large GEMM, 1024x1024 by 1024x1024 (the machine's GEMM rate)", tol=TOL_DEEP)
def gemm_1024(rng, quick):
    n = 64 if quick else 1024
    return (lambda a, b: a @ b), [normal(rng, (n, n)), normal(rng, (n, n), 1 / np.sqrt(n))]


def corpus_program(name, tol=TOL_DEEP):
    """A program of the JAX corpus (tools/jax_corpus/export.py), at its own small size."""

    def make(rng, quick):
        import export  # the corpus exporter: its programs are plain functions of a generator

        (prog,) = [p for p in export.PROGRAMS if p["name"] == name]
        return prog["make"](rng)

    make.__name__ = "corpus_" + name
    return program(f"JAX corpus program {name} (small)", tol=tol)(make)


corpus_program("cross_entropy")
corpus_program("adam_update")
corpus_program("rmsnorm")


# The depth suite (`cargo xtask bench --depth`): compile time against depth. Its programs
# are only exported with --depth.
DEPTH_PROGRAMS = []
DEPTH_LAYERS = (1, 4, 12, 48)


def gpt2_stack(layers):
    """A GPT-2-small-sized decoder stack: 128 tokens, width 768, 12 causal heads, a tanh-GELU
    MLP 4x wide, pre-norm, `layers` blocks. The blocks share one set of weights, so the
    inputs stay at one layer's 28 MB; each block is still its own code for both compilers."""

    def make(rng, quick):
        t, d, nh = (16, 64, 2) if quick else (128, 768, 12)

        def block(x, g1, b1, wqkv, bqkv, wo, bo, g2, b2, w1, c1, w2, c2):
            q, k, v = jnp.split(ln(x, g1, b1) @ wqkv + bqkv, 3, axis=-1)
            heads = lambda a: a.reshape(t, nh, d // nh).transpose(1, 0, 2)  # noqa: E731
            q, k, v = heads(q), heads(k), heads(v)
            s = jnp.einsum("hqd,hkd->hqk", q, k) / np.float32(np.sqrt(d // nh))
            s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e9)
            o = jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(s, axis=-1), v)
            x = x + o.transpose(1, 0, 2).reshape(t, d) @ wo + bo
            return x + jax.nn.gelu(ln(x, g2, b2) @ w1 + c1) @ w2 + c2

        def f(x, *weights):
            for _ in range(layers):
                x = block(x, *weights)
            return x

        s = 1 / np.sqrt(d)
        # Small residual branches (as GPT-2 scales its output projections by depth), so
        # that 48 blocks keep the activations in range.
        r = 0.5 * s / np.sqrt(max(layers, 1))
        return f, [
            normal(rng, (t, d)),
            1 + normal(rng, (d,), 0.1),
            normal(rng, (d,), 0.1),
            normal(rng, (d, 3 * d), s),
            normal(rng, (3 * d,), 0.02),
            normal(rng, (d, d), r),
            normal(rng, (d,), 0.02),
            1 + normal(rng, (d,), 0.1),
            normal(rng, (d,), 0.1),
            normal(rng, (d, 4 * d), s),
            normal(rng, (4 * d,), 0.02),
            normal(rng, (4 * d, d), r),
            normal(rng, (d,), 0.02),
        ]

    make.__name__ = f"gpt2_depth_{layers}"
    DEPTH_PROGRAMS.append(
        dict(
            name=make.__name__,
            description=f"GPT-2-small-sized stack, {layers} layer(s): 128 tokens, width 768, 12 heads",
            make=make,
            tol=dict(rtol=1e-2, atol=1e-2),
        )
    )


for _layers in DEPTH_LAYERS:
    gpt2_stack(_layers)


def timed_runs(fn, args, budget_s=1.0, max_iters=1000, min_iters=5):
    for _ in range(3):
        jax.block_until_ready(fn(*args))
    times = []
    start = time.perf_counter()
    while len(times) < min_iters or (len(times) < max_iters and time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return times


def compile_time(fn, args):
    """lower + compile of a fresh wrapper (a new function object: no tracing or
    compilation cache hit), best of two."""
    best = float("inf")
    for _ in range(2):
        fresh = lambda *a: fn(*a)  # noqa: E731
        t = time.perf_counter()
        compiled = jax.jit(fresh, keep_unused=True).lower(*args).compile()
        best = min(best, time.perf_counter() - t)
    return best, compiled


def save_npy(path, a):
    np.save(path, np.array(a, order="C"), allow_pickle=False)


def export(prog, out_root, quick):
    rng = np.random.default_rng(zlib.crc32(prog["name"].encode()))
    fn, args = prog["make"](rng, quick)
    folder = os.path.join(out_root, prog["name"])
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        if old.endswith(".npy"):
            os.remove(os.path.join(folder, old))
    dev_args = [jax.device_put(jnp.asarray(a)) for a in args]
    lowered = jax.jit(fn, keep_unused=True).lower(*dev_args)
    with open(os.path.join(folder, "module.mlir"), "w") as f:
        f.write(lowered.as_text())
    compile_s, compiled = compile_time(fn, dev_args)
    times = timed_runs(compiled, dev_args)
    results = jax.tree_util.tree_leaves(compiled(*dev_args))
    for i, a in enumerate(args):
        save_npy(os.path.join(folder, f"in{i}.npy"), np.asarray(a))
    for i, r in enumerate(results):
        save_npy(os.path.join(folder, f"xla_out{i}.npy"), np.asarray(r))
    meta = dict(
        name=prog["name"],
        description=prog["description"],
        xla_compile_s=compile_s,
        xla_run_median_s=float(np.median(times)),
        xla_run_min_s=float(np.min(times)),
        xla_iters=len(times),
        quick=quick,
        inputs=[dict(shape=list(np.shape(a)), dtype=np.asarray(a).dtype.name) for a in args],
        outputs=[dict(shape=list(np.shape(r)), dtype=np.asarray(r).dtype.name) for r in results],
        **prog["tol"],
    )
    with open(os.path.join(folder, "xla.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return meta


def time_again(out_root, names):
    by_name = {p["name"]: p for p in PROGRAMS + DEPTH_PROGRAMS}
    for name in names:
        folder = os.path.join(out_root, name)
        with open(os.path.join(folder, "xla.json")) as f:
            meta = json.load(f)
        fn, _ = by_name[name]["make"](np.random.default_rng(zlib.crc32(name.encode())), meta.get("quick", False))
        args = [jax.device_put(jnp.asarray(np.load(os.path.join(folder, f"in{i}.npy")))) for i in range(len(meta["inputs"]))]
        compiled = jax.jit(fn, keep_unused=True).lower(*args).compile()
        times = timed_runs(compiled, args)
        print(json.dumps(dict(name=name, run_median_s=float(np.median(times)), run_min_s=float(np.min(times)))), flush=True)


def compare(prog_dir, out_dir):
    with open(os.path.join(prog_dir, "xla.json")) as f:
        meta = json.load(f)
    rtol, atol = meta["rtol"], meta["atol"]
    worst_abs, worst_rel, problems = 0.0, 0.0, []
    for i in range(len(meta["outputs"])):
        want = np.load(os.path.join(prog_dir, f"xla_out{i}.npy"))
        path = os.path.join(out_dir, f"out{i}.npy")
        if not os.path.exists(path):
            problems.append(f"output {i}: hloscope wrote no out{i}.npy")
            continue
        got = np.load(path)
        if got.shape != want.shape:
            problems.append(f"output {i}: shape {got.shape} vs XLA's {want.shape}")
            continue
        if not np.issubdtype(want.dtype, np.floating):
            bad = int(np.count_nonzero(got != want))
            if bad:
                problems.append(f"output {i}: {bad} elements differ")
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        err = np.abs(g - w)
        worst_abs = max(worst_abs, float(err.max(initial=0.0)))
        worst_rel = max(worst_rel, float((err / np.maximum(np.abs(w), 1e-30)).max(initial=0.0)))
        bad = ~((err <= atol + rtol * np.abs(w)) | (np.isnan(g) & np.isnan(w)))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            problems.append(f"output {i}: {int(bad.sum())} elements off, first at {j}: {g.flat[j]} vs XLA's {w.flat[j]}")
    print(json.dumps(dict(ok=not problems, max_abs_err=worst_abs, max_rel_err=worst_rel, detail="; ".join(problems))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export")
    ex.add_argument("out")
    ex.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ex.add_argument("--only", nargs="*", help="program names")
    ex.add_argument("--depth", action="store_true", help="the depth suite instead of the main one")
    again = sub.add_parser("time")
    again.add_argument("out")
    again.add_argument("names", nargs="+")
    cmp = sub.add_parser("compare")
    cmp.add_argument("program_dir")
    cmp.add_argument("out_dir")
    a = ap.parse_args()
    if a.cmd == "compare":
        compare(a.program_dir, a.out_dir)
        return
    if a.cmd == "time":
        time_again(a.out, a.names)
        return
    names = []
    for prog in DEPTH_PROGRAMS if a.depth else PROGRAMS:
        if a.only and prog["name"] not in a.only:
            continue
        meta = export(prog, a.out, a.quick)
        names.append(prog["name"])
        print(
            f"xla: {prog['name']}: compile {meta['xla_compile_s'] * 1e3:.1f} ms, "
            f"run {meta['xla_run_median_s'] * 1e3:.3f} ms (median of {meta['xla_iters']})",
            file=sys.stderr,
        )
    with open(os.path.join(a.out, "programs.json"), "w") as f:
        json.dump(names, f)
        f.write("\n")


if __name__ == "__main__":
    main()
