"""Training on a fixed set of 128 to 8192 tasks (A.12, Fig. 16), and one LSA + MLP block on 8192 fixed
tasks that can grokk (Fig. 15 right): `oswald-fixed-data`."""

from __future__ import annotations

from typing import Any

import numpy as np

from icgd.core.metrics import alignment, evaluate
from icgd.experiments.common import (
    ALIGN_TASKS,
    curve_tasks,
    curves,
    eval_tasks,
    median,
    seed_learners,
    seed_losses,
    size,
    tune_tasks,
)
from icgd.experiments.linear_setup import train_config
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.tuning import tune_gd
from icgd.results.figures import COLORS, COLORS_2, band, label_axes, subplots
from icgd.sources.oswald.keys import (
    FIXED_LOSS_OVER_GD,
    FIXED_MIN_COSINE,
    GROKKING_SEEDS,
)
from icgd.sources.oswald.shared import GELU_DEVIATION, LINEAR_DEVIATIONS
from icgd.train.config import TrainConfig

# ------------------------------------------------------------------------------- fixed training sets
_FIXED_SIZES = [128, 512, 2048, 8192]


def _fixed_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    """1-layer LSAs on fixed training sets, and one LSA + MLP block on 8192 fixed tasks (grokking)."""
    out = {f"fixed-{m}": train_config(ctx, f"fixed-{m}", {"n_layers": 1}, (1500, 5000), train_set_size=m,
                                      batch_size=min(2048, m)) for m in _FIXED_SIZES}
    for lr in grokking_lrs(ctx):
        label = _grokking_label(lr)
        out[label] = train_config(ctx, label, {"n_layers": 1, "mlp": True}, (3000, 10000), lr=lr,
                                  train_set_size=8192, batch_size=2048)
    return out


def grokking_lrs(ctx: ExperimentContext) -> list[float]:
    """The learning rates the grokking block is tried at: A.11 needed 'carefully tuning the learning rate',
    whose value it does not give, so full mode tries three (quick mode the linear study's 1e-3)."""
    return [1e-3] if ctx.quick else [3e-4, 1e-3, 3e-3]


def _grokking_label(lr: float) -> str:
    return "fixed-8192-mlp" if lr == 1e-3 else f"fixed-8192-mlp-lr{lr:g}"


@register("oswald-fixed-data", "training on a fixed set of 128 to 8192 tasks (Fig. 16)",
          "source 000, A.12, Fig. 16", quick_minutes=1.0, full_minutes=8.5, models=_fixed_models,
          deviations=LINEAR_DEVIATIONS + (
              "sets of 128 and 512 tasks train with batches of 128 and 512; the code's smallest set is one batch of "
              "2048 (cycle_data, constructed_token_setup.ipynb lines 172, 589-595). Reason: the paper's Fig. 16 "
              "shows smaller sets.",
              "the grokking block's learning rate and batch are not given (A.11: 'carefully tuned'): full mode tries "
              "lr 3e-4, 1e-3 and 3e-3 at batch 2048, quick mode 1e-3 only. Reason: CPU time in quick mode.",
              GELU_DEVIATION))
def fixed_data(ctx: ExperimentContext) -> None:
    sizes = _FIXED_SIZES
    configs = _fixed_models(ctx)
    ev = None
    rows, ratios, cos_med = [], {}, {}
    fig, axes = subplots(2)
    # not the default cycle, whose fourth colour is GD's red
    palette = (COLORS["tf"], COLORS["other"], COLORS["gdpp"], COLORS["interp"], COLORS_2["gd"], COLORS_2["gdpp"])
    for i, m in enumerate(sizes):
        res = ctx.train(f"fixed-{m}", configs[f"fixed-{m}"])
        task = res.config.task
        ev = eval_tasks(ctx, task) if ev is None else ev
        gd = tune_gd(tune_tasks(ctx, task), 1)
        gd_loss = evaluate(gd, ev).mean
        learners = seed_learners(res)
        losses = seed_losses(res, ev)
        coss = [alignment(lr, gd, ev[:size(ctx, ALIGN_TASKS)])["sensitivity_cosine"].mean for lr in learners]
        ratios[m] = median([x / gd_loss for x in losses])
        cos_med[m] = median(coss)
        for s, x, c in zip(res.config.seeds, losses, coss):
            rows.append({"train_set_size": m, "seed": s, "held_out_loss": x, "gd_loss": gd_loss,
                         "loss_over_gd": x / gd_loss, "sensitivity_cosine": c})
        ctx.result(f"size_{m}.cosine_median", cos_med[m])
        steps, ys = curves(res, "eval_loss")
        color = palette[i % len(palette)]
        band(axes[0], steps, ys, f"{m} tasks", color)
        _, tr = curves(res, "train_loss")
        band(axes[1], steps, tr, f"{m} tasks", color)
        ctx.result(FIXED_LOSS_OVER_GD.format(size=m), ratios[m])
    axes[0].axhline(evaluate(gd, curve_tasks(res)).mean, color=COLORS["gd"], linestyle="--", label="GD")
    label_axes(axes, ("held-out loss", "training loss (on the fixed set)"), ("loss", "loss"), legend="figure")
    for ax in axes:
        ax.set_yscale("log")
    ctx.figure("fixed_data", fig)
    ctx.table("fixed_data", rows)
    ctx.report("with few training tasks the LSA overfits; with more it approaches GD (Fig. 16)",
               "held-out loss / GD (median seed): " + ", ".join(f"{m} tasks {ratios[m]:.3f}" for m in sizes))
    ctx.result(FIXED_MIN_COSINE, min(cos_med[m] for m in sizes if m >= 512))
    ctx.report("even with few training tasks the weights align with GD (A.12)",
               "sensitivity cosine with GD (median seed): " + ", ".join(f"{m} tasks {cos_med[m]:.4f}" for m in sizes))
    _grokking(ctx, gd)


def _grokking(ctx: ExperimentContext, gd: Any) -> None:
    """Fig. 15 right (A.11): one block (LSA + MLP) trained on 8192 fixed tasks; the source saw the held-out
    loss 'first increase drastically before experiencing a sudden drop ... almost matching' GD, 'when
    carefully tuning the learning rate and batchsize' (values it does not give: ours are the linear study's,
    lr 1e-3 and batch 2048; full mode also tries lr 3e-4 and 3e-3: `grokking_lrs`). Per seed, on the
    training curve's held-out tasks: grokking = the held-out loss rises to at least twice its first evaluation
    and ends within 20% of GD (our reading of 'drastically' and 'almost'). Result GROKKING_SEEDS: how many
    seeds do at the best learning rate; figure and table grokking."""
    models = _fixed_models(ctx)
    rows: list[dict[str, Any]] = []
    grokked: dict[float, int] = {}
    fig, axes = subplots(2)
    for lr, color in zip(grokking_lrs(ctx), (COLORS["tf"], COLORS["other"], COLORS["gdpp"])):
        res = ctx.train(_grokking_label(lr), models[_grokking_label(lr)])
        gd_curve = evaluate(gd, curve_tasks(res)).mean
        steps, ys = curves(res, "eval_loss")
        _, tr = curves(res, "train_loss")
        grokked[lr] = 0
        for s, y in zip(res.config.seeds, ys):
            rise = float(np.max(y) / y[0])
            end = float(y[-1] / gd_curve)
            grokked[lr] += int(rise >= 2 and end <= 1.2)
            rows.append({"lr": lr, "seed": s, "first_eval_loss": float(y[0]), "max_eval_loss": float(np.max(y)),
                         "final_eval_loss": float(y[-1]), "gd_loss": gd_curve, "rise": rise, "final_over_gd": end})
        band(axes[0], steps, ys, f"lr {lr:g}", color, per_seed=True)
        band(axes[1], steps, tr, f"lr {lr:g}", color, per_seed=True)
    axes[0].axhline(gd_curve, color=COLORS["gd"], linestyle="--", label="GD")
    ctx.result(GROKKING_SEEDS, max(grokked.values()))  # at the best learning rate
    ctx.result("grokking_seeds_by_lr", {f"{lr:g}": n for lr, n in grokked.items()})
    ctx.table("grokking", rows)
    label_axes(axes, ("LSA + MLP on 8192 fixed tasks: held-out", "training (the fixed set)"), ("loss", "loss"),
               legend="figure")
    for ax in axes:
        ax.set_yscale("log")
    ctx.figure("grokking", fig)
    ctx.report("one block (LSA + MLP) on 8192 fixed tasks can 'grokk': the held-out loss first rises "
               "drastically, then drops to about GD's (Fig. 15 right)",
               "per seed, highest / first held-out loss and final / GD: " + ", ".join(
                   f"{r['rise']:.2f} and {r['final_over_gd']:.3f} (lr {r['lr']:g})" for r in rows)
               + "; seeds that grokk, by learning rate: " + ", ".join(f"{lr:g}: {n}" for lr, n in grokked.items()))
