"""Test loss of trained LSA models as a function of the context size N and of the depth, beside GD with
as many steps: `blog-scaling`."""

from __future__ import annotations

import numpy as np

from icgd.core.metrics import evaluate
from icgd.experiments.common import eval_tasks, median, seed_learners, tune_tasks
from icgd.experiments.linear_setup import authors_steps, one_layer_model, train_config
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.explicit import ZeroPredictor
from icgd.learners.tuning import (
    tune_gd,
    tune_gdpp,
)
from icgd.results.figures import COLORS, band, label_axes, legend_below, subplots
from icgd.sources.blog.deviations import BLOG_DEVIATIONS
from icgd.sources.blog.keys import (
    RATIO_CONTEXT,
    RATIO_DEPTH,
    TF_GD_GAP_ACROSS_N,
    TF_OVER_ZERO_N10,
)
from icgd.tasks.linear import LinearRegression
from icgd.train.config import TrainConfig

# ---------------------------------------------------------------------------------------- scaling
CONTEXT_SIZES = [5, 10, 20, 40]

DEPTHS = [1, 2, 3, 4]


def _context_model(ctx: ExperimentContext, n: int) -> dict[str, TrainConfig]:
    if n == 10:
        return one_layer_model(ctx)  # the same config as oswald-1layer's
    return {f"lsa1-n{n}": train_config(ctx, f"lsa1-n{n}", {"n_layers": 1}, (1500, 5000),
                                       task={"input_range": 1.0, "n_context": n})}


def _depth_model(ctx: ExperimentContext, k: int) -> dict[str, TrainConfig]:
    if k == 1:
        return one_layer_model(ctx)
    model = {"n_layers": k, "recurrent": False}
    return {f"depth-layers-{k}": train_config(ctx, f"depth-layers-{k}", model, (2000, authors_steps(model)))}
    # the same configs as oswald-depth's (tests/integration/test_plan.py)


def _scaling_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    out: dict[str, TrainConfig] = {}
    for n in CONTEXT_SIZES:
        out |= _context_model(ctx, n)
    for k in DEPTHS:
        out |= _depth_model(ctx, k)
    return out


def context_run(ctx: ExperimentContext, n: int):
    ((label, config),) = _context_model(ctx, n).items()
    return ctx.train(label, config)


def depth_run(ctx: ExperimentContext, k: int):
    ((label, config),) = _depth_model(ctx, k).items()
    return ctx.train(label, config)


@register("blog-scaling", "test loss of trained LSA models vs context size N and vs depth, beside GD",
          "source 001, 'Pre-training setup' figure", quick_minutes=4.5, full_minutes=40.0, models=_scaling_models,
          deviations=BLOG_DEVIATIONS + ("context sizes N = 5, 10, 20, 40 and depths 1-4; the post sweeps C = 2 to 98 "
                                        "and depths 1-5. Reason: CPU time.",))
def scaling(ctx: ExperimentContext) -> None:
    """Context: one 1-layer LSA trained at each N and evaluated at its N, and the N = 10 model evaluated at
    every N (its weights hold P ~ eta / 10: no rescaling with N). Depth: separate-layer stacks of 1-4
    layers (the oswald-depth models) vs GD and GD++ with as many steps, tuned on separate tasks."""
    rows = []
    base = LinearRegression()
    ev10, tune10 = eval_tasks(ctx, base), tune_tasks(ctx, base)
    run10 = context_run(ctx, 10)
    tf10 = seed_learners(run10)
    gd10 = tune_gd(tune10, 1)
    losses10 = [evaluate(lr, ev10).mean for lr in tf10]  # the N = 10 point and the 1-layer depth point
    by_n: dict[int, dict[str, float]] = {}
    seeds_n: dict[int, tuple[list[float], list[float]]] = {}  # per seed: (trained at N, trained at 10)
    for n in CONTEXT_SIZES:
        if n == 10:
            ev, gd, res, losses = ev10, gd10, run10, losses10
            cross = losses10
        else:
            task = base.model_copy(update={"n_context": n})
            ev = eval_tasks(ctx, task)
            gd = tune_gd(tune_tasks(ctx, task), 1)
            res = context_run(ctx, n)
            losses = [evaluate(lr, ev).mean for lr in seed_learners(res)]
            cross = [evaluate(lr, ev).mean for lr in tf10]
        rec = {"tf_loss": median(losses), "gd_loss": evaluate(gd, ev).mean, "gd_eta": gd.etas[0],
               "tf10_loss": median(cross), "gd10_loss": evaluate(gd10, ev).mean,
               "zero_loss": evaluate(ZeroPredictor(), ev).mean}
        by_n[n] = rec
        seeds_n[n] = (losses, cross)
        rows += [{"study": "context", "n_context": n, "seed": s, "tf_loss": lo, "tf_trained_at_10_loss": c}
                 | {k: v for k, v in rec.items() if k not in ("tf_loss", "tf10_loss")}
                 for s, lo, c in zip(res.config.seeds, losses, cross)]
        ctx.result(f"n{n}.tf_loss_median", rec["tf_loss"])
        ctx.result(f"n{n}.gd_loss", rec["gd_loss"])
        ctx.result(f"n{n}.tf_trained_at_10_loss_median", rec["tf10_loss"])
    ns = CONTEXT_SIZES
    ctx.result(RATIO_CONTEXT, max(by_n[b]["tf_loss"] / by_n[a]["tf_loss"] for a, b in zip(ns, ns[1:])))
    ctx.result(TF_GD_GAP_ACROSS_N, max(abs(by_n[n]["tf_loss"] / by_n[n]["gd_loss"] - 1) for n in ns))
    ctx.result(TF_OVER_ZERO_N10, by_n[10]["tf_loss"] / by_n[10]["zero_loss"])
    ctx.report("the test loss decreases as the context size increases",
               "TF loss (median seed) / GD: " + ", ".join(
                   f"N={n} {by_n[n]['tf_loss']:.4f} / {by_n[n]['gd_loss']:.4f}" for n in ns))
    ctx.report("(not in the source) the N = 10 model at other N, without rescaling",
               ", ".join(f"N={n} {by_n[n]['tf10_loss']:.4f}" for n in ns)
               + "; GD with the N = 10 eta (its step divides by N): "
               + ", ".join(f"{by_n[n]['gd10_loss']:.4f}" for n in ns))
    by_k: dict[int, dict[str, float]] = {}
    seeds_k: dict[int, list[float]] = {}
    for k in DEPTHS:
        if k == 1:  # the 1-layer model, GD and tasks of the N = 10 point
            res, losses, gd = run10, losses10, gd10
        else:
            res = depth_run(ctx, k)
            losses = [evaluate(lr, ev10).mean for lr in seed_learners(res)]
            gd = tune_gd(tune10, k)
        gdpp = tune_gdpp(tune10, k) if k > 1 else gd
        seeds_k[k] = losses
        by_k[k] = {"tf_loss": median(losses), "gd_loss": evaluate(gd, ev10).mean,
                   "gdpp_loss": evaluate(gdpp, ev10).mean}
        rows += [{"study": "depth", "layers": k, "seed": s, "tf_loss": lo} | {
            kk: v for kk, v in by_k[k].items() if kk != "tf_loss"} for s, lo in zip(res.config.seeds, losses)]
        ctx.result(f"depth{k}.tf_loss_median", by_k[k]["tf_loss"])
        ctx.result(f"depth{k}.gd_loss", by_k[k]["gd_loss"])
        ctx.result(f"depth{k}.gdpp_loss", by_k[k]["gdpp_loss"])
    ctx.result(RATIO_DEPTH,
               max(by_k[b]["tf_loss"] / by_k[a]["tf_loss"] for a, b in zip(DEPTHS, DEPTHS[1:])))
    ctx.report("the test loss decreases as the number of layers increases",
               "TF loss (median seed) / GD / GD++ with as many steps: " + ", ".join(
                   f"{k} layer(s) {by_k[k]['tf_loss']:.4f} / {by_k[k]['gd_loss']:.4f} / {by_k[k]['gdpp_loss']:.4f}"
                   for k in DEPTHS))
    ctx.table("scaling", rows)
    fig, axes = subplots(2, height=3.6)  # the legends under the panels
    # the trained models: median over seeds with their range (seeds x points)
    band(axes[0], ns, np.array([seeds_n[n][0] for n in ns]).T, "LSA trained at each N", COLORS["tf"], marker="o")
    axes[0].plot(ns, [by_n[n]["gd_loss"] for n in ns], marker="s", linestyle="--", color=COLORS["gd"],
                 label="one GD step, eta tuned at each N")
    band(axes[0], ns, np.array([seeds_n[n][1] for n in ns]).T, "LSA trained at N = 10", COLORS["other"],
         marker="^", linestyle=":")
    axes[0].plot(ns, [by_n[n]["zero_loss"] for n in ns], color="grey", linestyle=":", label="zero predictor")
    axes[0].set_xscale("log", base=2)
    axes[0].minorticks_off()
    axes[0].set_xticks(ns, [str(n) for n in ns])
    band(axes[1], DEPTHS, np.array([seeds_k[k] for k in DEPTHS]).T, "LSA", COLORS["tf"], marker="o")
    axes[1].plot(DEPTHS, [by_k[k]["gd_loss"] for k in DEPTHS], marker="s", linestyle="--", color=COLORS["gd"],
                 label="GD, as many steps")
    axes[1].plot(DEPTHS, [by_k[k]["gdpp_loss"] for k in DEPTHS], marker="s", linestyle="--", color=COLORS["gdpp"],
                 label="GD++, as many steps")
    axes[1].set_xticks(DEPTHS)
    for ax in axes:
        ax.set_yscale("log")
    label_axes(axes[:1], ("test loss vs context size",), ("loss",), xlabel="context size N", legend=False)
    label_axes(axes[1:], ("test loss vs depth",), ("loss",), xlabel="layers (GD steps)", legend=False)
    for ax in axes:  # the curves span the panels: no free corner
        legend_below(ax)
    ctx.figure("scaling", fig)
