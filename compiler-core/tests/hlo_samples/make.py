"""Writes the XLA HLO fixtures in this folder: what XLA's CPU compiler makes of a dozen
small JAX programs (`jax.jit(f).lower(*args).compile().as_text()`, in `NAME.hlo`), and
the same programs before optimization (`.lower(*args).as_text(dialect="hlo")`, in
`NAME.unopt.hlo`: no `%` sigils, no computation signatures, no fusions).

The HLO parser's tests (`compiler-core/tests/hlo_text.rs`) read every `*.hlo` here and
check that it parses and round-trips through the HLO printer. Rerun after a JAX upgrade:

    .venv/bin/python compiler-core/tests/hlo_samples/make.py   # from the repo root
"""

import os

import jax
import jax.numpy as jnp
from jax import lax

HERE = os.path.dirname(os.path.abspath(__file__))


def f32(*shape):
    return jnp.zeros(shape, jnp.float32)


def mlp_gelu(x, w1, b1, w2, b2):
    h = jax.nn.gelu(x @ w1 + b1)
    return h @ w2 + b2


def layernorm(x, g, b):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * g + b


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def attention(q, k, v):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    mask = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool))
    s = jnp.where(mask, s, -jnp.inf)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v)


def conv_relu_maxpool(x, w):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y)
    return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def while_loop(x):
    def cond(c):
        i, _ = c
        return i < 10

    def body(c):
        i, v = c
        return i + 1, v * 1.5 + jnp.sin(v)

    return lax.while_loop(cond, body, (0, x))[1]


def cond(p, x):
    return lax.cond(p > 0, lambda y: jnp.exp(y), lambda y: jnp.cos(y) * 2.0, x)


def sort(x, y):
    return lax.sort((x, y), num_keys=1)


def argmax(x):
    return jnp.argmax(x, axis=1)


def scatter_add(x, idx, upd):
    return x.at[idx].add(upd)


def embedding(table, ids):
    return table[ids]


def cumsum(x):
    return jnp.cumsum(x, axis=0)


def train_step(w, x, y):
    def loss(w):
        pred = jnp.tanh(x @ w)
        return jnp.mean((pred - y) ** 2)

    l, g = jax.value_and_grad(loss)(w)
    return l, w - 0.1 * g


PROGRAMS = {
    "mlp_gelu": (mlp_gelu, (f32(8, 16), f32(16, 32), f32(32), f32(32, 4), f32(4))),
    "layernorm": (layernorm, (f32(4, 64), f32(64), f32(64))),
    "softmax": (softmax, (f32(8, 128),)),
    "attention": (attention, (f32(2, 8, 16), f32(2, 8, 16), f32(2, 8, 16))),
    "conv_relu_maxpool": (conv_relu_maxpool, (f32(1, 8, 8, 3), f32(3, 3, 3, 4))),
    "while_loop": (while_loop, (f32(4),)),
    "cond": (cond, (jnp.float32(1.0), f32(3))),
    "sort": (sort, (f32(16), jnp.zeros(16, jnp.int32))),
    "argmax": (argmax, (f32(4, 10),)),
    "scatter_add": (scatter_add, (f32(10, 3), jnp.zeros(5, jnp.int32), f32(5, 3))),
    "embedding": (embedding, (f32(100, 16), jnp.zeros((4, 7), jnp.int32))),
    "cumsum": (cumsum, (f32(32, 4),)),
    "train_step": (train_step, (f32(8, 4), f32(16, 8), f32(16, 4))),
}


def main():
    for name, (fn, args) in PROGRAMS.items():
        lowered = jax.jit(fn).lower(*args)
        for suffix, text in [(".hlo", lowered.compile().as_text()), (".unopt.hlo", lowered.as_text(dialect="hlo"))]:
            # Keep the fixtures independent of where the repository is checked out.
            text = text.replace(os.path.abspath(__file__), "make.py")
            with open(os.path.join(HERE, name + suffix), "w") as out:
                out.write(text)
            print(f"{name}{suffix}: {len(text.splitlines())} lines")


if __name__ == "__main__":
    main()
