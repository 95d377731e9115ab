"""Reference losses of the explicit learners on a linear-regression task distribution (`icgd baselines`).

Evaluation and tuning tasks are drawn from one generator seeded with `seed`: the evaluation tasks
first (so they do not depend on how many tuning tasks are asked for), then the tuning tasks.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import torch

from icgd.core.episodes import make_generator
from icgd.core.metrics import evaluate
from icgd.learners.explicit import LeastSquares, ZeroPredictor
from icgd.learners.tuning import analytic_eta, tune_gd, tune_gdpp
from icgd.tasks.linear import LinearRegression


def run_baselines(task: LinearRegression, steps: Sequence[int] = (1, 2, 5), n_tasks: int = 10_000,
                  n_tune: int = 10_000, seed: int = 0, device: str | torch.device = "cpu",
                  dtype: torch.dtype = torch.float64) -> dict[str, Any]:
    """Loss (mean, 95% CI) of zero, K-step GD (constant and per-step eta), GD++ and least squares.

    Returns {"task": {...}, "seed", "n_tasks", "n_tune", "analytic_eta": {...},
             "results": [{"learner", "steps", "eta", "loss", "ci95", ...}, ...]}.
    """
    if n_tasks < 2 or n_tune < 2:
        raise ValueError("need at least 2 evaluation and 2 tuning tasks")
    g = make_generator(seed)
    ev = task.sample(n_tasks, g, device=device, dtype=dtype)
    tune = task.sample(n_tune, g, device=device, dtype=dtype)
    results: list[dict[str, Any]] = []

    def add(learner, tuned_in: float | None = None, **extra: Any) -> None:
        stat = evaluate(learner, ev)
        row = learner.describe() | {"loss": stat.mean, "ci95": list(stat.ci95)} | extra
        if tuned_in is not None:
            row["tune_seconds"] = round(tuned_in, 4)
        results.append(row)

    add(ZeroPredictor())
    for k in sorted(set(int(s) for s in steps)):
        t0 = time.perf_counter()
        add(tune_gd(tune, k), time.perf_counter() - t0)
        t0 = time.perf_counter()
        add(tune_gd(tune, k, per_step=True), time.perf_counter() - t0)
        t0 = time.perf_counter()
        add(tune_gdpp(tune, k), time.perf_counter() - t0)
    add(LeastSquares())
    t0 = time.perf_counter()
    eta = analytic_eta(tune)
    return {
        "task": task.model_dump(),
        "seed": seed,
        "n_tasks": n_tasks,
        "n_tune": n_tune,
        "analytic_eta": {"value": eta.value, "ci95": list(eta.ci95),
                         "seconds": round(time.perf_counter() - t0, 4)},
        "results": results,
    }


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table of `run_baselines` output."""
    t = report["task"]
    law = (f"U(-{t['input_range']:g}, {t['input_range']:g})" if t["input_law"] == "uniform" else t["input_law"])
    lines = [
        f"task: linear regression Dx={t['dx']} Dy={t['dy']} N={t['n_context']} Q={t['n_queries']} "
        f"x ~ {t['input_scale']:g} * {law}, W ~ N(0, {t['teacher_scale']:g}^2 I), noise std {t['noise_std']:g}",
        f"{report['n_tasks']} evaluation tasks, {report['n_tune']} tuning tasks, seed {report['seed']}; "
        f"loss = 0.5 * squared error at the query",
        "",
        f"{'learner':<14}{'steps':>6}  {'loss':>10}  {'95% CI':<24}  learning rates",
    ]
    for r in report["results"]:
        rates = ", ".join(f"{e:.4g}" for e in r["eta"])
        if "gamma" in r:
            rates += "; gamma " + ", ".join(f"{x:.4g}" for x in r["gamma"])
        ci = f"[{r['ci95'][0]:.4g}, {r['ci95'][1]:.4g}]"
        lines.append(f"{r['learner']:<14}{r['steps']:>6}  {r['loss']:>10.4g}  {ci:<24}  {rates}")
    a = report["analytic_eta"]
    lines += ["", f"analytic one-step eta (source 001): {a['value']:.4g}, 95% CI [{a['ci95'][0]:.4g}, "
                  f"{a['ci95'][1]:.4g}] ({a['seconds'] * 1000:.1f} ms)"]
    return "\n".join(lines)
