"""Probes of hidden states (Akyuerek et al. 2023, sec. 5): how much of a quantity a learner would compute (the
moment X^T Y, the least-squares weights) can be read from a model's hidden states, by a probe trained on
some tasks and scored on others.

- `probe_targets(episodes)`: X^T Y and w_OLS per task, (B, Dx) each (Dy = 1).
- `linear_probe_r2`: a ridge-regularised linear read-out (closed form) of standardised hidden states.
- `mlp_probe_r2`: a two-layer MLP read-out (GELU, full-batch Adam, seeded), as the paper's nonlinear probes.

Both score the coefficient of determination on the held-out tasks, averaged over the target's coordinates:
1 - sum (t - t_hat)^2 / sum (t - mean t)^2 (1: read exactly, 0: no better than the mean; it can be negative).
What the score means depends on a control: the same probe on a model that cannot have learnt the quantity
(an untrained model of the same architecture; a model trained where the quantity carries no information).
"""

from __future__ import annotations

import torch
from torch import Tensor

from icgd.core.episodes import Episodes, ShapeError


def probe_targets(ep: Episodes) -> dict[str, Tensor]:
    """{"xty": X^T Y, "w_ols": (X^T X)^-1 X^T Y}, each (B, Dx), float64, for tasks with Dy = 1 and N >= Dx."""
    if ep.dy != 1:
        raise ShapeError(f"probe targets need Dy = 1, got Dy={ep.dy}")
    if ep.n_context < ep.dx:
        raise ShapeError(f"least-squares weights need N >= Dx, got N={ep.n_context}, Dx={ep.dx}")
    x, y = ep.context_x.double(), ep.context_y.double()
    xty = (x.transpose(1, 2) @ y)[..., 0]
    w = torch.linalg.solve(x.transpose(1, 2) @ x, xty)
    return {"xty": xty, "w_ols": w}


def r2(pred: Tensor, target: Tensor) -> float:
    """Coefficient of determination of (n, k) predictions, averaged over the k coordinates."""
    sse = ((pred - target) ** 2).sum(0)
    sst = ((target - target.mean(0)) ** 2).sum(0)
    return float((1 - sse / sst).mean())


def _standardise(train: Tensor, test: Tensor) -> tuple[Tensor, Tensor]:
    mu, sd = train.mean(0), train.std(0).clamp_min(1e-8)
    return (train - mu) / sd, (test - mu) / sd


def _check(h_train: Tensor, t_train: Tensor, h_test: Tensor, t_test: Tensor) -> None:
    if h_train.dim() != 2 or h_test.dim() != 2 or t_train.dim() != 2 or t_test.dim() != 2:
        raise ShapeError("probes read (n, features) hidden states and (n, k) targets")
    if h_train.shape[0] != t_train.shape[0] or h_test.shape[0] != t_test.shape[0]:
        raise ShapeError(f"hidden states and targets differ in count: {h_train.shape[0]} vs {t_train.shape[0]}, "
                         f"{h_test.shape[0]} vs {t_test.shape[0]}")


def linear_probe_r2(h_train: Tensor, t_train: Tensor, h_test: Tensor, t_test: Tensor, alpha: float = 1e-3) -> float:
    """R^2 on the test tasks of the ridge read-out t = a + B h fitted on the training tasks (h standardised;
    penalty alpha * n on B)."""
    _check(h_train, t_train, h_test, t_test)
    a, b = _standardise(h_train.double(), h_test.double())
    t = t_train.double()
    mu = t.mean(0)
    n, f = a.shape
    coef = torch.linalg.solve(a.T @ a + alpha * n * torch.eye(f, dtype=a.dtype), a.T @ (t - mu))
    return r2(b @ coef + mu, t_test.double())


def mlp_probe_r2(h_train: Tensor, t_train: Tensor, h_test: Tensor, t_test: Tensor, hidden: int = 128,
                 steps: int = 800, lr: float = 3e-3, weight_decay: float = 1e-4, seed: int = 0,
                 check_every: int = 25) -> float:
    """R^2 on the test tasks of a two-layer MLP read-out (GELU, `hidden` units) trained by full-batch AdamW on
    the first 80 % of the training tasks (standardised inputs and targets; weights drawn from `seed`), stopped
    early: the weights of the check (every `check_every` steps) with the lowest loss on the other 20 %. Why the
    early stop: on 4000 tasks of 64 features of which 5 carry the query and the prediction (nothing of the
    target beyond them), the probe trained to the end fitted noise, R^2 -1.06 (X^T Y) and -0.93 (w_OLS) on
    held-out tasks; stopped early, -0.05 and -0.02 (measured 2026-11-28, the states of
    tests/suites/test_theory_bars.py's `_probe_states`)."""
    _check(h_train, t_train, h_test, t_test)
    a, b = (v.float() for v in _standardise(h_train.double(), h_test.double()))
    t = t_train.double()
    mu, sd = t.mean(0), t.std(0).clamp_min(1e-12)
    ts = ((t - mu) / sd).float()
    n_fit = max(1, int(0.8 * a.shape[0]))
    a_fit, t_fit, a_val, t_val = a[:n_fit], ts[:n_fit], a[n_fit:], ts[n_fit:]
    g = torch.Generator().manual_seed(seed)
    f, k = a.shape[1], ts.shape[1]
    w1 = (torch.randn(f, hidden, generator=g) * f ** -0.5).requires_grad_()
    b1 = torch.zeros(hidden, requires_grad=True)
    w2 = (torch.randn(hidden, k, generator=g) * hidden ** -0.5).requires_grad_()
    b2 = torch.zeros(k, requires_grad=True)
    params = [w1, b1, w2, b2]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)

    def forward(x: Tensor) -> Tensor:
        return torch.nn.functional.gelu(x @ w1 + b1) @ w2 + b2

    best, best_loss = [p.detach().clone() for p in params], float("inf")
    for step in range(steps + 1):
        if step % check_every == 0 or step == steps:
            with torch.no_grad():
                val = float(((forward(a_val) - t_val) ** 2).mean()) if len(a_val) else -step
            if val < best_loss:
                best_loss, best = val, [p.detach().clone() for p in params]
        if step == steps:
            break
        opt.zero_grad()
        loss = ((forward(a_fit) - t_fit) ** 2).mean()
        loss.backward()
        opt.step()
    with torch.no_grad():
        for p, v in zip(params, best):
            p.copy_(v)
        pred = forward(b).double() * sd + mu
    return r2(pred, t_test.double())
