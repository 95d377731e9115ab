"""The analytic optimal learning rate of one GD step against a line search (values, CIs, times), the loss as
a function of eta, and the implicit eta of trained LSA layers: `blog-eta`."""

from __future__ import annotations

import time

import numpy as np
import torch

from icgd.analysis.readoff import (
    implicit_eta,
    products,
)
from icgd.core.episodes import make_generator
from icgd.core.metrics import evaluate, mean_ci95
from icgd.experiments.common import Size, median, seed_learners, size
from icgd.experiments.linear_setup import one_layer_model, one_layer_run
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.tuning import (
    analytic_eta,
    gd_loss_fn,
    line_search,
)
from icgd.results.figures import COLORS, label_axes, legend_below, subplots
from icgd.sources.blog.deviations import BLOG_DEVIATIONS
from icgd.sources.blog.keys import (
    ETA_MAX_DIFFERENCE,
    ETA_OFF_GAP,
    ETA_SPEEDUP,
    TF_ETA_ERROR,
)
from icgd.tasks.linear import LinearRegression

ETA_SEED = 20_240_100

#: independent task sets of the learning-rate study, and tasks in each
ETA_REPETITIONS = Size(quick=5, full=20, smoke=2)

ETA_TASKS = Size(quick=10_000, full=10_000, smoke=256)


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean of independent repetitions with its 95% t-interval."""
    return mean_ci95(values, student=True)


# --------------------------------------------------------------------------------- learning rate
@register("blog-eta", "analytic optimal eta of one GD step vs line search: values, CIs, times, loss vs eta",
          "source 001, 'Analysis on the learning rate'", quick_minutes=0.5, full_minutes=2.0,
          models=lambda ctx: one_layer_model(ctx, 1.0) | one_layer_model(ctx, 0.5), deviations=BLOG_DEVIATIONS + (
              "timings on the CPU; the post's are JAX on a GPU.",))
def eta(ctx: ExperimentContext) -> None:
    """Each repetition draws 10,000 fresh tasks and computes eta both ways on them, timed; the CI of each
    value is the 95% t-interval over the repetitions (the analytic value also has its delta-method CI)."""
    reps = size(ctx, ETA_REPETITIONS)
    n_tasks = size(ctx, ETA_TASKS)
    rows, curves = [], {}
    for a in (1.0, 0.5):
        tag = f"a{a:g}"
        task = LinearRegression(input_range=a)
        mine, first = [], None
        for r in range(reps):
            ep = task.sample(n_tasks, make_generator(ETA_SEED + 1000 * r + int(a == 0.5)), dtype=torch.float64)
            first = ep if first is None else first
            t0 = time.perf_counter()
            est = analytic_eta(ep)
            t_an = time.perf_counter() - t0
            t0 = time.perf_counter()
            eta_ls = line_search(gd_loss_fn(ep, 1))
            t_ls = time.perf_counter() - t0
            mine.append({"input_range": a, "repetition": r, "tasks": n_tasks, "eta_analytic": est.value,
                         "eta_analytic_ci_low": est.ci95[0], "eta_analytic_ci_high": est.ci95[1],
                         "eta_line_search": eta_ls, "relative_difference": abs(est.value / eta_ls - 1),
                         "seconds_analytic": t_an, "seconds_line_search": t_ls})
        rows += mine
        an = mean_ci([m["eta_analytic"] for m in mine])
        ls = mean_ci([m["eta_line_search"] for m in mine])
        t_an = median([m["seconds_analytic"] for m in mine])
        t_ls = median([m["seconds_line_search"] for m in mine])
        ctx.result(f"{tag}.eta_analytic", an[0])
        ctx.result(f"{tag}.eta_analytic_ci95", [an[1], an[2]])
        ctx.result(f"{tag}.eta_analytic_delta_ci95_first_set", [mine[0]["eta_analytic_ci_low"],
                                                                mine[0]["eta_analytic_ci_high"]])
        ctx.result(f"{tag}.eta_line_search", ls[0])
        ctx.result(f"{tag}.eta_line_search_ci95", [ls[1], ls[2]])
        ctx.result(ETA_MAX_DIFFERENCE.format(tag=tag), max(m["relative_difference"] for m in mine))
        ctx.result(f"{tag}.seconds_analytic_median", t_an)
        ctx.result(f"{tag}.seconds_line_search_median", t_ls)
        ctx.result(ETA_SPEEDUP.format(tag=tag), t_ls / t_an)
        # the trained 1-layer LSA's implicit learning rate
        res = one_layer_run(ctx, a)
        tf_etas = [implicit_eta(*products(lr.model), task.dx, task.n_context) for lr in seed_learners(res)]
        errs = [abs(e / an[0] - 1) for e in tf_etas]
        ctx.result(f"{tag}.tf_etas", tf_etas)
        ctx.result(TF_ETA_ERROR.format(tag=tag), median(errs))
        ctx.report(f"x ~ U(-{a:g}, {a:g}): the analytic eta* equals the line search's",
                   f"analytic {an[0]:.4f} [{an[1]:.4f}, {an[2]:.4f}], line search {ls[0]:.4f} [{ls[1]:.4f}, "
                   f"{ls[2]:.4f}] ({reps} sets of {n_tasks} tasks); largest relative difference on the same "
                   f"tasks {ctx.results[f'{tag}.max_relative_difference']:.1e}")
        ctx.report("analytic: about 10 ms; line search: about 10 s",
                   f"median {1000 * t_an:.2f} ms vs {t_ls:.3f} s ({t_ls / t_an:.0f} times faster)")
        ctx.report("the trained transformer implicitly optimises the GD learning rate",
                   "implicit eta of the trained 1-layer LSA per seed: " + ", ".join(f"{e:.3f}" for e in tf_etas)
                   + f" (median relative error to eta* {median(errs):.2%})")
        # loss of one GD step as a function of eta, on the first set of tasks
        grid = np.linspace(0.0, 2.5 * an[0], 101)
        f = gd_loss_fn(first, 1)
        # the TF matches GD at eta* only: GD with eta* halved or doubled, against the TF (median seed)
        tf_loss = median([evaluate(lr, first).mean for lr in seed_learners(res)])
        gap = {k: f(float(k * an[0])) / tf_loss - 1 for k in (0.5, 1.0, 2.0)}
        ctx.result(f"{tag}.gd_eta_star_over_tf", gap[1.0])
        ctx.result(ETA_OFF_GAP.format(tag=tag), min(gap[0.5], gap[2.0]))
        ctx.report("the TF converges to GD's loss 'specifically for a single value' of eta",
                   f"GD loss / TF loss - 1 (median seed): at eta* {gap[1.0]:+.2%}, at eta*/2 "
                   f"{gap[0.5]:+.2%}, at 2 eta* {gap[2.0]:+.2%}")
        curves[a] = (grid, np.array([f(float(g)) for g in grid]), an, ls, tf_etas)
    ctx.table("eta", rows)
    fig, axes = subplots(3)
    for ax, a in zip(axes[:2], (1.0, 0.5)):
        grid, loss, an, ls, tf_etas = curves[a]
        ax.plot(grid, loss, color="black", label="one GD step")
        ax.axvspan(an[1], an[2], color=COLORS["gd"], alpha=0.25, linewidth=0)
        ax.axvline(an[0], color=COLORS["gd"], label=f"analytic eta* = {an[0]:.3f}")
        ax.axvline(ls[0], color=COLORS["gdpp"], linestyle="--", label=f"line search {ls[0]:.3f}")
        for i, e in enumerate(tf_etas):
            ax.axvline(e, color=COLORS["tf"], linestyle=":", label="trained LSA (per seed)" if i == 0 else None)
        ax.set_ylim(0, float(loss[0]) * 1.5)
    label_axes(axes[:2], ("x ~ U(-1, 1)", "x ~ U(-0.5, 0.5)"), ("loss after one step", "loss after one step"),
               xlabel="learning rate eta")
    for a, x in ((1.0, 0), (0.5, 1)):
        tag = f"a{a:g}"
        axes[2].bar([x - 0.2], [ctx.results[f"{tag}.seconds_analytic_median"]], width=0.4, color=COLORS["gd"],
                    label="analytic" if x == 0 else None)
        axes[2].bar([x + 0.2], [ctx.results[f"{tag}.seconds_line_search_median"]], width=0.4,
                    color=COLORS["gdpp"], label="line search" if x == 0 else None)
    axes[2].set_xticks([0, 1], ["a = 1", "a = 0.5"])
    axes[2].set_yscale("log")
    axes[2].set_ylabel("seconds (median)")
    axes[2].set_title(f"time on {n_tasks} tasks")
    legend_below(axes[2], ncol=2)  # the bars fill the panel: a legend inside hid them
    ctx.figure("eta", fig)
