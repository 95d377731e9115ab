"""For each kernel, the GD model (kernel functional GD, only the learning rates and the kernel parameter
learnt) and the Trained TF (one attention layer, one head, every weight learnt) on the same fresh
XOR-quadrant tasks: probability MSE on held-out tasks, their agreement, MSE over training (Fig. 3) and
probability maps on the 100 x 100 grid (Fig. 2, 6-9): `categorical-gd-vs-tf`."""

from __future__ import annotations

from typing import Any

import torch

from icgd.core.episodes import make_generator
from icgd.core.metrics import alignment
from icgd.experiments.common import (
    Size,
    curves,
    median,
    seed_learners,
    size,
)
from icgd.experiments.registry import DocTable, ExperimentContext, register
from icgd.nn.kernels import get_kernel
from icgd.results.figures import band, grid, label_axes, legend_below, subplots
from icgd.sources.categorical.keys import (
    GD_MSE,
    PRED_DIFF,
    PRED_DIFF_SEEDS,
    PRED_DIFF_UNTRAINED,
    PRIOR_MSE,
    SENS_COS,
    SENS_COS_SEEDS,
    SENS_COS_UNTRAINED,
    TF_DIVERGED,
    TF_MSE,
    TF_OVER_GD,
)
from icgd.sources.categorical.shared import (
    MSE_LABEL,
    SOURCE,
    TF_STEPS,
    cat_config,
    declared,
    gd_config,
    held_out,
    prior_learner,
    score,
    task,
    tf_model,
    train,
    train_or_diverge,
    untrained_learners,
)
from icgd.tasks.categorical import (
    complete_probabilities,
    true_probabilities,
)
from icgd.train.config import TrainConfig

MAP_SEED = 20_250_201

#: the kernels of the source's figures (their probability maps are drawn)
FIGURE_KERNELS = ("softmax", "rbf", "linear", "exponential", "laplacian")

#: the nine kernels of the source (chi-squared in its |x| + |y| form, `icgd.nn.kernels`); every mode
#: trains all of them, for the agreement claim of each
ALL_KERNELS = ("softmax", "rbf", "linear", "exponential", "laplacian", "sigmoid", "polynomial", "cosine",
               "chi_squared")

#: head counts of the agreement study: 1 (the kernel head) and 2 (kernel + constant head, eq. 1's bias; only
#: for kernels with a constant head: the source leaves linear and cosine out of it, its appendix). Quick mode
#: trains 1 head only, to stay within its 15 minutes on 2 cores (the 2-head models add about 3 minutes)
AGREE_HEADS = Size(quick=1, full=2, smoke=2)

ALIGN_TASKS = Size(quick=512, full=1024, smoke=16)


def _configs(ctx: ExperimentContext) -> dict[tuple[str, int, str], TrainConfig]:
    """{(kernel, heads, "gd" or "tf"): the GD model and the Trained TF of each kernel and head count}; the
    linear GD model, which every TF's cosine is also measured against, is ("linear", 1, "gd")."""
    out: dict[tuple[str, int, str], TrainConfig] = {}
    for kernel in ALL_KERNELS:
        for heads in range(1, size(ctx, AGREE_HEADS) + 1):
            if heads > 1 and not get_kernel(kernel).constant_head:
                continue
            suffix = "" if heads == 1 else f"-h{heads}"
            out[kernel, heads, "gd"] = gd_config(ctx, kernel, constant_head=heads > 1)
            out[kernel, heads, "tf"] = cat_config(ctx, f"cat-tf-{kernel}{suffix}", tf_model(kernel, heads=heads),
                                                  TF_STEPS)
    return out


# --------------------------------------------------------------------------------------- GD vs TF
@register("categorical-gd-vs-tf", "GD model vs Trained TF for each of the nine kernels, 1 head (full: and 2): MSE, "
          "prediction difference, sensitivity cosine (trained and untrained TF), curves, maps (Fig. 2, 3, 6-9)",
          SOURCE, quick_minutes=6, full_minutes=60, models=lambda ctx: declared(_configs(ctx).values()),
          doc_tables=(DocTable(
              "gd_vs_tf", "Agreement per kernel and number of heads, template XOR-like: held-out MSE of the GD "
              "model and of the Trained TF (median seed), their prediction difference and sensitivity cosine "
              "(median seed, then each seed), the same two for the untrained TF, and the Trained TF's cosine "
              "to the linear kernel's GD model", ("kernel", "heads", "gd_mse", "tf_mse_median",
              "prediction_difference", "sensitivity_cosine", "sensitivity_cosine_seeds",
              "untrained_prediction_difference", "untrained_sensitivity_cosine", "tf_cosine_to_linear_gd",
              "prior_mse")),))
def gd_vs_tf(ctx: ExperimentContext) -> None:
    configs = _configs(ctx)
    ep = held_out(ctx)
    n_align = size(ctx, ALIGN_TASKS)
    prior = ctx.result(PRIOR_MSE, score(prior_learner(ep.dy), ep))
    rows, fitted = [], {}
    fig, (ax,) = subplots(1, width=6.0, height=4.0)
    linear_gd = seed_learners(train(ctx, configs["linear", 1, "gd"]))[0]
    for i, kernel in enumerate(ALL_KERNELS):
        for heads in range(1, size(ctx, AGREE_HEADS) + 1):
            if (kernel, heads, "tf") not in configs:
                continue
            suffix = "" if heads == 1 else f"-h{heads}"
            keys = {k: k.format(kernel=kernel + suffix.replace("-", "_")) for k in
                    (GD_MSE, TF_MSE, TF_OVER_GD, TF_DIVERGED, SENS_COS, SENS_COS_SEEDS, PRED_DIFF, PRED_DIFF_SEEDS,
                     SENS_COS_UNTRAINED, PRED_DIFF_UNTRAINED)}
            gd_res = train(ctx, configs[kernel, heads, "gd"])
            gd = seed_learners(gd_res)[0]
            gd_mse = ctx.result(keys[GD_MSE], score(gd, ep))
            tf_cfg = configs[kernel, heads, "tf"]
            tf_res, diverged_at = train_or_diverge(ctx, tf_cfg)
            row = {"kernel": kernel, "heads": heads, "template": task().templates, "gd_mse": gd_mse,
                   "prior_mse": prior, "gd_eta": gd.etas.detach().tolist(),
                   "gd_kernel_params": gd.kernel_params.detach().reshape(-1).tolist()}
            untrained = [alignment(tf, gd, ep[:n_align]) for tf in untrained_learners(tf_cfg)]
            row |= {"untrained_prediction_difference": ctx.result(
                        keys[PRED_DIFF_UNTRAINED], median([a["prediction_difference"].mean for a in untrained])),
                    "untrained_sensitivity_cosine": ctx.result(
                        keys[SENS_COS_UNTRAINED], median([a["sensitivity_cosine"].mean for a in untrained]))}
            if tf_res is None:
                ctx.result(keys[TF_DIVERGED], len(ctx.seeds))
                for key in (TF_MSE, TF_OVER_GD, SENS_COS, PRED_DIFF):
                    ctx.result(keys[key], float("nan"))
                rows.append(row | {"tf_diverged_at_step": diverged_at})
                ctx.note(f"{kernel}, {heads} head(s): the Trained TF diverged at step {diverged_at} (non-finite loss)")
                continue
            ctx.result(keys[TF_DIVERGED], 0)
            tfs = seed_learners(tf_res)
            tf_mse = [score(tf, ep) for tf in tfs]
            al = [alignment(tf, gd, ep[:n_align]) for tf in tfs]
            ctx.result(keys[TF_MSE], median(tf_mse))
            ctx.result(keys[TF_OVER_GD], median([m / gd_mse for m in tf_mse]))
            diffs = ctx.result(keys[PRED_DIFF_SEEDS], [a["prediction_difference"].mean for a in al])
            coss = ctx.result(keys[SENS_COS_SEEDS], [a["sensitivity_cosine"].mean for a in al])
            diff, cos = ctx.result(keys[PRED_DIFF], median(diffs)), ctx.result(keys[SENS_COS], median(coss))
            # which function a TF that does not agree computes instead: its cosine to the linear kernel's GD model
            to_linear = median([alignment(tf, linear_gd, ep[:n_align])["sensitivity_cosine"].mean for tf in tfs])
            rows.append(row | {"tf_cosine_to_linear_gd": to_linear, "tf_mse_median": median(tf_mse), "tf_mse_seeds": tf_mse,
                               "tf_over_gd": median(tf_mse) / gd_mse, "prediction_difference": diff,
                               "prediction_difference_seeds": diffs, "sensitivity_cosine": cos,
                               "sensitivity_cosine_seeds": coss})
            ctx.report(f"{kernel}, {heads} head(s): GD and Trained TF agree",
                       f"MSE GD {gd_mse:.4f}, TF {median(tf_mse):.4f} (prior {prior:.4f}); prediction difference "
                       f"{diff:.3f}, sensitivity cosine {cos:.3f} (untrained TF {row['untrained_sensitivity_cosine']:.3f})")
            if heads == 1:
                steps, ys = curves(tf_res, "eval_loss")
                color = f"C{i}"
                # a seed stuck on a plateau shows as itself; the title says what the lines are, the legend the kernels
                band(ax, steps, ys, kernel, color, per_seed=True, note=False)
                ax.axhline(gd_mse, color=color, ls="--", lw=1)
                if kernel in FIGURE_KERNELS:
                    fitted[kernel] = (gd, tfs[0])
    ax.axhline(prior, color="grey", ls=":", lw=1, label="prior 1/C")
    ax.set_yscale("log")
    label_axes([ax], [f"Trained TF (solid: median of {len(ctx.seeds)} seeds; thin: each seed)\nvs GD model (dashed), "
                      "1 layer, 1 head"], [MSE_LABEL], legend=False)
    legend_below(ax, ncol=5)  # nine kernels: the legend would cover the curves
    ctx.figure("training", fig)
    ctx.table("gd_vs_tf", rows)
    ctx.note("Template of every model here: the XOR quadrant templates (`templates: xor`). Untrained TF: the "
             "same seeds' initial weights, the calibration that the agreement bar fails a model that learnt nothing.")
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
                im = ax.imshow(p[:, :, cat].T.clamp(0, 1).numpy(), origin="lower", extent=(-1, 1, -1, 1), vmin=0,
                               vmax=1, cmap="viridis")
                for k in range(c):
                    pts = ep.context_x[0][labels[0] == k]
                    ax.scatter(pts[:, 0], pts[:, 1], s=14, marker="osD^v"[k % 5],
                               c="white" if k == cat else "black", edgecolors="black", linewidths=0.5)
                ax.set_title(f"{name}: p(category {cat})", fontsize=8)
                ax.set_xticks([])
                ax.set_yticks([])
        fig.colorbar(im, ax=axes, shrink=0.5, label="probability")
        fig.suptitle(f"{kernel} attention, one layer, one head (probabilities clamped to [0, 1] for display)",
                     fontsize=9)
        ctx.figure(f"maps_{kernel}", fig)
