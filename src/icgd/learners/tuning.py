"""Tuning the explicit learners' step sizes on a set of tuning episodes (sources 000 and 001).

- `line_search`: minimise a scalar function of eta over a log grid, then Brent's method (scipy);
- `analytic_eta`: the closed form of source 001 for one GD step from W0 = 0,
  eta* = E[a . b] / E[|a|^2], a = (1/N) sum_i y_i x_i^T x_q, b = y_q (milliseconds, no search);
- `tune_gd` / `tune_gdpp`: constant eta by line search, per-step etas (and GD++ gammas) by L-BFGS
  started from the constant-eta optimum (or from a given GD++), all in float64;
- `fit_gdpp_adam`: GD++ fitted as source 000's code fits it, by Adam on fresh tasks;
- `best_on`: the learner with the lowest loss on the tuning episodes;
- `gdpp_gradient`: how far a GD++ fit is from a stationary point (its loss's relative gradient).
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
    """Optimal learning rate of one GD step from W0 = 0 on these episodes (source 001's closed form)."""
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
def _check_steps(steps: int) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer of at least 1, got {steps!r}")


def tune_gd(ep: Episodes, steps: int, per_step: bool = False, max_iter: int = 200,
            clip: float | None = None) -> GD | GDPlusPlus:
    """K-step GD with eta tuned on `ep`: one constant eta (line search) or one per step (L-BFGS). `clip`:
    the tokens clipped to [-clip, clip] after each step, as in a transformer with token clipping (then a
    `GDPlusPlus` with gamma 0, named "gd")."""
    _check_steps(steps)
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
              clip: float | None = None, init: GDPlusPlus | None = None) -> GDPlusPlus:
    """K-step GD++ with eta and gamma tuned by L-BFGS on `ep`, from the tuned GD etas and gamma 0 (or from
    `init`'s etas and gammas): one (eta, gamma) per step, or with `shared` one pair for every step (as the
    official code of source 000 tunes GD++ for its recurrent models: `gd_deq`, constructed_token_setup
    notebook). `clip`: the tokens clipped after each step (`GDPlusPlus.clip`)."""
    _check_steps(steps)
    ep64 = ep.to(dtype=torch.float64)
    n_par = 1 if shared else steps
    if init is not None:
        if init.steps != steps or (shared and not _one_pair(init)):
            raise ValueError(f"init has {init.steps} steps (etas {init.etas}, gammas {init.gammas}); need {steps}"
                             + (" with one shared eta and gamma" if shared else ""))
        start = torch.tensor(init.etas[:n_par], dtype=torch.float64)
    elif shared:
        eta = tune_gd(ep, steps, clip=clip).etas[0]
        start = torch.full((1,), eta, dtype=torch.float64)
    else:
        start = torch.tensor(tune_gd(ep, steps, per_step=True, clip=clip).etas, dtype=torch.float64)
    # search in scale-free units: eta_k = start_k * exp(u_k), gamma_k = v_k / c with c the mean eigenvalue
    # of X X^T, so the search behaves the same whatever the input range
    c = _gamma_scale(ep64)
    v0 = (torch.zeros(n_par, dtype=torch.float64) if init is None
          else torch.tensor(init.gammas[:n_par], dtype=torch.float64) * c)

    def learner(p: list[Tensor]) -> GDPlusPlus:
        return _from_coordinates(start, p[0], p[1], c, steps, clip)

    u, v = _lbfgs(lambda p: _loss(learner(p), ep64), [torch.zeros(n_par, dtype=torch.float64), v0], max_iter)
    best = learner([u, v])
    return GDPlusPlus([float(e) for e in best.etas], [float(g) for g in best.gammas], steps,
                      name="gdpp_shared" if shared else "gdpp", clip=clip)


def _from_coordinates(start: Tensor, u: Tensor, v: Tensor, c: float, steps: int, clip: float | None) -> GDPlusPlus:
    """GD++ at the point (u, v) of `tune_gdpp`'s scale-free coordinates: eta = start * exp(u), gamma = v / c (one
    entry per step, or one for every step)."""
    return GDPlusPlus((start * torch.exp(u)).expand(steps), (v / c).expand(steps), steps, clip=clip)


def _one_pair(learner: GDPlusPlus) -> bool:
    """Whether every step of `learner` has the same eta and the same gamma (a shared fit)."""
    return len(set(learner.etas)) == 1 and len(set(learner.gammas)) == 1


def _gamma_scale(ep64: Episodes) -> float:
    """c, the mean eigenvalue of X X^T over the episodes: gamma * c is scale-free (`tune_gdpp`'s coordinates)."""
    return float((ep64.context_x ** 2).sum((1, 2)).mean()) / ep64.dx


def gdpp_gradient(ep: Episodes, learner: GDPlusPlus, shared: bool = False) -> float:
    """|d loss / d (log eta, gamma c)| / loss of `learner` on `ep` (float64): the loss's relative gradient in the
    coordinates `tune_gdpp` searches in (c: `_gamma_scale`), one (eta, gamma) per step, or with `shared` one
    pair for every step. Near 0 at a minimum; L-BFGS can also stop where it is large (its line search fails
    at a kink of the token-clipped loss), and such a stop is no minimum (docs/lab-notes/oswald-deep-references.md)."""
    ep64 = ep.to(dtype=torch.float64)
    c = _gamma_scale(ep64)
    n_par = 1 if shared else learner.steps
    if shared and not _one_pair(learner):
        raise ValueError(f"shared: the learner has more than one eta or gamma ({learner.etas}, {learner.gammas})")
    etas = torch.tensor(learner.etas[:n_par], dtype=torch.float64)
    u = torch.zeros(n_par, dtype=torch.float64, requires_grad=True)
    v = (torch.tensor(learner.gammas[:n_par], dtype=torch.float64) * c).requires_grad_(True)
    loss = _loss(_from_coordinates(etas, u, v, c, learner.steps, learner.clip), ep64)
    if not torch.isfinite(loss):
        return math.inf
    loss.backward()
    return float(torch.cat([u.grad, v.grad]).norm() / loss.detach().abs())


@timed("tune reference")
def fit_gdpp_adam(draw: Callable[[int, torch.Generator], Episodes], tune: Episodes, steps: int, *,
                  shared: bool = False, clip: float | None = None, lr: float = 1e-3, grad_clip: float = 1e10,
                  n_steps: int = 30_000, batch: int = 512, seed: int = 0) -> GDPlusPlus:
    """K-step GD++ fitted as source 000's code fits it (`pre_train_gd_hps`, src/train.py:546-579; called
    from constructed_token_setup.ipynb's training cell with `lin_diag=True`):

    - the GD++ transformer's start is `create_weights(lin_diag=True)` (src/data.py:204-263): in every step
      value diagonal (v_x, v_y) = (1, -1) and projection diagonal (p_x, p_y) = (-eta0 / N^2, eta0 / N), so
      eta = -N p_y v_y = eta0 and gamma = -p_x v_x = eta0 / N^2 (ours: x <- x - gamma X^T X x), with eta0
      the best constant rate of that family (the code scans a grid on its evaluation tasks, src/train.py:
      477-501; here a line search on `tune`);
    - only those four diagonals learn (`gradient_manipulation`, src/train.py:523-543): the x block's
      gradient is its diagonal's sum / dx^2, the mean over the zeroed dx x dx block, and enters the global
      gradient norm dx times;
    - Adam (b1 0.9, b2 0.999, eps 1e-8) at `lr` after a global-norm clip at `grad_clip`, `n_steps` steps on
      `batch` fresh tasks each (`draw(batch, generator)`, from generator seed `seed`), float32 as the code;
    - with `shared` (`gd_deq`) one set of four for every step, else one per step. `clip`: token clipping.
    """
    n, dx, tune64 = tune.n_context, tune.dx, tune.to(dtype=torch.float64)
    eta0 = line_search(lambda e: float(_loss(GDPlusPlus(e, e / n ** 2, steps, clip=clip), tune64)))
    k = 1 if shared else steps
    vx, vy, px, py = (torch.full((k,), v, requires_grad=True) for v in (1.0, -1.0, -eta0 / n ** 2, eta0 / n))
    params = [vx, vy, px, py]

    def learner(dtype: torch.dtype) -> GDPlusPlus:
        eta, gamma = (-n * py * vy).to(dtype), (-px * vx).to(dtype)
        return GDPlusPlus(eta.expand(steps), gamma.expand(steps), steps, clip=clip)

    opt = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(n_steps):
        opt.zero_grad()
        _loss(learner(torch.float32), draw(batch, gen)).backward()
        with torch.no_grad():
            vx.grad /= dx ** 2
            px.grad /= dx ** 2
            norm = math.sqrt(sum(float((w * p.grad ** 2).sum()) for w, p in zip((dx, 1, dx, 1), params)))
            if norm > grad_clip:
                for p in params:
                    p.grad *= grad_clip / norm
        opt.step()
    with torch.no_grad():
        best = learner(torch.float64)
    return GDPlusPlus([float(e) for e in best.etas], [float(g) for g in best.gammas], steps,
                      name="gdpp_shared" if shared else "gdpp", clip=clip)


def best_on(ep: Episodes, learners: dict[str, Any]) -> tuple[str, Any]:
    """(name, learner) of the lowest mean loss on `ep` (float64); non-finite losses lose."""
    ep64 = ep.to(dtype=torch.float64)
    with torch.no_grad():
        losses = {k: float(_loss(v, ep64)) for k, v in learners.items()}
    name = min(losses, key=lambda k: losses[k] if math.isfinite(losses[k]) else math.inf)
    return name, learners[name]


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
