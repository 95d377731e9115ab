"""The trained layer and GD applied 50 times with dampening lambda (Fig. 1, Fig. 10; A.6): `oswald-repeat`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from icgd.analysis.readoff import (
    divergence_cap,
    gd_repeat_losses,
    products,
    tf_repeat_losses,
)
from icgd.core.episodes import Episodes
from icgd.experiments.common import eval_tasks, median, seed_learners, tune_tasks
from icgd.experiments.linear_setup import one_layer_model, one_layer_run
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.tuning import tune_gd
from icgd.results.figures import COLORS, COLORS_2, band, legend_below, subplots
from icgd.sources.oswald.keys import (
    REPEAT_RATIO_WORST,
    REPEAT_SWEEP_GAP,
    REPEAT_SWEEP_LOWERING,
    REPEAT_Y_RATIO_MEDIAN,
)
from icgd.sources.oswald.shared import LINEAR_DEVIATIONS

# ---------------------------------------------------------------------------------------- repeating
LAMBDAS = [0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]

REPEATS = 50


def _step_losses(per_task: torch.Tensor, ep: Episodes) -> tuple[float, float, int]:
    """(mean over all tasks, inf if any diverged; mean over the other tasks; number of diverged tasks),
    diverged as `divergence_cap` says."""
    ok = torch.isfinite(per_task) & (per_task < divergence_cap(ep))
    n_bad = int((~ok).sum())
    finite = float(per_task[ok].mean()) if ok.any() else float("inf")
    return (finite if n_bad == 0 else float("inf")), finite, n_bad


def _tf_curve(kq: torch.Tensor, pv: torch.Tensor, lam: float, ev: Episodes,
              update: str = "all") -> list[tuple[float, float, int]]:
    return [_step_losses(lt, ev) for lt in tf_repeat_losses(kq, pv, lam, ev, REPEATS, update=update)]


def _gd_curve(eta: float, ev: Episodes) -> list[tuple[float, float, int]]:
    return [_step_losses(lt, ev) for lt in gd_repeat_losses(eta, ev, REPEATS)]


def _repeat_sweep(ctx: ExperimentContext, y_only: dict[float, list[list[tuple[float, float, int]]]],
                  gd_by: dict[float, list[tuple[float, float, int]]]) -> None:
    """Fig. 10 right with the official roll-out (only y moves): at each lambda of the sweep, the loss after
    the last application over the loss after the first, every task counted (inf when a task diverged),
    for the median seed and for GD with eta * lambda. Results: REPEAT_SWEEP_GAP, the largest |TF/GD - 1| of
    that ratio over the sweep (0 where both diverge, inf where only one does), and REPEAT_SWEEP_LOWERING,
    the fraction of the sweep's lambdas at which the TF ends below its first application."""
    gaps, lowering, rows = [], [], []
    for lam in LAMBDAS:
        tf = median([c[-1][0] / c[0][0] for c in y_only[lam]])
        gd = gd_by[lam][-1][0] / gd_by[lam][0][0]
        gap = 0.0 if math.isinf(tf) and math.isinf(gd) else math.inf if math.isinf(tf) or math.isinf(gd) \
            else abs(tf / gd - 1)
        gaps.append(gap)
        lowering.append(tf < 1)
        rows.append({"lambda": lam, "tf_final_over_first_median_seed": tf, "gd_final_over_first": gd,
                     "relative_gap": gap})
    ctx.result(REPEAT_SWEEP_GAP, max(gaps))
    ctx.result(REPEAT_SWEEP_LOWERING, float(np.mean(lowering)))
    ctx.table("repeat_sweep", rows)
    ctx.report("across lambda the repeated layer and GD generalise 'similarly well (or poorly)' (Fig. 10); "
               "only y moves", "loss after 50 / after 1, TF (median seed) vs GD: " + ", ".join(
                   f"{r['lambda']:g}: {r['tf_final_over_first_median_seed']:.3g} vs {r['gd_final_over_first']:.3g}"
                   for r in rows))


def _repeat_rows(lam: float, update: str, seeds: list[int], tf: list[list[tuple[float, float, int]]],
                 gd: list[tuple[float, float, int]]) -> list[dict[str, Any]]:
    """Table rows of one roll-out: per application (step) and seed, the TF's and GD's curves."""
    return [{"lambda": lam, "step": t + 1, "seed": s, "update": update, "tf_loss": c[t][0], "tf_loss_finite": c[t][1],
             "tf_diverged_tasks": c[t][2], "gd_loss": gd[t][0], "gd_diverged_tasks": gd[t][2]}
            for t in range(REPEATS) for s, c in zip(seeds, tf)]


@register("oswald-repeat", "the trained layer and GD applied 50 times with dampening lambda (Fig. 1, 10)",
          "source 000, A.6, Fig. 1, Fig. 10; source 001", quick_minutes=0.3, full_minutes=2.0,
          models=one_layer_model, deviations=LINEAR_DEVIATIONS)
def repeat(ctx: ExperimentContext) -> None:
    """Loss after each application, averaged over tasks; a task whose loss overflows counts as diverged
    (the mean over all tasks is then infinite; the curves show the mean over the other tasks)."""
    res = one_layer_run(ctx)
    task = res.config.task
    ev = eval_tasks(ctx, task)
    gd = tune_gd(tune_tasks(ctx, task), 1)
    prods = [products(lr.model) for lr in seed_learners(res)]
    rows, tf_by, gd_by = [], {}, {}
    for lam in LAMBDAS:
        tf_by[lam] = [_tf_curve(kq, pv, lam, ev) for kq, pv in prods]
        gd_by[lam] = _gd_curve(gd.etas[0] * lam, ev)
        rows += _repeat_rows(lam, "all", res.config.seeds, tf_by[lam], gd_by[lam])
    y_only = {lam: [_tf_curve(kq, pv, lam, ev, update="y") for kq, pv in prods] for lam in LAMBDAS}
    _repeat_sweep(ctx, y_only, gd_by)
    for lam, cs in ((lam, y_only[lam]) for lam in (0.75, 1.0)):
        key = f"lambda_{lam:g}".replace(".", "_")
        ratios = [c[-1][0] / c[0][0] for c in cs]
        ctx.result(REPEAT_Y_RATIO_MEDIAN.format(key=key), median(ratios))
        ctx.result(f"{key}.y_only.tf_diverged_tasks_per_seed", [c[-1][2] for c in cs])
        fin = np.median([[x[1] for x in c] for c in cs], axis=0)  # median seed's finite-task mean, per step
        ctx.result(f"{key}.y_only.max_relative_tf_gd_difference",
                   float(np.max(np.abs(fin / np.array([x[1] for x in gd_by[lam]]) - 1))))
        rows += _repeat_rows(lam, "y", res.config.seeds, cs, gd_by[lam])
        ctx.report(f"the official code's roll-out (only y moves) with lambda = {lam:g} (Fig. 1)",
                   f"TF loss after {REPEATS} / after 1 per seed, all {ev.batch_size} tasks: "
                   + ", ".join(f"{x:.3g}" for x in ratios)
                   + f"; diverged tasks per seed {[c[-1][2] for c in cs]}")
    for lam in (0.7, 0.75, 1.0):
        key = f"lambda_{lam:g}".replace(".", "_")
        first = [c[0][0] for c in tf_by[lam]]
        last = [c[-1][0] for c in tf_by[lam]]
        ratio = max(lt / f for lt, f in zip(last, first))  # worst seed; inf when a task diverged
        diverged = max(c[-1][2] for c in tf_by[lam])
        fin = np.mean([[x[1] for x in c] for c in tf_by[lam]], axis=0)
        gd_fin = np.array([x[1] for x in gd_by[lam]])
        ctx.result(REPEAT_RATIO_WORST.format(key=key), ratio)
        ctx.result(f"{key}.tf_diverged_tasks_worst_seed", diverged)
        ctx.result(f"{key}.gd_final_over_first", gd_by[lam][-1][0] / gd_by[lam][0][0])
        ctx.result(f"{key}.max_relative_tf_gd_difference", float(np.max(np.abs(fin / gd_fin - 1))))
        ctx.report(f"repeated {REPEATS} times with dampening lambda = {lam:g} (Fig. 1, 10; blog: 0.7)",
                   f"TF loss after {REPEATS} / after 1 (worst seed, all {ev.batch_size} tasks): {ratio:.3g}, "
                   f"diverged tasks {diverged}; GD with eta * lambda: "
                   f"{gd_by[lam][-1][0] / gd_by[lam][0][0]:.3g}; largest |TF/GD - 1| over the steps "
                   f"(tasks that did not diverge): {float(np.max(np.abs(fin / gd_fin - 1))):.3g}")
    fig, axes = subplots(2, width=4.8)
    steps = np.arange(1, REPEATS + 1)
    notes = []
    for lam, style, colors in ((0.75, "-", COLORS), (1.0, ":", COLORS_2)):  # lambda = 1 in its own colours
        bad = max(c[-1][2] for c in tf_by[lam])
        notes.append(f"lambda={lam:g}: {bad} diverged task(s) of {ev.batch_size} left out")
        band(axes[0], steps, [[x[1] for x in c] for c in tf_by[lam]], f"TF, lambda={lam:g}", colors["tf"],
             linestyle=style)
        axes[0].plot(steps, [x[1] for x in gd_by[lam]], color=colors["gd"], linestyle=style,
                     label=f"GD, eta*{lam:g}")
    band(axes[0], steps, [[x[1] for x in c] for c in y_only[0.75]], "TF, lambda=0.75, only y moves (official code)",
         COLORS["interp"], linestyle="--")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("number of applications")
    axes[0].set_ylabel("loss (mean over tasks)")
    axes[0].set_title("repeated application\n(" + "; ".join(notes) + ")", fontsize=8)
    legend_below(axes[0])  # the dampened curves run along the bottom, where a legend inside would sit
    band(axes[1], LAMBDAS, np.array([[c[-1][1] for c in tf_by[lam]] for lam in LAMBDAS]).T, "TF", COLORS["tf"],
         marker="o", markersize=3)
    axes[1].plot(LAMBDAS, [gd_by[lam][-1][1] for lam in LAMBDAS], color=COLORS["gd"], linestyle="--", marker="s",
                 markersize=3, label="GD")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("dampening lambda")
    axes[1].set_ylabel(f"loss after {REPEATS} applications")
    axes[1].set_title("dampening sweep")
    axes[1].legend(fontsize=7)
    ctx.figure("repeat", fig)
    ctx.table("repeat", rows)
