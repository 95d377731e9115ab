"""Metrics shared by every learner (as source 000 defines them): query loss and the alignment of two learners.

- loss: 0.5 * ||y_hat - y||^2 per query (the sources' convention), averaged over queries, per task;
- prediction difference: ||y_hat_A(x_q) - y_hat_B(x_q)|| per query;
- sensitivity cosine / L2: between the Jacobians d y_hat / d x_q of A and B (the implicit linear models).
Each reduces over tasks to a `Stat` (mean and 95% normal-approximation confidence interval).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import torch
from torch import Tensor

from icgd.core.episodes import Episodes, Learner, ShapeError
from icgd.core.profiling import timed

Z95 = 1.959963984540054


def t95(df: int) -> float:
    """Two-sided 95% Student-t quantile: the t with P(T <= t) = 0.975 (`scipy.stats.t`)."""
    from scipy.stats import t

    if df < 1:
        raise ValueError(f"df must be >= 1, got {df}")
    return float(t.ppf(0.975, df))


def mean_ci95(values: Tensor | list[float], student: bool = False) -> tuple[float, float, float]:
    """(mean, low, high): the mean with its 95% confidence interval, mean +- q * std / sqrt(n), q the normal
    quantile 1.96 (many tasks) or, with `student`, the t quantile with n - 1 degrees of freedom (a few
    independent repetitions). One value: an infinite interval (normal) or none (student)."""
    v = torch.as_tensor(values, dtype=torch.float64).detach().reshape(-1)
    n = v.numel()
    if n == 0:
        raise ValueError("no values to summarise")
    m = float(v.mean())
    if n == 1:
        return (m, m, m) if student else (m, -math.inf, math.inf)
    half = (t95(n - 1) if student else Z95) * float(v.std()) / math.sqrt(n)
    return m, m - half, m + half


@dataclass(frozen=True)
class Stat:
    """Mean over n tasks with a 95% confidence interval (mean +- 1.96 * std / sqrt(n), `mean_ci95`)."""

    mean: float
    ci95: tuple[float, float]
    n: int

    @staticmethod
    def of(values: Tensor) -> "Stat":
        m, lo, hi = mean_ci95(values)
        return Stat(m, (lo, hi), len(values.reshape(-1)))

    def as_dict(self) -> dict:
        return asdict(self) | {"ci95": list(self.ci95)}

    def __repr__(self) -> str:  # 4 significant digits: a notebook shows the number, not its float noise
        return f"Stat(mean={self.mean:.4g}, ci95=[{self.ci95[0]:.4g}, {self.ci95[1]:.4g}], n={self.n})"


def query_loss(pred: Tensor, target: Tensor) -> Tensor:
    """Per-task loss (B,) = mean over queries of 0.5 * ||pred - target||^2, for (B, Q, Dy) tensors."""
    if pred.shape != target.shape:
        raise ShapeError(f"predictions {tuple(pred.shape)} and targets {tuple(target.shape)} differ in shape")
    return 0.5 * ((pred - target) ** 2).sum(-1).mean(-1)


#: a per-task loss: (predictions, targets), both (B, Q, Dy) -> (B,)
LossFn = Callable[[Tensor, Tensor], Tensor]


def cross_entropy(probs: Tensor, target: Tensor, eps: float = 1e-12) -> Tensor:
    """Per-task cross-entropy (B,) of predicted category probabilities (B, Q, C) against one-hot (or soft)
    targets (B, Q, C): mean over queries of -sum_c target_c log p_c (p clamped at `eps`)."""
    if probs.shape != target.shape:
        raise ShapeError(f"predictions {tuple(probs.shape)} and targets {tuple(target.shape)} differ in shape")
    return -(target * probs.clamp_min(eps).log()).sum(-1).mean(-1)


def accuracy(probs: Tensor, target: Tensor) -> Tensor:
    """Per-task accuracy (B,): the share of queries whose most probable category is the target's."""
    if probs.shape != target.shape:
        raise ShapeError(f"predictions {tuple(probs.shape)} and targets {tuple(target.shape)} differ in shape")
    return (probs.argmax(-1) == target.argmax(-1)).to(probs.dtype).mean(-1)


#: per-task measures by the name a task gives as its `objective` or lists in its `metrics`
MEASURES: dict[str, LossFn] = {"squared_error": query_loss, "cross_entropy": cross_entropy, "accuracy": accuracy}


def chunks(ep: Episodes, chunk: int | None) -> list[Episodes]:
    """`ep` in pieces of at most `chunk` tasks (one piece when chunk is None)."""
    return [ep] if chunk is None or chunk >= ep.batch_size else ep.split(chunk)


@timed("evaluate")
def task_losses(learner: Learner, ep: Episodes, chunk: int | None = 4096, loss: LossFn = query_loss) -> Tensor:
    """Per-task losses (B,) of `learner` on `ep` (no gradients); `loss` defaults to the squared error
    (pass a task's own `task.loss` for other objectives)."""
    if ep.query_y is None:
        raise ValueError("these episodes have no query targets, so no loss can be computed")
    with torch.no_grad():
        return torch.cat([loss(learner.predict(e), e.query_y) for e in chunks(ep, chunk)])


def evaluate(learner: Learner, ep: Episodes, chunk: int | None = 4096, loss: LossFn = query_loss) -> Stat:
    """Mean per-task loss of `learner` on `ep` with its 95% CI."""
    return Stat.of(task_losses(learner, ep, chunk, loss))


def sensitivities(learner: Learner, ep: Episodes) -> Tensor:
    """Jacobians d y_hat / d x_q of every query, (B, Q, Dy, Dx), by batched autograd (one backward
    pass per output dimension; a learner's prediction for query (b, q) may depend only on x_q[b, q])."""
    qx = ep.query_x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        pred = learner.predict(ep.with_query_x(qx))
        if not pred.requires_grad:  # the prediction does not depend on x_q at all
            return qx.new_zeros(*pred.shape, ep.dx).detach()
        rows = []
        for d in range(pred.shape[-1]):
            (g,) = torch.autograd.grad(pred[..., d].sum(), qx, retain_graph=d + 1 < pred.shape[-1],
                                       allow_unused=True)
            rows.append(torch.zeros_like(qx) if g is None else g)
    return torch.stack(rows, dim=-2).detach()


@timed("evaluate")
def alignment(a: Learner, b: Learner, ep: Episodes, chunk: int | None = 4096) -> dict[str, Stat]:
    """Prediction difference, sensitivity cosine and sensitivity L2 between learners `a` and `b`
    on the same episodes (each a per-task mean over queries, then a Stat over tasks)."""
    pd, cos, l2 = [], [], []
    for e in chunks(ep, chunk):
        with torch.no_grad():
            pd.append((a.predict(e) - b.predict(e)).norm(dim=-1).mean(-1))
        sa, sb = sensitivities(a, e).flatten(-2), sensitivities(b, e).flatten(-2)
        cos.append(torch.nn.functional.cosine_similarity(sa, sb, dim=-1, eps=1e-12).mean(-1))
        l2.append((sa - sb).norm(dim=-1).mean(-1))
    return {"prediction_difference": Stat.of(torch.cat(pd)), "sensitivity_cosine": Stat.of(torch.cat(cos)),
            "sensitivity_l2": Stat.of(torch.cat(l2))}
