"""Preconditioned gradient descent on the linear model, and the preconditioner that one layer of linear
self-attention converges to on Gaussian covariates (Ahn, Cheng, Daneshmand and Sra, NeurIPS 2023; Zhang,
Frei and Bartlett, JMLR 2024).

One step from W0 = 0 with preconditioner P predicts y_q = x_q^T P (1/N) sum_i y_i x_i (for Dy = 1). With
covariates x ~ N(0, Sigma), teachers w ~ N(0, tau^2 I) and label noise of variance s^2, the P minimising the
expected squared error of that prediction is

    P* = ((1 + 1/N) Sigma + (tr(Sigma) + s^2 / tau^2) / N I)^-1,

from E[(1/N) X^T X] = Sigma and, for Gaussian x, E[((1/N) X^T X)^2] = (1 + 1/N) Sigma^2 + tr(Sigma)/N Sigma
(the noise adds s^2/N Sigma to the second moment of (1/N) X^T y). For Sigma = I in d dimensions, noiseless:
P* = N / (N + d + 1) I. `tests/unit/test_preconditioned.py` checks the formula against a direct
least-squares fit of P on sampled tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from icgd.core.episodes import Episodes, ShapeError, require_episodes


def optimal_preconditioner(sigma: Tensor, n_context: int, noise_std: float = 0.0, teacher_scale: float = 1.0
                           ) -> Tensor:
    """P* (Dx, Dx) for covariance `sigma` (Dx, Dx, symmetric positive definite), N context points, label noise
    std `noise_std` and teachers N(0, teacher_scale^2 I) (see the module doc)."""
    if sigma.ndim != 2 or sigma.shape[0] != sigma.shape[1]:
        raise ShapeError(f"sigma must be a square matrix, got shape {tuple(sigma.shape)}")
    if n_context < 1 or noise_std < 0 or teacher_scale <= 0:
        raise ValueError(f"need n_context >= 1, noise_std >= 0, teacher_scale > 0; got {n_context}, {noise_std}, "
                         f"{teacher_scale}")
    d = sigma.shape[0]
    eye = torch.eye(d, dtype=sigma.dtype, device=sigma.device)
    ridge = (torch.trace(sigma) + noise_std ** 2 / teacher_scale ** 2) / n_context
    return torch.linalg.inv((1 + 1 / n_context) * sigma + ridge * eye)


def bayes_ridge_alpha(n_context: int, noise_std: float, teacher_scale: float = 1.0) -> float:
    """The ridge `alpha` (`icgd.learners.explicit.Ridge`'s scale: 1/(2N) sum of squares + alpha/2 ||W||^2)
    whose prediction is the posterior mean for teachers N(0, teacher_scale^2 I) and Gaussian label noise of
    std `noise_std`: s^2 / (N tau^2)."""
    if n_context < 1 or noise_std < 0 or teacher_scale <= 0:
        raise ValueError(f"need n_context >= 1, noise_std >= 0, teacher_scale > 0; got {n_context}, {noise_std}, "
                         f"{teacher_scale}")
    return noise_std ** 2 / (n_context * teacher_scale ** 2)


@dataclass
class PreconditionedGD:
    """K steps of preconditioned GD from W0 = 0: W <- W - grad L(W) P^T, L(W) = 1/(2N) sum_i ||W x_i - y_i||^2,
    P a fixed (Dx, Dx) matrix (P = eta I is `icgd.learners.explicit.GD`)."""

    p: Tensor
    steps: int = 1
    name: str = "preconditioned_gd"

    def __post_init__(self) -> None:
        if self.p.ndim != 2 or self.p.shape[0] != self.p.shape[1]:
            raise ShapeError(f"{self.name}: P must be a square matrix, got shape {tuple(self.p.shape)}")
        if not torch.isfinite(self.p).all():
            raise ValueError(f"{self.name}: P has a non-finite entry")
        if self.steps < 1:
            raise ValueError(f"{self.name}: steps must be at least 1, got {self.steps}")

    def weights(self, ep: Episodes) -> Tensor:
        require_episodes(ep, f"{self.name}.weights")
        if ep.dx != self.p.shape[0]:
            raise ShapeError(f"{self.name}: P is {tuple(self.p.shape)} for inputs of dimension {ep.dx}")
        x, y = ep.context_x, ep.context_y
        p = self.p.to(dtype=x.dtype, device=x.device)
        w = torch.zeros(x.shape[0], ep.dy, ep.dx, dtype=x.dtype, device=x.device)
        for _ in range(self.steps):
            grad = (w @ x.transpose(1, 2) - y.transpose(1, 2)) @ x / ep.n_context
            w = w - grad @ p.T
        return w

    def predict(self, ep: Episodes) -> Tensor:
        require_episodes(ep, f"{self.name}.predict")
        return ep.query_x @ self.weights(ep).transpose(1, 2)

    def describe(self) -> dict[str, Any]:
        return {"learner": self.name, "steps": self.steps, "p": self.p.tolist()}
