"""For each kernel, the GD model (kernel functional GD, only the learning rates and the kernel parameter
learnt) and the Trained TF (one attention layer, one head, every weight learnt) on the same fresh
XOR-quadrant tasks: probability MSE on held-out tasks, their agreement, MSE over training (Fig. 3) and
probability maps on the 100 x 100 grid (Fig. 2, 6-9): `categorical-gd-vs-tf`."""

from __future__ import annotations

from typing import Any

import torch

from icgd.core.episodes import make_generator
from icgd.core.metrics import alignment
from icgd.experiments.categorical.keys import (
    GD_MSE,
    PRIOR_MSE,
    TF_DIVERGED,
    TF_MSE,
    TF_OVER_GD,
)
from icgd.experiments.categorical.shared import (
    MSE_LABEL,
    SOURCE,
    TF_STEPS,
    cat_config,
    gd_config,
    held_out,
    prior_learner,
    score,
    task,
    tf_model,
    train_or_diverge,
)
from icgd.experiments.common import (
    Size,
    curves,
    median,
    seed_learners,
    size,
)
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.figures import band, grid, label_axes, subplots
from icgd.tasks.categorical import (
    complete_probabilities,
    true_probabilities,
)

MAP_SEED = 20_250_201

#: the kernels of the source's figures, and all nine (full mode trains every kernel of the registry)
FIGURE_KERNELS = ("softmax", "rbf", "linear", "exponential", "laplacian")

ALL_KERNELS = ("softmax", "rbf", "linear", "exponential", "laplacian", "sigmoid", "polynomial", "cosine",
               "chi_squared")

ALIGN_TASKS = Size(quick=512, full=1024, smoke=16)


def kernels_of(ctx: ExperimentContext) -> tuple[str, ...]:
    return ALL_KERNELS if ctx.mode == "full" else FIGURE_KERNELS


# --------------------------------------------------------------------------------------- GD vs TF
@register("categorical-gd-vs-tf", "GD model vs Trained TF for each kernel: MSE, agreement, curves, maps "
          "(Fig. 2, 3, 6-9)", SOURCE, quick_minutes=3, full_minutes=40)
def gd_vs_tf(ctx: ExperimentContext) -> None:
    ep = held_out(ctx)
    n_align = size(ctx, ALIGN_TASKS)
    prior = ctx.result(PRIOR_MSE, score(prior_learner(ep.dy), ep))
    rows, fitted = [], {}
    fig, (ax,) = subplots(1, width=6.0, height=4.0)
    for i, kernel in enumerate(kernels_of(ctx)):
        gd_res = ctx.train(f"cat-gd-{kernel}", gd_config(ctx, kernel))
        gd = seed_learners(gd_res)[0]
        gd_mse = ctx.result(GD_MSE.format(kernel=kernel), score(gd, ep))
        tf_res, diverged_at = train_or_diverge(ctx, f"cat-tf-{kernel}",
                                               cat_config(ctx, f"cat-tf-{kernel}", tf_model(kernel), TF_STEPS))
        row = {"kernel": kernel, "gd_mse": gd_mse, "prior_mse": prior, "gd_eta": gd.etas.detach().tolist(),
               "gd_kernel_params": gd.kernel_params.detach().reshape(-1).tolist()}
        if tf_res is None:
            ctx.result(TF_DIVERGED.format(kernel=kernel), len(ctx.seeds))
            for key in (TF_MSE, TF_OVER_GD):
                ctx.result(key.format(kernel=kernel), float("nan"))
            rows.append(row | {"tf_diverged_at_step": diverged_at})
            ctx.note(f"{kernel}: the Trained TF diverged at step {diverged_at} (non-finite loss)")
            continue
        ctx.result(TF_DIVERGED.format(kernel=kernel), 0)
        tfs = seed_learners(tf_res)
        tf_mse = [score(tf, ep) for tf in tfs]
        al = [alignment(tf, gd, ep[:n_align]) for tf in tfs]
        ctx.result(TF_MSE.format(kernel=kernel), median(tf_mse))
        ctx.result(TF_OVER_GD.format(kernel=kernel), median([m / gd_mse for m in tf_mse]))
        diff = median([a["prediction_difference"].mean for a in al])
        cos = median([a["sensitivity_cosine"].mean for a in al])
        ctx.result(f"{kernel}.prediction_difference_median", diff)
        ctx.result(f"{kernel}.sensitivity_cosine_median", cos)
        rows.append(row | {"tf_mse_median": median(tf_mse), "tf_mse_seeds": tf_mse,
                           "tf_over_gd": median(tf_mse) / gd_mse,
                           "prediction_difference": diff, "sensitivity_cosine": cos})
        ctx.report(f"{kernel}: GD and Trained TF agree", f"MSE GD {gd_mse:.4f}, TF {median(tf_mse):.4f} "
                   f"(prior {prior:.4f}); prediction difference {diff:.3f}, sensitivity cosine {cos:.3f}")
        steps, ys = curves(tf_res, "eval_loss")
        color = f"C{i}"
        band(ax, steps, ys, f"TF {kernel}", color, per_seed=True)  # a seed stuck on a plateau shows as itself
        ax.axhline(gd_mse, color=color, ls="--", lw=1)
        fitted[kernel] = (gd, tfs[0])
    ax.axhline(prior, color="grey", ls=":", lw=1, label="prior 1/C")
    ax.set_yscale("log")
    label_axes([ax], ["Trained TF (solid) vs GD model (dashed), 1 layer, 1 head"], [MSE_LABEL])
    ctx.figure("training", fig)
    ctx.table("gd_vs_tf", rows)
    if fitted:
        probability_maps(ctx, fitted)


def probability_maps(ctx: ExperimentContext, fitted: dict[str, tuple[Any, Any]], n_contexts: int = 3) -> None:
    """Fig. 2, 6-9: per kernel, the probability of each category on the 100 x 100 grid for the GD model and
    the Trained TF (first seed) on the same context sets (the fixed XOR template), with the
    context points; and the true probabilities."""
    t = task(queries="grid", grid_size=100, templates="fixed", query_targets="probabilities")
    ep = t.sample(n_contexts, make_generator(MAP_SEED), dtype=torch.float64)
    c = t.n_categories
    truth = true_probabilities(ep.teacher, ep.query_x)[0].reshape(100, 100, c)
    labels = complete_probabilities(ep.context_y).argmax(-1)
    for kernel, (gd, tf) in fitted.items():
        fig, axes = grid(3, c)
        for row, (name, learner) in enumerate((("true", None), ("GD", gd), ("Trained TF", tf))):
            with torch.no_grad():
                p = truth if learner is None else complete_probabilities(learner.predict(ep[:1])[0])
            p = p.reshape(100, 100, c)
            for cat in range(c):
                ax = axes[row * c + cat]
                ax.imshow(p[:, :, cat].T.clamp(0, 1).numpy(), origin="lower", extent=(-1, 1, -1, 1), vmin=0, vmax=1,
                          cmap="viridis")
                for k in range(c):
                    pts = ep.context_x[0][labels[0] == k]
                    ax.scatter(pts[:, 0], pts[:, 1], s=14, marker="osD^v"[k % 5],
                               c="white" if k == cat else "black", edgecolors="black", linewidths=0.5)
                ax.set_title(f"{name}: p(category {cat})", fontsize=8)
                ax.set_xticks([])
                ax.set_yticks([])
        fig.suptitle(f"{kernel} attention, one layer, one head (probabilities clamped to [0, 1] for display)",
                     fontsize=9)
        ctx.figure(f"maps_{kernel}", fig)
