"""The training math of icgd's speed workloads written in JAX the way the authors' code trains (`jit` of the whole
step, `vmap` over seeds, data drawn on the device inside the step), to time icgd against it side by side.

Used by `benchmarks/train_speed.py` when JAX is importable; JAX is never a requirement of the library. The
math is icgd's stack (`icgd.nn.stack`: tokens [x; y] with the queries' y = 0, keys and values the context
tokens, E <- clip(E + sum_h W_O^h (kernel(Q, K) V)^h) per layer, prediction -E[query, y]), its loss
(0.5 ||y_hat - y||^2, mean over tasks), per-seed clipping of the global gradient norm and Adam, as
`torch.optim.Adam` computes it. `losses` takes icgd's own weights (`params_from_icgd`) and batch, so
tests/integration/test_benchmark.py checks that it computes icgd's numbers.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def params_from_icgd(params: dict[str, Any], n_layers: int) -> list[dict[str, jnp.ndarray]]:
    """icgd's seed-stacked weights {name: (S, ...)} as one dict per layer: w_q, w_k, w_v, w_o (S, H, ...) and
    temp (S, H) (softmax's temperature, the kernel's parameter; 1 where the kernel has none)."""
    out = []
    for i in range(n_layers):
        p = f"layers.{i}.attn."
        layer = {k: jnp.asarray(np.asarray(params[p + k].detach().cpu())) for k in ("w_q", "w_k", "w_v", "w_o")}
        kp = params.get(p + "kernel_params")
        layer["temp"] = (jnp.asarray(np.asarray(kp.detach().cpu()))[..., 0] if kp is not None and kp.shape[-1]
                         else jnp.ones(layer["w_q"].shape[:2], layer["w_q"].dtype))
        out.append(layer)
    return out


def _predict(layers, cx, cy, qx, softmax: bool, clip: float | None):
    """One seed's predictions (B, Q, Dy) from its layers (dicts of (H, ...) weights)."""
    n, dy = cx.shape[1], cy.shape[2]
    e = jnp.concatenate([jnp.concatenate([cx, cy], -1),
                         jnp.concatenate([qx, jnp.zeros(qx.shape[:2] + (dy,), qx.dtype)], -1)], 1)
    for lay in layers:
        ctx = e[:, :n]
        q = jnp.einsum("hkd,btd->bhtk", lay["w_q"], e)
        k = jnp.einsum("hkd,bsd->bhsk", lay["w_k"], ctx)
        v = jnp.einsum("hvd,bsd->bhsv", lay["w_v"], ctx)
        s = jnp.einsum("bhtk,bhsk->bhts", q, k)
        w = jax.nn.softmax(s / lay["temp"][None, :, None, None], -1) if softmax else s
        e = e + jnp.einsum("hdv,bhtv->btd", lay["w_o"], w @ v)
        if clip is not None:
            e = jnp.clip(e, -clip, clip)
    return -e[:, n:, cx.shape[2]:]


def losses(layers, batch, softmax: bool, clip: float | None) -> jnp.ndarray:
    """Per-seed losses (S,) of seed-stacked layers on a batch (cx, cy, qx, qy) shared by the seeds."""
    cx, cy, qx, qy = batch

    def one(lays):
        pred = _predict(lays, cx, cy, qx, softmax, clip)
        return 0.5 * jnp.mean(jnp.sum((pred - qy) ** 2, -1))

    return jax.vmap(one)(layers)


def sample(key, batch: int, n: int, dx: int, dtype=jnp.float32):
    """Linear-regression tasks: x ~ U(-1, 1), W ~ N(0, I), y = W x; N context points and one query."""
    kx, kw = jax.random.split(key)
    x = jax.random.uniform(kx, (batch, n + 1, dx), dtype, -1.0, 1.0)
    w = jax.random.normal(kw, (batch, 1, dx), dtype)
    y = x @ jnp.swapaxes(w, 1, 2)
    return x[:, :n], y[:, :n], x[:, n:], y[:, n:]


def make_step(softmax: bool, clip: float | None, batch: int, n: int, dx: int, lr: float, grad_clip: float | None,
              b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """The jitted training step (layers, m, v, t, key) -> (layers, m, v, t, key, losses): data drawn on the
    device, every seed's loss and gradient at once, per-seed clipping, Adam."""

    def total(layers, data):
        ls = losses(layers, data, softmax, clip)
        return ls.sum(), ls

    @jax.jit
    def step(layers, m, v, t, key):
        key, sub = jax.random.split(key)
        (_, ls), g = jax.value_and_grad(total, has_aux=True)(layers, sample(sub, batch, n, dx))
        if grad_clip is not None:
            sq = sum(jnp.sum(x.reshape(x.shape[0], -1) ** 2, 1) for x in jax.tree_util.tree_leaves(g))
            scale = jnp.minimum(1.0, grad_clip / (jnp.sqrt(sq) + 1e-6))
            g = jax.tree_util.tree_map(lambda x: x * scale.reshape((-1,) + (1,) * (x.ndim - 1)), g)
        t = t + 1
        m = jax.tree_util.tree_map(lambda a, b: b1 * a + (1 - b1) * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: b2 * a + (1 - b2) * b * b, v, g)
        size = lr / (1 - b1 ** t)
        bc2 = jnp.sqrt(1 - b2 ** t)
        layers = jax.tree_util.tree_map(lambda p, a, b: p - size * a / (jnp.sqrt(b) / bc2 + eps), layers, m, v)
        return layers, m, v, t, key, ls

    return step


def rate(params: dict[str, Any], n_layers: int, softmax: bool, clip: float | None, batch: int, n: int, dx: int,
         lr: float, grad_clip: float | None, steps: int, warmup: int = 3) -> float:
    """Seed-steps per second of the jitted step, starting from icgd's initial weights."""
    layers = params_from_icgd(params, n_layers)
    n_seeds = layers[0]["w_q"].shape[0]
    m = jax.tree_util.tree_map(jnp.zeros_like, layers)
    v = jax.tree_util.tree_map(jnp.zeros_like, layers)
    t, key = jnp.zeros((), jnp.float32), jax.random.PRNGKey(0)
    step = make_step(softmax, clip, batch, n, dx, lr, grad_clip)
    for _ in range(warmup):
        layers, m, v, t, key, ls = step(layers, m, v, t, key)
    ls.block_until_ready()
    t0 = time.perf_counter()
    for _ in range(steps):
        layers, m, v, t, key, ls = step(layers, m, v, t, key)
    ls.block_until_ready()
    return steps * n_seeds / (time.perf_counter() - t0)
