# Regenerates the JAX samples in this folder, from the repo root: .venv/bin/python compiler-core/tests/mlir_samples/generate.py compiler-core/tests/mlir_samples
import jax, jax.numpy as jnp
from jax import lax
import sys, os
out = sys.argv[1]
def save(name, f, *args):
    lo = jax.jit(f).lower(*args)
    open(os.path.join(out, name + ".mlir"), "w").write(lo.as_text())
    open(os.path.join(out, name + "_debug.mlir"), "w").write(lo.as_text(debug_info=True))
f32 = jnp.float32
def mlp(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return h @ w2 + b2
save("mlp", mlp, jnp.zeros((8, 16), f32), jnp.zeros((16, 32), f32), jnp.zeros((32,), f32), jnp.zeros((32, 4), f32), jnp.zeros((4,), f32))
save("softmax", lambda x: jax.nn.softmax(x, axis=-1), jnp.zeros((4, 10), f32))
def wl(n):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, jnp.float32(1.0)))
save("while_loop", wl, jnp.int32(5))
def cond(p, x, y):
    return lax.cond(p > 0, lambda: x * y, lambda: x - y)
save("cond", cond, jnp.int32(1), jnp.zeros((3,), f32), jnp.zeros((3,), f32))
def scan(xs):
    return lax.scan(lambda c, x: (c + x, c * x), jnp.zeros((3,), f32), xs)
save("scan", scan, jnp.zeros((5, 3), f32))
save("argmax", lambda x: jnp.argmax(x, axis=1), jnp.zeros((4, 6), f32))
save("sort", lambda x, y: lax.sort((x, y), num_keys=1), jnp.zeros((7,), f32), jnp.zeros((7,), jnp.int32))
