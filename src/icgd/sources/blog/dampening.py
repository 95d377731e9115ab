"""A trained layer applied 50 times with dampening lambda = 0.7 against GD with eta * lambda:
`blog-dampening`."""

from __future__ import annotations

import math

import numpy as np
import torch

from icgd.analysis.readoff import (
    divergence_cap,
    gd_repeat_losses,
    products,
    tf_repeat_losses,
)
from icgd.experiments.common import eval_tasks, median, seed_learners, tune_tasks
from icgd.experiments.linear_setup import one_layer_model, one_layer_run
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.tuning import (
    tune_gd,
)
from icgd.results.figures import COLORS, COLORS_2, band, legend_below, subplots
from icgd.sources.blog.deviations import BLOG_DEVIATIONS
from icgd.sources.blog.keys import DAMPING_MEDIAN

# ------------------------------------------------------------------------------------- dampening
DAMPING = 0.7

REPEATS = 50


@register("blog-dampening", "a trained layer applied 50 times with dampening 0.7 vs GD with eta * 0.7",
          "source 001, 'How about multiple layers?'", quick_minutes=0.5, full_minutes=1.0, models=one_layer_model,
          deviations=BLOG_DEVIATIONS + ("the median of 5 seeds; the post shows one model.",))
def dampening(ctx: ExperimentContext) -> None:
    """Per task: loss after each application. A task whose loss overflows at any application (not finite,
    or above `divergence_cap`) counts as diverged; curves average the tasks on which neither the TF nor GD
    diverged."""
    res = one_layer_run(ctx)
    task = res.config.task
    ev = eval_tasks(ctx, task)
    gd = tune_gd(tune_tasks(ctx, task), 1)
    cap = divergence_cap(ev)
    rows, per_seed, curves = [], [], {}
    for lam in (DAMPING, 1.0):
        g = gd_repeat_losses(gd.etas[0] * lam, ev, REPEATS)
        g_ok = torch.isfinite(g[-1]) & (g.max(0).values < cap)
        tf_curves, ratios = [], []
        for s, lr in zip(res.config.seeds, seed_learners(res)):
            t = tf_repeat_losses(*products(lr.model), lam, ev, REPEATS)
            ok = torch.isfinite(t).all(0) & (t.max(0).values < cap)
            both = ok & g_ok
            mean_all = float(t[-1].mean()) if bool(ok.all()) else math.inf
            decreased = float((t[-1] < t[0]).double().mean())
            tf_c, gd_c = t[:, both].mean(1).numpy(), g[:, both].mean(1).numpy()
            tf_curves.append(tf_c)
            ratios.append(torch.where(ok, t[-1] / t[0], torch.full_like(t[0], math.inf)))
            rec = {"lambda": lam, "seed": s, "tf_final_over_first_all_tasks": mean_all / float(t[0].mean()),
                   "fraction_of_tasks_decreasing": decreased, "tf_diverged_tasks": int((~ok).sum()),
                   "gd_diverged_tasks": int((~g_ok).sum()),
                   "max_relative_tf_gd_difference": float(np.max(np.abs(tf_c / gd_c - 1))),
                   "tf_max_consecutive_ratio": float(np.max(tf_c[1:] / tf_c[:-1]))}
            per_seed.append(rec)
            rows += [{"lambda": lam, "seed": s, "application": k + 1, "tf_loss": float(tf_c[k]),
                      "gd_loss": float(gd_c[k]), "tasks_averaged": int(both.sum())} for k in range(REPEATS)]
        curves[lam] = (np.array(tf_curves), g[:, g_ok].mean(1).numpy(), ratios)
        key = f"lambda_{lam:g}".replace(".", "_")
        mine = [r for r in per_seed if r["lambda"] == lam]
        for k in ("tf_final_over_first_all_tasks", "fraction_of_tasks_decreasing", "tf_diverged_tasks",
                  "max_relative_tf_gd_difference", "tf_max_consecutive_ratio"):
            ctx.result(DAMPING_MEDIAN.format(key=key, measure=k), median([r[k] for r in mine]))
        ctx.result(f"{key}.gd_final_over_first", float(g[-1, g_ok].mean() / g[0, g_ok].mean()))
        ctx.result(f"{key}.gd_fraction_of_tasks_decreasing", float((g[-1] < g[0]).double().mean()))
        ctx.report(f"lambda = {lam:g}: {REPEATS} dampened applications of the trained layer lower the loss and "
                   "match GD with eta * lambda" if lam < 1 else "without dampening the repeated layer diverges",
                   f"loss after {REPEATS} / after 1 over all {ev.batch_size} tasks (median seed) "
                   f"{ctx.results[f'{key}.tf_final_over_first_all_tasks_median']:.3g}; tasks whose loss fell "
                   f"{ctx.results[f'{key}.fraction_of_tasks_decreasing_median']:.2%} (GD: "
                   f"{ctx.results[f'{key}.gd_fraction_of_tasks_decreasing']:.2%}); largest ratio of consecutive "
                   f"applications {ctx.results[f'{key}.tf_max_consecutive_ratio_median']:.4f}; diverged tasks "
                   f"{ctx.results[f'{key}.tf_diverged_tasks_median']:g}; largest |TF/GD - 1| over the "
                   f"applications {ctx.results[f'{key}.max_relative_tf_gd_difference_median']:.3g}")
    ctx.table("dampening", rows)
    ctx.table("dampening_per_seed", per_seed)
    fig, axes = subplots(2, width=4.6, height=3.2)
    steps = np.arange(1, REPEATS + 1)
    for lam, style, colors in ((DAMPING, "-", COLORS), (1.0, ":", COLORS_2)):
        tf_c, gd_c, _ = curves[lam]
        band(axes[0], steps, tf_c, f"TF, lambda={lam:g}", colors["tf"], linestyle=style)
        axes[0].plot(steps, gd_c, color=colors["gd"], linestyle=style, label=f"GD, eta*{lam:g}")
    axes[0].set_yscale("log")
    axes[0].set_title("repeated application\n(tasks that diverged under either learner left out)", fontsize=8)
    axes[0].set_xlabel("number of applications")
    axes[0].set_ylabel("loss (mean over tasks)")
    legend_below(axes[0])  # the curves span the panel: no free corner
    r = curves[DAMPING][2][0]
    finite = r[torch.isfinite(r)].numpy()
    axes[1].hist(np.log10(finite), bins=60, color=COLORS["tf"])
    axes[1].axvline(0, color="black", linestyle="--")
    axes[1].set_xlabel(f"log10(loss after {REPEATS} / after 1), per task")
    axes[1].set_ylabel("tasks")
    axes[1].set_title(f"lambda = {DAMPING:g}, seed {res.config.seeds[0]}: {int((~torch.isfinite(r)).sum())} "
                      "diverged task(s) not shown", fontsize=8)
    ctx.figure("dampening", fig)
