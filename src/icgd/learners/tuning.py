"""Tuning the explicit learners' step sizes on a set of tuning episodes (SPEC 1 and 4).

- `line_search`: minimise a scalar function of eta over a log grid, then Brent's method (scipy);
- `analytic_eta`: the closed form of SPEC 4 for one GD step from W0 = 0,
  eta* = E[a . b] / E[|a|^2], a = (1/N) sum_i y_i x_i^T x_q, b = y_q (milliseconds, no search);
- `tune_gd` / `tune_gdpp`: constant eta by line search, per-step etas (and GD++ gammas) by L-BFGS
  started from the constant-eta optimum, all in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.core.metrics import Z95, query_loss
from icgd.core.profiling import timed
from icgd.learners.explicit import GD, GDPlusPlus


def line_search(f: Callable[[float], float], lo: float = 1e-3, hi: float = 1e3, n_grid: int = 121,
                tol: float = 1e-7) -> float:
    """argmin of f over [lo, hi]: best point of a geometric grid, then Brent's bounded method
    (`scipy.optimize.minimize_scalar`) between its neighbours, to a relative width `tol`. Non-finite values
    count as +inf."""
    from scipy.optimize import minimize_scalar

    if not 0 < lo < hi:
        raise ValueError(f"need 0 < lo < hi, got lo={lo}, hi={hi}")

    def safe(x: float) -> float:
        v = f(x)
        return v if math.isfinite(v) else math.inf

    grid = [lo * (hi / lo) ** (i / (n_grid - 1)) for i in range(n_grid)]
    vals = [safe(x) for x in grid]
    i = min(range(n_grid), key=vals.__getitem__)
    if not math.isfinite(vals[i]):
        raise ValueError("the objective is not finite anywhere on the search grid")
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, n_grid - 1)]
    res = minimize_scalar(safe, bounds=(a, b), method="bounded", options={"xatol": tol * (a + b) / 2})
    best = float(res.x)
    return best if safe(best) <= vals[i] else grid[i]


@dataclass(frozen=True)
class EtaEstimate:
    """A learning rate with its 95% CI (delta method for the ratio estimator)."""

    value: float
    ci95: tuple[float, float]


def analytic_eta(ep: Episodes) -> EtaEstimate:
    """Optimal learning rate of one GD step from W0 = 0 on these episodes (SPEC 4)."""
    ep = ep.to(dtype=torch.float64)
    if ep.query_y is None:
        raise ValueError("analytic_eta needs query targets")
    # a: (B, Q, Dy) = (1/N) sum_i y_i (x_i . x_q)
    a = (ep.query_x @ ep.context_x.transpose(1, 2)) @ ep.context_y / ep.n_context
    u = (a * ep.query_y).sum(-1).reshape(-1)
    v = (a * a).sum(-1).reshape(-1)
    eta = float(u.mean() / v.mean())
    half = Z95 * float((u - eta * v).std()) / (math.sqrt(u.numel()) * float(v.mean()))
    return EtaEstimate(eta, (eta - half, eta + half))


def _loss(learner, ep: Episodes) -> Tensor:
    return query_loss(learner.predict(ep), ep.query_y).mean()


def gd_loss_fn(ep: Episodes, steps: int, clip: float | None = None) -> Callable[[float], float]:
    """eta -> mean loss of `steps` GD steps with constant eta on `ep` (float64); `clip`: with the tokens
    clipped after each step (`GDPlusPlus` with gamma 0)."""
    ep64 = ep.to(dtype=torch.float64)

    def f(eta: float) -> float:
        with torch.no_grad():
            return float(_loss(_gd(eta, steps, clip), ep64))

    return f


def _gd(etas: Any, steps: int, clip: float | None, name: str = "gd") -> GD | GDPlusPlus:
    """K-step GD; with token clipping, as GD++ with gamma 0 (the tokens are what is clipped)."""
    if clip is None:
        return GD(etas, steps, name=name)
    return GDPlusPlus(etas, 0.0, steps, name=name, clip=clip)


@timed("tune reference")
def tune_gd(ep: Episodes, steps: int, per_step: bool = False, max_iter: int = 200,
            clip: float | None = None) -> GD | GDPlusPlus:
    """K-step GD with eta tuned on `ep`: one constant eta (line search) or one per step (L-BFGS). `clip`:
    the tokens clipped to [-clip, clip] after each step, as in a transformer with token clipping (then a
    `GDPlusPlus` with gamma 0, named "gd")."""
    eta = line_search(gd_loss_fn(ep, steps, clip))
    if not per_step:
        return _gd(eta, steps, clip)
    if steps == 1:
        return _gd(eta, steps, clip, name="gd_per_step")
    ep64 = ep.to(dtype=torch.float64)
    # GD steps commute (the loss is symmetric in the etas), so the constant optimum is a stationary point,
    # often a saddle: start from a spread of rates around it and keep the better of the two.
    const = torch.full((steps,), eta, dtype=torch.float64)
    spread = eta * torch.linspace(1.5, 0.5, steps, dtype=torch.float64)
    etas = _lbfgs(lambda p: _loss(_gd(p[0], steps, clip), ep64), [spread], max_iter)[0]
    with torch.no_grad():
        if float(_loss(_gd(etas, steps, clip), ep64)) > float(_loss(_gd(const, steps, clip), ep64)):
            etas = const
    return _gd(etas.tolist(), steps, clip, name="gd_per_step")


@timed("tune reference")
def tune_gdpp(ep: Episodes, steps: int, max_iter: int = 300, shared: bool = False,
              clip: float | None = None) -> GDPlusPlus:
    """K-step GD++ with eta and gamma tuned by L-BFGS on `ep`, from the tuned GD etas and gamma 0: one
    (eta, gamma) per step, or with `shared` one pair for every step (as the official code of source 000
    tunes GD++ for its recurrent models: `gd_deq`, constructed_token_setup notebook). `clip`: the tokens
    clipped after each step (`GDPlusPlus.clip`)."""
    ep64 = ep.to(dtype=torch.float64)
    if shared:
        eta = tune_gd(ep, steps, clip=clip).etas[0]
        start = torch.full((1,), eta, dtype=torch.float64)
    else:
        start = torch.tensor(tune_gd(ep, steps, per_step=True, clip=clip).etas, dtype=torch.float64)
    # search in scale-free units: eta_k = start_k * exp(u_k), gamma_k = v_k / c with c the mean eigenvalue
    # of X X^T, so the search behaves the same whatever the input range
    c = float((ep64.context_x ** 2).sum((1, 2)).mean()) / ep64.dx

    def learner(p: list[Tensor]) -> GDPlusPlus:
        return GDPlusPlus((start * torch.exp(p[0])).expand(steps), (p[1] / c).expand(steps), steps, clip=clip)

    n = len(start)
    u, v = _lbfgs(lambda p: _loss(learner(p), ep64), [torch.zeros(n, dtype=torch.float64)] * 2, max_iter)
    best = learner([u, v])
    return GDPlusPlus([float(e) for e in best.etas], [float(g) for g in best.gammas], steps,
                      name="gdpp_shared" if shared else "gdpp", clip=clip)


def _lbfgs(loss_fn: Callable[[list[Tensor]], Tensor], init: list[Tensor], max_iter: int) -> list[Tensor]:
    """Minimise loss_fn(params) by L-BFGS (strong Wolfe); returns the start if nothing better is found."""
    params = [p.clone().requires_grad_(True) for p in init]
    opt = torch.optim.LBFGS(params, max_iter=max_iter, tolerance_grad=1e-12, tolerance_change=1e-15,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure() -> Tensor:
        opt.zero_grad()
        loss = loss_fn(params)
        if not torch.isfinite(loss):  # diverged: a huge finite value makes the line search step back
            for p in params:
                p.grad = torch.zeros_like(p)
            return torch.tensor(1e30, dtype=loss.dtype)
        loss.backward()
        return loss

    with torch.no_grad():
        start_loss = float(loss_fn(init))
    opt.step(closure)
    with torch.no_grad():
        end_loss = float(loss_fn(params))
    if not math.isfinite(end_loss) or end_loss > start_loss:
        return [p.clone() for p in init]
    return [p.detach() for p in params]
