"""One trained LSA layer against one step of GD (Fig. 2 left, Fig. 9) and the interpolation from the GD
construction to the rescaled trained weights (A.3): `oswald-1layer`, `oswald-interpolation`."""

from __future__ import annotations

from typing import Any

import numpy as np

from icgd.analysis.readoff import (
    gd_products,
    interpolated,
    products,
    rescaled,
    stack_from_products,
)
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
    weights_over_training,
)
from icgd.experiments.linear_setup import one_layer_model, one_layer_run
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.transformer import TransformerLearner
from icgd.learners.tuning import tune_gd
from icgd.results.figures import COLORS, COLORS_2, band, heatmap, label_axes, legend_below, subplots
from icgd.sources.oswald.keys import (
    COSINE_MIN,
    GAP_MAX,
    INTERPOLATED_FINAL_GAP,
    INTERPOLATION_MAX_INCREASE,
    KQ_ERROR_MEDIAN,
)
from icgd.sources.oswald.shared import LINEAR_DEVIATIONS
from icgd.train.config import TrainConfig


# ---------------------------------------------------------------------------- one layer vs one step
def _one_layer_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    return one_layer_model(ctx, 1.0) | one_layer_model(ctx, 0.5)


def matrix_relative_error(trained: Any, construction: Any) -> float:
    """||trained - construction||_F / ||construction||_F over the whole matrix (claim 1layer-pv-weights)."""
    return float((trained - construction).norm() / construction.norm())


@register("oswald-1layer", "one trained LSA layer vs one step of GD: curves, alignment, weights (Fig. 2, 9)",
          "source 000, sec. 3, Fig. 2 left, Fig. 9", quick_minutes=1.0, full_minutes=3.0, models=_one_layer_models,
          deviations=LINEAR_DEVIATIONS)
def one_layer(ctx: ExperimentContext) -> None:
    fig, axes = subplots(4)
    rows = []
    for a, style, colors in ((1.0, "-", COLORS), (0.5, "--", COLORS_2)):
        res = one_layer_run(ctx, a)
        task = res.config.task
        ev = eval_tasks(ctx, task)
        gd = tune_gd(tune_tasks(ctx, task), 1)
        gd_loss = evaluate(gd, ev).mean
        tag = f"a{a:g}"
        gaps, coss, pds, kq_errs, pv_errs, l2s, pv_errs_matrix = [], [], [], [], [], [], []
        al_ev = ev[:size(ctx, ALIGN_TASKS)]
        # GD's sensitivity d y_GD / d x_q = (eta / N) X^T y: the scale against which the L2 distance is read
        gd_sens = float(((gd.etas[0] / task.n_context) * (al_ev.context_x.transpose(1, 2) @ al_ev.context_y))
                        .norm(dim=(1, 2)).mean())
        for s, learner, loss in zip(res.config.seeds, seed_learners(res), seed_losses(res, ev)):
            al = alignment(learner, gd, al_ev)
            l2s.append(al["sensitivity_l2"].mean)
            kq, pv = products(learner.model)
            kq_r, pv_r, beta = rescaled(kq, pv, task.dx)
            kq_gd, pv_gd = gd_products(task.dx, task.dy, gd.etas[0], task.n_context)
            kq_err = float((kq_r - kq_gd).norm() / kq_gd.norm())
            pv_err = float((pv_r[task.dx:] - pv_gd[task.dx:]).norm() / pv_gd[task.dx:].norm())
            pv_errs_matrix.append(matrix_relative_error(pv_r, pv_gd))
            gaps.append(loss / gd_loss - 1)
            coss.append(al["sensitivity_cosine"].mean)
            pds.append(al["prediction_difference"].mean)
            kq_errs.append(kq_err)
            pv_errs.append(pv_err)
            rows.append({"input_range": a, "seed": s, "tf_loss": loss, "gd_loss": gd_loss, "gd_eta": gd.etas[0],
                         "relative_gap": loss / gd_loss - 1, "prediction_difference": pds[-1],
                         "sensitivity_cosine": coss[-1], "sensitivity_l2": al["sensitivity_l2"].mean,
                         "beta": beta, "kq_relative_error": kq_err, "pv_y_relative_error": pv_err,
                         "pv_relative_error": pv_errs_matrix[-1]})
        ctx.result(GAP_MAX.format(tag=tag), max(gaps))
        ctx.result(f"{tag}.relative_gap_median", median(gaps))
        ctx.result(COSINE_MIN.format(tag=tag), min(coss))
        ctx.result(f"{tag}.prediction_difference_max", max(pds))
        ctx.result(KQ_ERROR_MEDIAN.format(tag=tag), median(kq_errs))
        ctx.result(f"{tag}.pv_relative_error_median", median(pv_errs))  # the y row only
        ctx.result(f"{tag}.pv_matrix_relative_error_median", median(pv_errs_matrix))
        ctx.result(f"{tag}.sensitivity_l2_max_over_gd_norm", max(l2s) / gd_sens)
        ctx.result(f"{tag}.gd_loss", gd_loss)
        ctx.result(f"{tag}.gd_eta", gd.etas[0])
        ctx.report(f"x ~ U(-{a:g}, {a:g}): trained LSA loss equals one tuned GD step (Fig. 2)",
                   f"GD {gd_loss:.4f} (eta {gd.etas[0]:.3f}); TF relative gap per seed "
                   + ", ".join(f"{g:+.2%}" for g in gaps))
        ctx.report("sensitivity cosine near 1, prediction difference near 0 (Fig. 2)",
                   f"cosine {min(coss):.4f} to {max(coss):.4f}; prediction difference {min(pds):.4f} to {max(pds):.4f}")
        ctx.report("rescaled trained W_K^T W_Q and P W_V match the construction (Fig. 9)",
                   f"relative error (median over seeds) W_KQ {median(kq_errs):.3f}, y-row of W_PV {median(pv_errs):.3f}")
        steps, tf = curves(res, "eval_loss")
        band(axes[0], steps, tf, f"TF, a={a:g}", colors["tf"], linestyle=style)
        _, ref = curves(res, "reference_loss")  # GD on the same held-out tasks as the curve
        axes[0].plot(steps, ref[0], color=colors["gd"], linestyle=style, label=f"GD, a={a:g}")
        _interpolated_curve(ctx, res, gd, tag, axes[0], style, colors["interp"])
        for ax, key in zip(axes[1:], ("prediction_difference", "sensitivity_cosine", "sensitivity_l2")):
            steps, ys = curves(res, key)
            band(ax, steps, ys, f"TF, a={a:g}", colors["tf"], linestyle=style)
        if a == 1.0:
            learner = seed_learners(res)[0]
            kq, pv = products(learner.model)
            kq_r, pv_r, _ = rescaled(kq, pv, task.dx)
            kq_gd, pv_gd = gd_products(task.dx, task.dy, gd.etas[0], task.n_context)
            wfig, wax = subplots(4, width=3.0, height=2.8)
            vmax = float(max(kq_r.abs().max(), kq_gd.abs().max()))
            heatmap(wax[0], kq_r.numpy(), "trained W_K^T W_Q / beta", vmax)
            heatmap(wax[1], kq_gd.numpy(), "GD construction W_K^T W_Q", vmax)
            vmax = float(max(pv_r.abs().max(), pv_gd.abs().max()))
            heatmap(wax[2], pv_r.numpy(), "trained P W_V * beta", vmax)
            heatmap(wax[3], pv_gd.numpy(), "GD construction P W_V", vmax)
            wfig.suptitle(f"seed {res.config.seeds[0]}, x ~ U(-1, 1): trained products beside Prop. 1")
            ctx.figure("weights", wfig)
    label_axes(axes, ("loss", "prediction difference", "sensitivity cosine", "sensitivity L2"),
               ("0.5 squared error", "||y_TF - y_GD||", "cosine", "L2 distance"), legend="figure")
    axes[0].set_yscale("log")
    fig.suptitle("one trained LSA layer vs one GD step (held-out tasks)")
    ctx.figure("training", fig)
    ctx.table("per_seed", rows)


def _interpolated_curve(ctx: ExperimentContext, res: Any, gd: Any, tag: str, ax: Any, style: str,
                        color: str = COLORS["interp"]) -> None:
    """Fig. 2 left's third curve: the interpolated model (`interpolated`: the midpoint of the GD construction
    and the rescaled trained layer) at every evaluation, on the training curve's held-out tasks, as the
    authors' training loop computes it every 100 steps (constructed_token_setup.ipynb, raw lines 613-615).
    Result INTERPOLATED_FINAL_GAP: the largest |interpolated / GD - 1| over seeds at the last evaluation."""
    task = res.config.task
    history = weights_over_training(res)
    if not history:  # a run cached before it kept its weights
        return
    kq_gd, pv_gd = gd_products(task.dx, task.dy, gd.etas[0], task.n_context)
    cev = curve_tasks(res)
    gd_loss = evaluate(gd, cev).mean
    steps = [step for step, _ in history]
    ys = np.array([[evaluate(interpolated(lr.model, kq_gd, pv_gd, task.dx), cev).mean for lr in learners]
                   for _, learners in history]).T  # seeds x steps
    finals = ys[:, -1]
    ctx.result(INTERPOLATED_FINAL_GAP.format(tag=tag), float(np.max(np.abs(finals / gd_loss - 1))))
    ctx.result(f"{tag}.interpolated_curve", {"steps": steps, "median": np.median(ys, 0).tolist()})
    ctx.report(f"{tag}: the interpolated model's loss over training ends at GD's (Fig. 2 left)",
               f"final interpolated loss per seed {', '.join(f'{x:.4f}' for x in finals)} against GD {gd_loss:.4f}")
    shown = np.where(np.isfinite(ys), ys, np.nan)
    ax.plot(steps, np.nanmedian(shown, 0), color=color, linestyle=style,
            label=f"interpolated, a={tag[1:]} (median seed)")


# ----------------------------------------------------------------------------------- interpolation
@register("oswald-interpolation", "loss along the line from the GD construction to the rescaled trained "
          "weights (A.3)", "source 000, A.3, Fig. 2", quick_minutes=0.3, full_minutes=0.5,
          models=one_layer_model, deviations=LINEAR_DEVIATIONS + (
              "the path is walked at 11 points; the code evaluates its midpoint only (constructed_token_setup.ipynb "
              "lines 481-533). Reason: a superset of the code's measure.",))
def interpolation(ctx: ExperimentContext) -> None:
    res = one_layer_run(ctx)
    task = res.config.task
    ev = eval_tasks(ctx, task)
    gd = tune_gd(tune_tasks(ctx, task), 1)
    gd_loss = evaluate(gd, ev).mean
    kq_gd, pv_gd = gd_products(task.dx, task.dy, gd.etas[0], task.n_context)
    alphas = np.linspace(0, 1, 11)
    curves, rows = [], []
    for s, learner in zip(res.config.seeds, seed_learners(res)):
        kq_r, pv_r, _ = rescaled(*products(learner.model), task.dx)
        losses = []
        for al in alphas:
            st = stack_from_products((1 - al) * kq_gd + al * kq_r, (1 - al) * pv_gd + al * pv_r)
            losses.append(evaluate(TransformerLearner(st), ev).mean)
            rows.append({"seed": s, "alpha": float(al), "loss": losses[-1], "gd_loss": gd_loss})
        curves.append(losses)
    worst = max(max(c) for c in curves) / gd_loss - 1
    ctx.result(INTERPOLATION_MAX_INCREASE, worst)
    ctx.result("gd_loss", gd_loss)
    ctx.report("interpolating between the construction and the rescaled trained weights keeps the loss at "
               "GD's (A.3)", f"largest loss along the path {worst:+.3%} relative to GD ({gd_loss:.4f})")
    fig, (ax,) = subplots(1)
    band(ax, alphas, curves, "interpolated LSA", COLORS["interp"], marker="o", markersize=3)
    ax.axhline(gd_loss, color=COLORS["gd"], linestyle="--", label="GD (alpha = 0 is its construction)")
    ax.set_xlabel("alpha (0 = GD construction, 1 = rescaled trained)")
    ax.set_ylabel("loss on held-out tasks")
    legend_below(ax)
    ax.set_title("interpolation, x ~ U(-1, 1)")
    ctx.figure("interpolation", fig)
    ctx.table("interpolation", rows)
