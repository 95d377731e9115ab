"""Explicit learners on the linear model y = W x (source 000, sec. 2): zero, K-step GD, GD++, least squares, ridge.

All take Episodes (context (B, N, Dx|Dy), queries (B, Q, Dx)) and return predictions (B, Q, Dy).
GD minimises L(W) = 1/(2N) sum_i ||W x_i - y_i||^2 from W0 (default 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch
from torch import Tensor

from icgd.core.episodes import Episodes, ShapeError, require_episodes


def _as_list(v: float | Sequence[float] | Tensor, steps: int | None, what: str) -> list[float] | Tensor:
    """`v` as one value per step: a float repeated `steps` times, a sequence of `steps` floats, or a tensor
    (kept, so that autograd can tune it). Refused: fewer than one step, a count that is not `steps`, a float that
    is not finite (a NaN rate would give NaN predictions without a word). A tensor is not checked: a tuner's
    line search may try a non-finite point, and its loss then says so."""
    if steps is not None and steps < 1:
        raise ValueError(f"{what}: steps must be at least 1, got {steps}")
    if isinstance(v, Tensor):
        v = v.reshape(-1)
        if steps is not None and v.numel() == 1:
            return v.expand(steps)
        if steps is not None and v.numel() != steps:
            raise ValueError(f"{what}: {v.numel()} values for {steps} steps")
        return v
    _finite(v, what)
    vals = [float(v)] * (steps if steps is not None else 1) if isinstance(v, (int, float)) else [float(x) for x in v]
    if steps is not None and len(vals) != steps:
        raise ValueError(f"{what}: {len(vals)} values for {steps} steps")
    return vals


def _finite(v: float | Sequence[float], what: str) -> None:
    vals = [v] if isinstance(v, (int, float)) else list(v)
    if not vals:
        raise ValueError(f"{what}: no values (at least one step)")
    bad = [x for x in vals if not math.isfinite(float(x))]
    if bad:
        raise ValueError(f"{what}: every value must be finite, got {bad[0]}")


def _w0(w0: Tensor | None, ep: Episodes) -> Tensor:
    """Initial model broadcast to (B, Dy, Dx)."""
    if w0 is None:
        return ep.context_x.new_zeros(ep.batch_size, ep.dy, ep.dx)
    w0 = w0.to(ep.context_x)
    if w0.shape[-2:] != (ep.dy, ep.dx):
        raise ShapeError(f"w0 must be (Dy, Dx) = {(ep.dy, ep.dx)}, got {tuple(w0.shape)}")
    return w0.expand(ep.batch_size, ep.dy, ep.dx)


def _floats(v: list[float] | Tensor) -> list[float]:
    return [float(x) for x in (v.tolist() if isinstance(v, Tensor) else v)]


@dataclass
class ZeroPredictor:
    """Predicts 0 for every query."""

    name: str = "zero"

    def predict(self, ep: Episodes) -> Tensor:
        require_episodes(ep, f"{self.name}.predict")
        return ep.query_x.new_zeros(ep.batch_size, ep.n_queries, ep.dy)

    def describe(self) -> dict[str, Any]:
        return {"learner": self.name, "steps": 0, "eta": []}


@dataclass
class GD:
    """K steps of gradient descent on the linear model, W <- W - eta_k grad L(W), from W0.

    etas: one learning rate per step (a float is repeated `steps` times); a tensor keeps the graph,
    so the learning rates can themselves be tuned by autograd.
    """

    etas: float | Sequence[float] | Tensor
    steps: int | None = None
    w0: Tensor | None = None
    name: str = "gd"

    def __post_init__(self) -> None:
        self.etas = _as_list(self.etas, self.steps, "etas")
        self.steps = len(self.etas)

    def trajectory(self, ep: Episodes) -> Iterator[Tensor]:
        """The linear models (B, Dy, Dx) after each step, in order."""
        require_episodes(ep, f"{self.name}.trajectory")
        x, y = ep.context_x, ep.context_y
        w = _w0(self.w0, ep)
        n = ep.n_context
        for eta in self.etas:
            grad = (w @ x.transpose(1, 2) - y.transpose(1, 2)) @ x / n  # (B, Dy, Dx)
            w = w - eta * grad
            yield w

    def weights(self, ep: Episodes) -> Tensor:
        """The learnt linear models (B, Dy, Dx) after the last step."""
        require_episodes(ep, f"{self.name}.weights")
        w = _w0(self.w0, ep)
        for w in self.trajectory(ep):
            pass
        return w

    def predict(self, ep: Episodes) -> Tensor:
        require_episodes(ep, f"{self.name}.predict")
        return ep.query_x @ self.weights(ep).transpose(1, 2)

    def describe(self) -> dict[str, Any]:
        return {"learner": self.name, "steps": self.steps, "eta": _floats(self.etas)}


@dataclass
class GDPlusPlus:
    """K steps of GD++ (A.10): each step does a GD step from the current inputs, then transforms every
    input (context and query) by x <- x - gamma_k X X^T x, X X^T = sum_i x_i x_i^T over the context.

    Written in data space, as the tokens evolve: targets t_i (start y_i), query entry t_q (start -W0 x_q),
    dW_k = (eta_k / N) sum_i (t_i - W0 x_i) x_i^T, t_j <- t_j - dW_k x_j, prediction -t_q.
    With gamma = 0 this is plain GD.

    clip: every entry of the tokens (the inputs and t, the query's included) clamped to [-clip, clip] after
    each step, as a transformer with token clipping does (source 000's code clips the tokens of its deep
    models and of the GD and GD++ transformers it compares them with: src/transformer.py:196-199).
    """

    etas: float | Sequence[float] | Tensor
    gammas: float | Sequence[float] | Tensor
    steps: int | None = None
    w0: Tensor | None = None
    name: str = "gdpp"
    clip: float | None = None

    def __post_init__(self) -> None:
        self.etas = _as_list(self.etas, self.steps, "etas")
        self.steps = len(self.etas)
        self.gammas = _as_list(self.gammas, self.steps, "gammas")
        if self.clip is not None and (self.clip <= 0 or self.w0 is not None):
            raise ValueError("clip must be > 0, and applies from W0 = 0 (the tokens' own start)")

    def predict(self, ep: Episodes) -> Tensor:
        require_episodes(ep, f"{self.name}.predict")
        x, xq, t = ep.context_x, ep.query_x, ep.context_y
        w0 = _w0(self.w0, ep)
        tq = -(xq @ w0.transpose(1, 2))
        n = ep.n_context
        for eta, gamma in zip(self.etas, self.gammas):
            dw = (t - x @ w0.transpose(1, 2)).transpose(1, 2) @ x * (eta / n)  # (B, Dy, Dx)
            t, tq = t - x @ dw.transpose(1, 2), tq - xq @ dw.transpose(1, 2)
            xxt = x.transpose(1, 2) @ x  # (B, Dx, Dx)
            x, xq = x - gamma * x @ xxt, xq - gamma * xq @ xxt
            if self.clip is not None:
                x, xq, t, tq = (v.clamp(-self.clip, self.clip) for v in (x, xq, t, tq))
        return -tq

    def describe(self) -> dict[str, Any]:
        return {"learner": self.name, "steps": self.steps, "eta": _floats(self.etas),
                "gamma": _floats(self.gammas)} | ({"clip": self.clip} if self.clip is not None else {})


@dataclass
class Ridge:
    """Ridge regression: argmin_W 1/(2N) sum_i ||W x_i - y_i||^2 + alpha/2 ||W||^2 (alpha = 0: least
    squares, minimum-norm when the context does not determine W)."""

    alpha: float = 0.0
    name: str = field(default="")

    def __post_init__(self) -> None:
        if self.alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {self.alpha}")
        self.name = self.name or ("least_squares" if self.alpha == 0 else "ridge")

    def weights(self, ep: Episodes) -> Tensor:
        require_episodes(ep, f"{self.name}.weights")
        x, y = ep.context_x, ep.context_y
        if self.alpha == 0:
            return (torch.linalg.pinv(x) @ y).transpose(1, 2)
        a = x.transpose(1, 2) @ x / ep.n_context + self.alpha * torch.eye(ep.dx, dtype=x.dtype, device=x.device)
        # a is symmetric positive definite: Cholesky. torch.linalg.solve's batched LU fails on torch 2.13's CPU
        # build for Dx >= 256 with 2 threads ("Pivots given to lu_solve must all be greater or equal to 1";
        # found by tests/unit/test_conformance.py on the few-shot features, Dx = 1280)
        chol = torch.linalg.cholesky(a)
        return torch.cholesky_solve(x.transpose(1, 2) @ y / ep.n_context, chol).transpose(1, 2)

    def predict(self, ep: Episodes) -> Tensor:
        require_episodes(ep, f"{self.name}.predict")
        return ep.query_x @ self.weights(ep).transpose(1, 2)

    def describe(self) -> dict[str, Any]:
        return {"learner": self.name, "steps": 0, "eta": [], "alpha": self.alpha}


def LeastSquares() -> Ridge:  # noqa: N802 - reads as a learner class
    """Exact (minimum-norm) least squares: the Bayes reference for noiseless linear tasks with N >= Dx."""
    return Ridge(0.0)
