"""LSTM and bidirectional LSTM learners of 1 to 4 layers, trained by the same engine on the same tasks,
against the 1-layer LSA and one GD step (loss, prediction difference, sensitivity cosine): `blog-lstm`."""

from __future__ import annotations

from typing import Any

import numpy as np

from icgd.core.metrics import alignment, evaluate
from icgd.experiments.common import (
    TUNE_TASKS,
    Size,
    curves,
    eval_every,
    eval_tasks,
    median,
    seed_learners,
    size,
    tune_tasks,
)
from icgd.experiments.linear_setup import one_layer_model, one_layer_run
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.explicit import ZeroPredictor
from icgd.learners.tuning import (
    tune_gd,
)
from icgd.results.figures import COLORS, band, label_axes, subplots
from icgd.sources.blog.deviations import BLOG_DEVIATIONS
from icgd.sources.blog.keys import (
    BEST_LSTM_OVER_LSA,
    BEST_UNI_LSTM_OVER_LSA,
    BILSTM_BEST_COSINE,
    BILSTM_COSINE_GAIN,
    BILSTM_COSINE_GAIN_FROM_2,
    BILSTM_GAIN_DEEPEST_OVER_1,
    BILSTM_OVER_LSTM,
    LSTM_BEST_COSINE_OVER_LSA,
    LSTM_DEPTHS,
    LSTM_SEEDS,
)
from icgd.train.config import TrainConfig, build_config

#: the LSTM study: held-out tasks behind its curves and their alignment, and of its alignment analysis
LSTM_CURVE_TASKS = Size(quick=1024, full=2048)

LSTM_CURVE_ALIGN_TASKS = Size(quick=256, full=512, smoke=16)

LSTM_ALIGN_TASKS = Size(quick=1024, full=2048)


# ----------------------------------------------------------------------------------------- LSTMs
def lstm_config(ctx: ExperimentContext, layers: int, bidirectional: bool) -> TrainConfig:
    """The post's set-up for its LSTMs: "the same experimental setup as before" (the post, 'Is this just for
    transformers?'), whose training its submitted version states as Adam, learning rate 1e-4, batch 2048
    (iclr-blogposts/2024 _posts/2024-05-07-understanding-icl.md at be45611, line 634; the camera-ready
    dropped the sentence), for the 25,000 steps of its LSTM figures (lstm-comparison-*.html); no gradient
    clipping is stated. The post's curves bear the rate out: at 1e-4 its LSTMs move little in the first
    1000 steps (1.66 -> 1.50 at 1 layer). Every seed draws its own tasks. Full mode is that; quick mode cuts
    the budget only: 2000 steps of batch 256 at depths 1, 2 and 4. Not stated, ours: 32 units per
    direction."""
    n = size(ctx, Size(quick=2000, full=25_000, smoke=4))
    name = f"{'bi' if bidirectional else ''}lstm-{layers}"
    ev = {"every": eval_every(ctx, n, 20), "n_tasks": size(ctx, LSTM_CURVE_TASKS), "reference": "gd",
          "reference_steps": 1, "alignment_tasks": size(ctx, LSTM_CURVE_ALIGN_TASKS)}
    if ctx.mode == "smoke":
        ev["n_tune"] = size(ctx, TUNE_TASKS)
    return build_config({
        "name": name, "model": {"kind": "lstm", "n_layers": layers, "bidirectional": bidirectional, "hidden": 32},
        "optim": {"name": "adam", "lr": 1e-4, "grad_clip": None}, "steps": n,
        "batch_size": size(ctx, Size(quick=256, full=2048, smoke=64)), "data": "per_seed", "seeds": ctx.seeds,
        "checkpoint_every": 250, "eval": ev})


def _relative_curve(res) -> tuple[list[int], np.ndarray]:
    """(steps, seeds x steps) of a run's held-out loss over the tuned one-step GD loss on the same tasks
    (each run draws its own held-out tasks)."""
    steps, ys = curves(res, "eval_loss")
    return steps, ys / curves(res, "reference_loss")[1]


def lstm_depths(quick: bool) -> list[int]:
    """1-5 layers as the post's figures (full mode); 1, 2 and 4 in quick mode."""
    return [1, 2, 4] if quick else [1, 2, 3, 4, 5]


def _lstm_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    """The 1-layer LSA, and LSTMs and BiLSTMs of every depth."""
    configs = [lstm_config(ctx, k, bi) for bi in (False, True) for k in lstm_depths(ctx.quick)]
    return one_layer_model(ctx) | {c.name: c for c in configs}


#: full_minutes: 10 s a step for the ten models (five seeds, batch 2048) alone on 2 cores, x 25,000 steps
#: (docs/sources/blog.md: lstm-2 0.43 s, bilstm-4 1.79 s a step, measured)
@register("blog-lstm", "LSTM and bidirectional LSTM learners of 1-4 layers vs the 1-layer LSA and one GD step",
          "source 001, 'Is this behavior unique to transformers?'", quick_minutes=15.0, full_minutes=4200.0,
          models=_lstm_models, deviations=BLOG_DEVIATIONS + (
              "32 hidden units per direction: the post does not state its LSTMs' size. Reason: a choice had to "
              "be made; the post's transformers have 64 embedding units.",
              "quick mode: batch 256, 2000 steps, depths 1, 2 and 4 (the post's set-up is full mode: batch 2048, "
              "25,000 steps, depths 1-5). Reason: CPU time; at the post's rate of 1e-4 its own LSTMs are still "
              "early in training at 2000 steps, so quick LSTM verdicts say little.",))
def lstm(ctx: ExperimentContext) -> None:
    lsa = one_layer_run(ctx)
    task = lsa.config.task
    ev = eval_tasks(ctx, task)
    n_align = size(ctx, LSTM_ALIGN_TASKS)
    gd = tune_gd(tune_tasks(ctx, task), 1)
    gd_loss, zero_loss = evaluate(gd, ev).mean, evaluate(ZeroPredictor(), ev).mean
    models: dict[str, Any] = {"lsa-1": lsa}
    for bi in (False, True):
        for k in lstm_depths(ctx.quick):
            cfg = lstm_config(ctx, k, bi)
            models[cfg.name] = ctx.train(cfg.name, cfg)
    rows, med = [], {}
    for name, res in models.items():
        per = []
        for s, lr in zip(res.config.seeds, seed_learners(res)):
            al = alignment(lr, gd, ev[:n_align])
            per.append({"model": name, "seed": s, "loss": evaluate(lr, ev).mean, "gd_loss": gd_loss,
                        "zero_loss": zero_loss, "prediction_difference": al["prediction_difference"].mean,
                        "sensitivity_cosine": al["sensitivity_cosine"].mean,
                        "sensitivity_l2": al["sensitivity_l2"].mean})
        rows += per
        med[name] = {k: median([r[k] for r in per]) for k in ("loss", "prediction_difference", "sensitivity_cosine")}
        for k, v in med[name].items():
            ctx.result(f"{name}.{k}_median", v)
            ctx.result(LSTM_SEEDS.format(model=name, measure=k), [r[k] for r in per])  # in seed order
    ks = lstm_depths(ctx.quick)
    uni, bid = [f"lstm-{k}" for k in ks], [f"bilstm-{k}" for k in ks]
    ctx.result(LSTM_DEPTHS, ks)
    ctx.result("gd_loss", gd_loss)
    ctx.result("zero_loss", zero_loss)
    ctx.result("lstm.best_cosine", max(med[n]["sensitivity_cosine"] for n in uni))
    ctx.result(LSTM_BEST_COSINE_OVER_LSA, ctx.results["lstm.best_cosine"] / med["lsa-1"]["sensitivity_cosine"])
    ctx.result(BILSTM_COSINE_GAIN, med[bid[-1]]["sensitivity_cosine"] - med[bid[0]]["sensitivity_cosine"])
    ctx.result(BILSTM_OVER_LSTM,
               max(med[b]["loss"] / med[u]["loss"] for u, b, k in zip(uni, bid, ks) if k >= 2))
    ctx.result(BEST_LSTM_OVER_LSA, min(med[n]["loss"] for n in uni + bid) / med["lsa-1"]["loss"])
    ctx.result(BEST_UNI_LSTM_OVER_LSA, min(med[n]["loss"] for n in uni) / med["lsa-1"]["loss"])
    ctx.result(BILSTM_GAIN_DEEPEST_OVER_1, (med[bid[-1]]["loss"] / med[uni[-1]]["loss"])
               / (med[bid[0]]["loss"] / med[uni[0]]["loss"]))
    two = [n for n, k in zip(bid, ks) if k == 2]
    if two:
        ctx.result(BILSTM_COSINE_GAIN_FROM_2, med[bid[-1]]["sensitivity_cosine"] - med[two[0]]["sensitivity_cosine"])
    ctx.result(BILSTM_BEST_COSINE, max(med[n]["sensitivity_cosine"] for n in bid))
    ctx.report("LSTMs struggle to learn linear functions in context as well as transformers",
               f"loss (median seed): LSA {med['lsa-1']['loss']:.4f}, GD {gd_loss:.4f}, zero {zero_loss:.4f}; "
               + ", ".join(f"{n} {med[n]['loss']:.4f}" for n in uni + bid))
    ctx.report("unidirectional LSTMs do not implement a GD step, whatever their depth",
               "sensitivity cosine with GD (median seed): " + ", ".join(
                   f"{n} {med[n]['sensitivity_cosine']:.3f}" for n in uni)
               + f"; LSA {med['lsa-1']['sensitivity_cosine']:.4f}")
    ctx.report("for 2 or more layers bidirectional LSTMs behave increasingly like a GD step (cosine below 1)",
               ", ".join(f"{n} {med[n]['sensitivity_cosine']:.3f}" for n in bid))
    ctx.table("lstm", rows)
    fig, axes = subplots(4)
    from matplotlib import colormaps

    for names, color, cmap, label in ((uni, COLORS["other"], "Oranges", "LSTM"),
                                      (bid, COLORS["gdpp"], "Greens", "BiLSTM")):
        for n, k in zip(names, ks):  # a darker shade of the family's hue for more layers
            band(axes[0], *_relative_curve(models[n]), "_", colormaps[cmap](0.35 + 0.65 * k / ks[-1]))
        for ax, key in zip(axes[1:], ("loss", "sensitivity_cosine", "prediction_difference")):
            per_seed = np.array([[r[key] for r in rows if r["model"] == n] for n in names]).T  # seeds x depths
            band(ax, ks, per_seed, label, color, note=False, marker="o")
    band(axes[0], *_relative_curve(lsa), "LSA, 1 layer", COLORS["tf"], note=False)
    for ax, key in zip(axes[1:], ("loss", "sensitivity_cosine", "prediction_difference")):
        ax.axhline(med["lsa-1"][key], color=COLORS["tf"], linestyle="--", label="LSA, 1 layer")
        ax.set_xticks(ks)
    axes[0].axhline(1.0, color=COLORS["gd"], linestyle=":", label="one GD step")
    axes[1].axhline(gd_loss, color=COLORS["gd"], linestyle=":", label="one GD step")
    axes[1].axhline(zero_loss, color="grey", linestyle=":", label="zero predictor")
    for ax in axes[:2]:
        ax.set_yscale("log")
    axes[0].set_title("held-out loss during training\n(darker: more layers)")
    axes[0].set_xlabel("training step")
    axes[0].set_ylabel("loss / one GD step on the same tasks")
    label_axes(axes[1:], ("loss", "sensitivity cosine with GD", "prediction difference to GD"),
               ("loss", "cosine", "||y - y_GD||"), xlabel="layers", legend=False)
    # one legend for the four panels, under them (inside, it covered the curves and the tick labels)
    fig.legend(*axes[1].get_legend_handles_labels(), loc="outside lower center", ncol=5, fontsize=7, frameon=False)
    fig.suptitle(f"median of {len(ctx.seeds)} seeds; shaded: their range, or thin lines: each "
                 "seed where they go apart", fontsize=8)
    ctx.figure("lstm", fig)
