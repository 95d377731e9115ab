"""The linear-regression study of von Oswald et al. 2023 (source 000, SPEC 1), one function per figure.

Unless an experiment says otherwise: Dx = N = 10, Dy = 1, x ~ U(-1, 1) (the paper's text; `oswald-1layer`
also trains with the official code's U(-0.5, 0.5)), batch 2048 of fresh tasks, Adam, and evaluation on
held-out tasks that are the same for every learner.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from icgd.analysis.readoff import (
    divergence_cap,
    gamma_of,
    gd_products,
    gd_repeat_losses,
    gdpp_products,
    products,
    rescaled,
    stack_from_products,
    tf_repeat_losses,
    with_layer_products,
)
from icgd.core.episodes import Episodes
from icgd.core.metrics import alignment, evaluate
from icgd.experiments.common import (
    ALIGN_TASKS,
    EVAL_SEED,
    Size,
    curve_tasks,
    curves,
    eval_tasks,
    median,
    one_layer_model,
    one_layer_run,
    seed_learners,
    seed_losses,
    seed_prediction_differences,
    size,
    train_config,
    tune_tasks,
)
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.explicit import ZeroPredictor
from icgd.learners.transformer import TransformerLearner
from icgd.learners.tuning import tune_gd, tune_gdpp
from icgd.nn.attention import attention_products
from icgd.results.figures import COLORS, band, heatmap, label_axes, subplots
from icgd.train.config import TrainConfig
from icgd.train.engine import TrainResult

# ---- result keys the claims read (icgd.claims.oswald); {tag}, {name} etc. are filled by `.format`
GAP_MAX = "{tag}.relative_gap_max"  # oswald-1layer, tag a1 or a0.5
COSINE_MIN = "{tag}.sensitivity_cosine_min"
KQ_ERROR_MEDIAN = "{tag}.kq_relative_error_median"
INTERPOLATION_MAX_INCREASE = "max_relative_increase"  # oswald-interpolation
OOD_MAX_DEVIATION = "max_relative_deviation_alpha_le_1_5"  # oswald-ood
REPEAT_RATIO_WORST = "{key}.tf_final_over_first_worst_seed"  # oswald-repeat, key lambda_0_7 etc.
REPEAT_SWEEP_GAP = "sweep.y_only.max_relative_tf_gd_gap"
REPEAT_SWEEP_LOWERING = "sweep.y_only.fraction_of_lambdas_lowering"
REPEAT_Y_RATIO_MEDIAN = "{key}.y_only.tf_final_over_first_median"  # the official code's y-only roll-out
OOD_INTERP_MAX_DEVIATION = "max_relative_deviation_interpolated_alpha_le_1_5"
OOD_GD_DEGRADES = "gd_over_zero_input_scale_2_over_1"
DEEP_MEDIAN = "{tag}.{measure}_median"  # oswald-deep, tag rec2 or five; measure tf_loss, pd_gd, pd_gdpp, ...
DEEP_GD_LOSS = "{tag}.gd_loss"
DEEP_OOD = "{tag}.ood_max_relative_deviation_vs_gdpp_alpha_le_1_5"  # A2_FAMILIES, median seed
DEEP_OOD_ALL = "{tag}.ood_max_relative_deviation_vs_gdpp_alpha_le_1_5_all_families"
REC2_INTERPOLATION = "rec2.interpolation_to_gdpp_max_increase_median"
REC2_INTERPOLATION_WORST = "rec2.interpolation_to_gdpp_max_increase_worst_seed"
FIVE_INTERPOLATION = "five.interpolation_to_gdpp_max_increase_median"
GAMMA_DERIVED_OVER_TF = "gamma_derived_over_gamma_tf"  # oswald-curvature
EIGEN_CUT = 0.1
GROKKING_SEEDS = "grokking.seeds"  # oswald-fixed-data
LN_OOD = "layernorm.ood_loss_over_lsa_at_alpha_2_max"  # oswald-softmax
#: the out-of-distribution families of A.2's statement about deep models ("1) the input data range or
#: 2) the teacher"; its other laws are normalised in the official code, ours are not)
A2_FAMILIES = ("input scale (uniform)", "teacher scale")
DEPTH_MAX_TF_OVER_GD = "max_tf_over_gd_depths_2_4"  # oswald-depth
DEPTH_MAX_PD_RATIO = "max_pd_gdpp_over_pd_gd"
DEPTH_OOD_MAX = "ood_max_relative_deviation_vs_gdpp_alpha_le_1_5"
KAPPA_RATIO = "median_kappa_ratio_at_gamma_tf"  # oswald-curvature
GAMMA_TIMES_LAMBDA_MAX = "gamma_tf_times_lambda_max_p99"
SOFTMAX_LOSS_OVER_GD = "{variant}.loss_over_gd_median"  # oswald-softmax: softmax1, softmax2, layernorm
SOFTMAX_HEADS_CANCEL = "softmax2.offdiagonal_sum_over_heads_median"
SOFTMAX_LR_SPREAD = "softmax1.loss_over_gd_max_over_min_across_lr"
SOFTMAX_BEST_LR = "softmax1.loss_over_gd_best_lr"
LN_HEADS_CHANGE = "layernorm.two_heads_relative_change"
SLOWEST_TRANSITION = "h{heads}.slowest_transition"  # oswald-phase
TRANSITION_SPREAD = "h{heads}.slowest_over_fastest_transition"
FIXED_LOSS_OVER_GD = "size_{size}.loss_over_gd_median"  # oswald-fixed-data
FIXED_MIN_COSINE = "min_cosine_median_size_ge_512"

#: held-out tasks of each out-of-distribution point
OOD_TASKS = Size(quick=2048, full=10_000)
#: held-out tasks of the curvature study (eigenvalues only: cheap)
CURVATURE_TASKS = Size(quick=10_000, full=10_000)


# ---------------------------------------------------------------------------- one layer vs one step
def _one_layer_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    return one_layer_model(ctx, 1.0) | one_layer_model(ctx, 0.5)


@register("oswald-1layer", "one trained LSA layer vs one step of GD: curves, alignment, weights (Fig. 2, 9)",
          "source 000, sec. 3, Fig. 2 left, Fig. 9", quick_minutes=1.0, full_minutes=3.0, models=_one_layer_models)
def one_layer(ctx: ExperimentContext) -> None:
    fig, axes = subplots(4)
    rows = []
    for a, style in ((1.0, "-"), (0.5, "--")):
        res = one_layer_run(ctx, a)
        task = res.config.task
        ev = eval_tasks(ctx, task)
        gd = tune_gd(tune_tasks(ctx, task), 1)
        gd_loss = evaluate(gd, ev).mean
        tag = f"a{a:g}"
        gaps, coss, pds, kq_errs, pv_errs, l2s = [], [], [], [], [], []
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
            gaps.append(loss / gd_loss - 1)
            coss.append(al["sensitivity_cosine"].mean)
            pds.append(al["prediction_difference"].mean)
            kq_errs.append(kq_err)
            pv_errs.append(pv_err)
            rows.append({"input_range": a, "seed": s, "tf_loss": loss, "gd_loss": gd_loss, "gd_eta": gd.etas[0],
                         "relative_gap": loss / gd_loss - 1, "prediction_difference": pds[-1],
                         "sensitivity_cosine": coss[-1], "sensitivity_l2": al["sensitivity_l2"].mean,
                         "beta": beta, "kq_relative_error": kq_err, "pv_y_relative_error": pv_err})
        ctx.result(GAP_MAX.format(tag=tag), max(gaps))
        ctx.result(f"{tag}.relative_gap_median", median(gaps))
        ctx.result(COSINE_MIN.format(tag=tag), min(coss))
        ctx.result(f"{tag}.prediction_difference_max", max(pds))
        ctx.result(KQ_ERROR_MEDIAN.format(tag=tag), median(kq_errs))
        ctx.result(f"{tag}.pv_relative_error_median", median(pv_errs))
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
        band(axes[0], steps, tf, f"TF, a={a:g}", COLORS["tf"], linestyle=style)
        _, ref = curves(res, "reference_loss")  # GD on the same held-out tasks as the curve
        axes[0].plot(steps, ref[0], color=COLORS["gd"], linestyle=style, label=f"GD, a={a:g}")
        for ax, key in zip(axes[1:], ("prediction_difference", "sensitivity_cosine", "sensitivity_l2")):
            steps, ys = curves(res, key)
            band(ax, steps, ys, f"a={a:g}", COLORS["tf"], linestyle=style)
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
               ("0.5 squared error", "||y_TF - y_GD||", "cosine", "L2 distance"))
    axes[0].set_yscale("log")
    fig.suptitle("one trained LSA layer vs one GD step (held-out tasks)")
    ctx.figure("training", fig)
    ctx.table("per_seed", rows)


# ----------------------------------------------------------------------------------- interpolation
@register("oswald-interpolation", "loss along the line from the GD construction to the rescaled trained "
          "weights (A.3)", "source 000, A.3, Fig. 2", quick_minutes=0.3, full_minutes=0.5,
          models=one_layer_model)
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
    ax.legend(fontsize=7)
    ax.set_title("interpolation, x ~ U(-1, 1)")
    ctx.figure("interpolation", fig)
    ctx.table("interpolation", rows)


# ---------------------------------------------------------------------------------------------- OOD
OOD_FAMILIES = {
    "input scale (uniform)": lambda t, a: t.model_copy(update={"input_scale": a}),
    "teacher scale": lambda t, a: t.model_copy(update={"teacher_scale": a}),
    "normal inputs": lambda t, a: t.model_copy(update={"input_law": "normal", "input_scale": a}),
    "exponential inputs": lambda t, a: t.model_copy(update={"input_law": "exponential", "input_scale": a}),
    "laplace inputs": lambda t, a: t.model_copy(update={"input_law": "laplace", "input_scale": a}),
}
OOD_ALPHAS = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]


@register("oswald-ood", "TF, GD and the interpolated model on out-of-distribution tasks (Fig. 2 right, Fig. 6)",
          "source 000, sec. 3, Fig. 2, A.4 Fig. 6", quick_minutes=0.5, full_minutes=1.5,
          models=one_layer_model)
def ood(ctx: ExperimentContext) -> None:
    res = one_layer_run(ctx)
    task = res.config.task
    gd = tune_gd(tune_tasks(ctx, task), 1)
    kq_gd, pv_gd = gd_products(task.dx, task.dy, gd.etas[0], task.n_context)
    learners = seed_learners(res)
    interp = []
    for learner in learners:
        kq_r, pv_r, _ = rescaled(*products(learner.model), task.dx)
        interp.append(TransformerLearner(stack_from_products((kq_gd + kq_r) / 2, (pv_gd + pv_r) / 2)))
    fig, axes = subplots(len(OOD_FAMILIES), width=3.2)
    rows, devs, interp_devs, gd_over_zero = [], [], [], {}
    for ax, (fam, make) in zip(axes, OOD_FAMILIES.items()):
        tf_l, in_l, gd_l = [], [], []
        for i, a in enumerate(OOD_ALPHAS):
            ev = eval_tasks(ctx, make(task, a), EVAL_SEED + i, OOD_TASKS)
            g = evaluate(gd, ev).mean
            t = seed_losses(res, ev)
            m = [evaluate(lr, ev).mean for lr in interp]
            gd_l.append(g)
            tf_l.append(t)
            in_l.append(m)
            zero = evaluate(ZeroPredictor(), ev).mean
            rows.append({"family": fam, "alpha": a, "gd_loss": g, "tf_loss_mean": float(np.mean(t)),
                         "interpolated_loss_mean": float(np.mean(m)), "zero_loss": zero})
            if fam == "input scale (uniform)":
                gd_over_zero[a] = g / zero
            if a <= 1.5:
                devs.append(abs(float(np.mean(t)) / g - 1))
                interp_devs.append(abs(float(np.mean(m)) / g - 1))
        band(ax, OOD_ALPHAS, np.array(tf_l).T, "TF", COLORS["tf"])
        band(ax, OOD_ALPHAS, np.array(in_l).T, "interpolated", COLORS["interp"], linestyle=":")
        ax.plot(OOD_ALPHAS, gd_l, color=COLORS["gd"], linestyle="--", label="GD")
        ax.set_yscale("log")
        ax.set_xlabel("alpha")
        ax.set_ylabel("loss")
        ax.set_title(fam)
        ax.axvline(1.0, color="grey", linewidth=0.5)
    axes[0].legend(fontsize=7)
    fig.suptitle("trained on x ~ U(-1, 1), W ~ N(0, I); evaluated with inputs or teacher scaled by alpha")
    ctx.figure("ood", fig)
    ctx.table("ood", rows)
    ctx.result(OOD_MAX_DEVIATION, max(devs))
    ctx.result(OOD_INTERP_MAX_DEVIATION, max(interp_devs))
    ctx.result(OOD_GD_DEGRADES, gd_over_zero[2.0] / gd_over_zero[1.0])
    ctx.report("out of distribution the trained LSA performs equally to GD (Fig. 2, 6)",
               f"largest |TF/GD - 1| over the five families for alpha <= 1.5: {max(devs):.2%}; the interpolated "
               f"model: {max(interp_devs):.2%}")
    ctx.report("GD's own loss degrades quickly for larger inputs: its tuned eta is too large there (sec. 3)",
               f"GD loss / zero-predictor loss at input scale 2: {gd_over_zero[2.0]:.3g}, at 1: "
               f"{gd_over_zero[1.0]:.3g} (ratio {gd_over_zero[2.0] / gd_over_zero[1.0]:.3g})")


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
          models=one_layer_model)
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
    for lam, style in ((0.75, "-"), (1.0, ":")):
        bad = max(c[-1][2] for c in tf_by[lam])
        notes.append(f"lambda={lam:g}: {bad} diverged task(s) of {ev.batch_size} left out")
        band(axes[0], steps, [[x[1] for x in c] for c in tf_by[lam]], f"TF, lambda={lam:g}", COLORS["tf"],
             linestyle=style)
        axes[0].plot(steps, [x[1] for x in gd_by[lam]], color=COLORS["gd"], linestyle=style,
                     label=f"GD, eta*{lam:g}")
    band(axes[0], steps, [[x[1] for x in c] for c in y_only[0.75]], "TF, lambda=0.75, only y moves (official code)",
         COLORS["other"], linestyle="--")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("number of applications")
    axes[0].set_ylabel("loss (mean over tasks)")
    axes[0].set_title("repeated application\n(" + "; ".join(notes) + ")", fontsize=8)
    axes[0].legend(fontsize=6, loc="lower left")
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


# --------------------------------------------------------------------------------------- deep stacks
def _compare(ctx: ExperimentContext, res: TrainResult, steps: int, ev: Episodes, tag: str) -> dict[str, Any]:
    """TF vs GD and GD++ with `steps` steps; a recurrent model also vs GD++ with one (eta, gamma) shared by
    every step (the official code's GD++ for recurrent models; measures named *_gdpp_shared)."""
    tune = tune_tasks(ctx, res.config.task)
    gd, gdpp = tune_gd(tune, steps), tune_gdpp(tune, steps)
    refs = {"gd": gd, "gdpp": gdpp}
    if res.config.model.recurrent:
        refs["gdpp_shared"] = tune_gdpp(tune, steps, shared=True)
    losses = {k: evaluate(v, ev).mean for k, v in refs.items()}
    gd_loss, gdpp_loss = losses["gd"], losses["gdpp"]
    rows = []
    for s, lr, tf_loss in zip(res.config.seeds, seed_learners(res), seed_losses(res, ev)):
        row = {"model": tag, "seed": s, "tf_loss": tf_loss} | {f"{k}_loss": v for k, v in losses.items()}
        for k, ref in refs.items():
            al = alignment(lr, ref, ev[:size(ctx, ALIGN_TASKS)])
            row[f"pd_{k}"] = al["prediction_difference"].mean
            row[f"cos_{k}"] = al["sensitivity_cosine"].mean
        rows.append(row)
    for k in ["tf_loss"] + [f"{m}_{r}" for r in refs for m in ("pd", "cos")]:
        ctx.result(DEEP_MEDIAN.format(tag=tag, measure=k), median([r[k] for r in rows]))
    ctx.result(DEEP_GD_LOSS.format(tag=tag), gd_loss)
    ctx.result(f"{tag}.gdpp_loss", gdpp_loss)
    if "gdpp_shared" in refs:
        ctx.result(f"{tag}.gdpp_shared_loss", losses["gdpp_shared"])
        ctx.result(f"{tag}.gdpp_shared", refs["gdpp_shared"].describe())
    ctx.result(f"{tag}.zero_loss", evaluate(ZeroPredictor(), ev).mean)
    ctx.result(f"{tag}.gdpp", gdpp.describe())
    return {"rows": rows} | refs


def _recurrent2_model(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    return {"lsa2rec": train_config(ctx, "lsa2rec", {"n_layers": 2, "recurrent": True}, (4000, 10000),
                                    reference="gdpp")}


def _deep_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    return _recurrent2_model(ctx) | {"lsa5": train_config(ctx, "lsa5", {"n_layers": 5, "clip": 10.0}, (3000, 20000),
                                                          lr=5e-4, reference="gdpp")}


@register("oswald-deep", "recurrent 2-layer and 5-layer LSA vs GD and GD++ (Fig. 3, 7, 8)",
          "source 000, sec. 3 'Multiple steps', Fig. 3, A.10", quick_minutes=2.0, full_minutes=10.5,
          models=_deep_models)
def deep(ctx: ExperimentContext) -> None:
    models = _deep_models(ctx)
    rec = ctx.train("lsa2rec", models["lsa2rec"])
    five = ctx.train("lsa5", models["lsa5"])
    task = rec.config.task
    ev = eval_tasks(ctx, task)
    out_rec = _compare(ctx, rec, 2, ev, "rec2")
    out_five = _compare(ctx, five, 5, ev, "five")
    rows = out_rec["rows"] + out_five["rows"]
    r = ctx.results
    ctx.report("recurrent 2-layer TF outperforms 2 steps of GD and matches GD++ (Fig. 3)",
               f"median TF loss {r['rec2.tf_loss_median']:.4f}; GD 2 steps {r['rec2.gd_loss']:.4f}; GD++ "
               f"{r['rec2.gdpp_loss']:.4f}; prediction difference to GD {r['rec2.pd_gd_median']:.3f} vs to GD++ "
               f"{r['rec2.pd_gdpp_median']:.3f}; cosine {r['rec2.cos_gd_median']:.4f} vs {r['rec2.cos_gdpp_median']:.4f}"
               f"; GD++ with one eta and gamma for both steps (the official code's): loss {r['rec2.gdpp_shared_loss']:.4f}, "
               f"prediction difference {r['rec2.pd_gdpp_shared_median']:.3f}, cosine {r['rec2.cos_gdpp_shared_median']:.4f}")
    ctx.report("5-layer TF is matched by GD++ with per-layer eta and gamma (Fig. 3)",
               f"median TF loss {r['five.tf_loss_median']:.4f}; GD 5 steps {r['five.gd_loss']:.4f}; GD++ "
               f"{r['five.gdpp_loss']:.4f}; prediction difference to GD {r['five.pd_gd_median']:.3f} vs to GD++ "
               f"{r['five.pd_gdpp_median']:.3f}")
    fig, axes = subplots(3)
    for res, tag, color in ((rec, "recurrent 2-layer", COLORS["tf"]), (five, "5-layer", COLORS["other"])):
        steps, ys = curves(res, "eval_loss")
        band(axes[0], steps, ys, tag, color, per_seed=True)
        for ax, key in ((axes[1], "prediction_difference"), (axes[2], "sensitivity_cosine")):
            steps, ys = curves(res, key)
            band(ax, steps, ys, f"{tag} vs GD++", color, per_seed=True)
    on_curves = curve_tasks(rec)  # the same held-out tasks for both runs (same eval config)
    for learner, name, style in ((out_rec["gd"], "GD 2 steps", "--"), (out_rec["gdpp"], "GD++ 2 steps", ":"),
                                 (out_five["gdpp"], "GD++ 5 steps", "-.")):
        axes[0].axhline(evaluate(learner, on_curves).mean, color=COLORS["gd"] if "GD 2" in name else COLORS["gdpp"],
                        linestyle=style, label=name)
    axes[0].set_yscale("log")
    label_axes(axes, ("loss", "prediction difference to GD++", "sensitivity cosine with GD++"),
               ("loss", "||y_TF - y_GD++||", "cosine"))
    ctx.figure("deep", fig)
    ctx.table("deep", rows)
    _rec2_interpolation(ctx, rec, out_rec["gdpp_shared"], ev)
    _five_interpolation(ctx, five, out_five["gdpp"], ev)
    _deep_ood(ctx, task, {"rec2": (rec, out_rec["gdpp_shared"]), "five": (five, out_five["gdpp"])}, "deep_ood",
              "recurrent 2-layer (vs GD++ with one eta, gamma) and 5-layer (vs per-layer GD++) out of distribution")


def _rec2_interpolation(ctx: ExperimentContext, rec: TrainResult, gdpp: Any, ev: Episodes) -> None:
    """A.3 for the recurrent 2-layer model: the line from the GD++ construction with its one (eta, gamma)
    to the rescaled trained products; results: the largest loss on the path over the larger endpoint's,
    minus 1, median seed (REC2_INTERPOLATION) and worst seed (a seed still on its plateau has products
    that are not GD++'s, and its path can blow up)."""
    task = rec.config.task
    kq_pp, pv_pp = gdpp_products(task.dx, task.dy, gdpp.etas[0], gdpp.gammas[0], task.n_context)
    alphas = np.linspace(0, 1, 11)
    worst, rows = [], []
    for s, lr in zip(rec.config.seeds, seed_learners(rec)):
        kq_r, pv_r, _ = rescaled(*products(lr.model), task.dx)
        losses = [evaluate(TransformerLearner(stack_from_products((1 - a) * kq_pp + a * kq_r, (1 - a) * pv_pp + a * pv_r,
                                                                  n_layers=2, recurrent=True)), ev).mean for a in alphas]
        worst.append(max(losses) / max(losses[0], losses[-1]) - 1)
        rows += [{"seed": s, "alpha": float(a), "loss": x} for a, x in zip(alphas, losses)]
    ctx.result(REC2_INTERPOLATION, median(worst))
    ctx.result(REC2_INTERPOLATION_WORST, max(worst))
    ctx.table("rec2_interpolation", rows)
    ctx.report("the recurrent TF's weights interpolate to the GD++ construction with its gamma without a loss "
               "increase (A.3)", "largest loss on the path / larger endpoint - 1, per seed: "
               + ", ".join(f"{x:+.3%}" for x in worst))


def _five_interpolation(ctx: ExperimentContext, five: TrainResult, gdpp: Any, ev: Episodes) -> None:
    """A.3's naive correction for the 5 separate layers: each layer's products rescaled on their own and
    interpolated to the per-layer GD++ construction (its eta_k, gamma_k). The path is evaluated without the
    model's token clipping (a training stabiliser, A.12): the tuned etas reach the hundreds and clipped
    tokens would break the construction's endpoint (measured: loss 27.8 instead of GD++'s 0.064 in a quick
    run); the trained endpoint without clipping is reported beside it. Results: the largest loss on the
    path over the larger endpoint's, minus 1, per seed and its median (FIVE_INTERPOLATION)."""
    task = five.config.task
    cons = [gdpp_products(task.dx, task.dy, eta, gamma, task.n_context) for eta, gamma in zip(gdpp.etas, gdpp.gammas)]
    alphas = np.linspace(0, 1, 11)
    worst, rows = [], []
    for s, lr in zip(five.config.seeds, seed_learners(five)):
        trained = [rescaled(*products(lr.model, k), task.dx)[:2] for k in range(len(cons))]
        losses = []
        for a in alphas:
            layers = [((1 - a) * kc + a * kt, (1 - a) * pc + a * pt) for (kc, pc), (kt, pt) in zip(cons, trained)]
            path = with_layer_products(lr.model, layers)  # a copy of the model
            path.clip = None
            losses.append(evaluate(TransformerLearner(path), ev).mean)
        worst.append(max(losses) / max(losses[0], losses[-1]) - 1)
        rows += [{"seed": s, "alpha": float(a), "loss": x} for a, x in zip(alphas, losses)]
    ctx.result(FIVE_INTERPOLATION, median(worst))
    ctx.result("five.interpolation_to_gdpp_max_increase_per_seed", worst)
    ctx.table("five_interpolation", rows)
    ctx.report("for 5 separate layers the naive correction is 'not enough to interpolate without a loss "
               "increase' (sec. 3, A.3)", "largest loss on the path / larger endpoint - 1, per seed: "
               + ", ".join(f"{x:+.3%}" for x in worst))


def _deep_ood(ctx: ExperimentContext, task: Any, models: dict[str, tuple[TrainResult, Any]], name: str,
              title: str) -> dict[str, float]:
    """The deep models against their GD++ on the out-of-distribution families of `oswald-ood` (Fig. 6b, 6c,
    7; A.2): the median seed's loss (a deep model's seed may still be on its plateau) and the largest
    |TF / GD++ - 1| for alpha <= 1.5, over A.2's two families (result DEEP_OOD, also returned by model) and
    over all five (DEEP_OOD_ALL); figure and table `name`."""
    palette = [COLORS["tf"], COLORS["other"], COLORS["gdpp"], COLORS["interp"], COLORS["gd"], "#8c564b", "#e377c2"]
    fig, axes = subplots(len(OOD_FAMILIES), width=3.2)
    rows, devs, devs_all = [], {tag: [] for tag in models}, {tag: [] for tag in models}
    for ax, (fam, make) in zip(axes, OOD_FAMILIES.items()):
        curves_ = {tag: ([], []) for tag in models}
        for i, a in enumerate(OOD_ALPHAS):
            ev = eval_tasks(ctx, make(task, a), EVAL_SEED + i, OOD_TASKS)
            for tag, (_, ref) in models.items():
                g = evaluate(ref, ev).mean
                per_seed = seed_losses(models[tag][0], ev)
                t = median(per_seed)
                curves_[tag][0].append(t)
                curves_[tag][1].append(g)
                rows.append({"model": tag, "family": fam, "alpha": a, "tf_loss_median": t,
                             "tf_loss_mean": float(np.mean(per_seed)), "gdpp_loss": g})
                if a <= 1.5:
                    devs_all[tag].append(abs(t / g - 1))
                    if fam in A2_FAMILIES:
                        devs[tag].append(abs(t / g - 1))
        for (tag, (t, g)), color in zip(curves_.items(), palette):
            ax.plot(OOD_ALPHAS, t, color=color, marker="o", markersize=3, label=f"{tag} TF (median seed)")
            ax.plot(OOD_ALPHAS, g, color=color, linestyle="--", label=f"{tag}: its GD++")
        ax.set_yscale("log")
        tf_max = max((v for t, _ in curves_.values() for v in t if np.isfinite(v)), default=None)
        if tf_max is not None and tf_max > 0:
            ax.set_ylim(top=100 * tf_max)  # a diverging reference would flatten every other curve
        ax.set_xlabel("alpha")
        ax.set_title(fam)
        ax.axvline(1.0, color="grey", linewidth=0.5)
    axes[0].set_ylabel("loss (a diverging GD++ leaves the top)")
    axes[0].legend(fontsize=6)
    fig.suptitle(title)
    ctx.figure(name, fig)
    ctx.table(name, rows)
    for tag, d in devs.items():
        ctx.result(DEEP_OOD.format(tag=tag), max(d))
        ctx.result(DEEP_OOD_ALL.format(tag=tag), max(devs_all[tag]))
    ctx.report("deep TFs behave 'remarkably similar' to GD++ out of distribution, less so with depth (A.2, Fig. 6, 7)",
               "largest |TF/GD++ - 1| for alpha <= 1.5 (median seed), input and teacher scale: "
               + ", ".join(f"{t} {max(d):.3g}" for t, d in devs.items())
               + "; all five families: " + ", ".join(f"{t} {max(d):.3g}" for t, d in devs_all.items()))
    return {tag: max(d) for tag, d in devs.items()}


# ------------------------------------------------------------------------------------------ curvature
@register("oswald-curvature", "GD++ curvature correction: Hessian eigenvalues and condition numbers across "
          "gamma, with gamma read off trained recurrent models (Fig. 13)", "source 000, A.10, Fig. 13",
          quick_minutes=4.0, full_minutes=10.0, models=_recurrent2_model)
def curvature(ctx: ExperimentContext) -> None:
    rec = ctx.train("lsa2rec", _recurrent2_model(ctx)["lsa2rec"])
    task = rec.config.task
    ev = eval_tasks(ctx, task, n=CURVATURE_TASKS)
    lam = torch.linalg.eigvalsh(ev.context_x.transpose(1, 2) @ ev.context_x)  # (B, Dx), of X X^T
    lam = lam.clamp_min(1e-6)
    gammas = np.linspace(0.0, 0.2, 41)
    med = []
    for g in gammas:
        f = lam * (1 - g * lam) ** 2
        med.append(float((f.max(1).values / f.min(1).values.clamp_min(1e-12)).median()))
    tf_gammas = [gamma_of(lr.model, task.dx) for lr in seed_learners(rec)]
    g_tf = median(tf_gammas)
    f_tf = lam * (1 - g_tf * lam) ** 2
    kappa0 = lam.max(1).values / lam.min(1).values
    kappa_tf = f_tf.max(1).values / f_tf.min(1).values.clamp_min(1e-12)
    ctx.result("gamma_tf_per_seed", tf_gammas)
    ctx.result("gamma_tf_median", g_tf)
    ctx.result("gamma_best", float(gammas[int(np.argmin(med))]))
    ctx.result(KAPPA_RATIO, float(kappa_tf.median() / kappa0.median()))
    ctx.result("lambda_max_p99", float(torch.quantile(lam.max(1).values, 0.99)))
    ctx.result(GAMMA_TIMES_LAMBDA_MAX, g_tf * ctx.results["lambda_max_p99"])
    ctx.result("median_kappa_at_gamma_0_2_over_0", med[-1] / med[0])
    # A.10's derivation: from the smallest and largest eigenvalue over all tasks, kappa(gamma) = max f / min f
    # on [lo, hi], f(l) = l (1 - gamma l)^2; the source cuts the smallest eigenvalue at a value its text lost:
    # we cut at 0.1 (the argmin moves by sqrt(lo / hi), a few percent, for any cut well below hi)
    lo, hi = max(float(lam.min()), EIGEN_CUT), float(lam.max())
    span = torch.linspace(lo, hi, 2001, dtype=torch.float64)
    fine = np.linspace(0.0, 1.0 / hi, 2001)[:-1]
    maps = [span * (1 - g * span) ** 2 for g in fine]
    kappas = [float(f.max() / f.min()) for f in maps]
    g_derived = float(fine[int(np.argmin(kappas))])
    ctx.result("gamma_derived_from_extremes", g_derived)
    ctx.result(GAMMA_DERIVED_OVER_TF, g_derived / g_tf)
    ctx.report("trained recurrent TFs choose gamma > 0 that lowers the condition number of the transformed "
               "Hessian (Fig. 13)", f"gamma read off the trained models {', '.join(f'{g:.4f}' for g in tf_gammas)}"
               f"; median condition number at the median gamma / untransformed = "
               f"{ctx.results['median_kappa_ratio_at_gamma_tf']:.3f}; the gamma minimising it: "
               f"{ctx.results['gamma_best']:.3f}")
    ctx.report("the gamma derived from the extreme eigenvalues is 'slightly larger' than the trained models' (A.10)",
               f"derived {g_derived:.4f} (eigenvalues {lo:.3g} to {hi:.3g}) vs trained {g_tf:.4f}: ratio "
               f"{g_derived / g_tf:.3f}")
    fig, axes = subplots(3)
    grid = torch.linspace(0, float(lam.max()), 200, dtype=torch.float64)
    axes[0].hist(lam.flatten().numpy(), bins=80, density=True, color="lightgrey", label="eigenvalues of X X^T")
    ax2 = axes[0].twinx()
    for g in (0.0, 0.05, g_tf, 0.15):
        ax2.plot(grid, grid * (1 - g * grid) ** 2, label=f"gamma={g:.3f}")
    ax2.set_ylabel("lambda (1 - gamma lambda)^2")
    ax2.legend(fontsize=6)
    axes[0].set_xlabel("eigenvalue lambda")
    axes[0].set_title("eigenvalue map of GD++")
    axes[1].plot(gammas, med, color=COLORS["gdpp"])
    axes[1].axvline(g_tf, color=COLORS["tf"], linestyle="--", label="gamma of trained TFs (median)")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("gamma")
    axes[1].set_ylabel("median condition number")
    axes[1].set_title("condition number across tasks")
    axes[1].legend(fontsize=7)
    bins = np.logspace(0, 4, 60)
    axes[2].hist(kappa0.clamp_max(1e4).numpy(), bins=bins, alpha=0.6, label="gamma = 0")
    axes[2].hist(kappa_tf.clamp_max(1e4).numpy(), bins=bins, alpha=0.6, label=f"gamma = {g_tf:.3f}")
    axes[2].set_xscale("log")
    axes[2].set_xlabel("condition number (values above 10^4 counted at 10^4)")
    axes[2].set_ylabel("tasks")
    axes[2].set_title("distribution over 10,000 tasks")
    axes[2].legend(fontsize=7)
    ctx.figure("curvature", fig)
    ctx.table("curvature", [{"gamma": float(g), "median_condition_number": m} for g, m in zip(gammas, med)])


# ---------------------------------------------------------------------------------- softmax and LN
#: the models of A.9 by name in the table, and their cache labels
_SOFTMAX_VARIANTS = {"softmax, 1 head": {"n_layers": 1, "kernel": "softmax"},
                "softmax, 2 heads": {"n_layers": 1, "kernel": "softmax", "n_heads": 2},
                "LayerNorm + LSA": {"n_layers": 1, "layer_norm": True},
                # A.9: tuning the learning rate makes no significant difference to one softmax head
                "softmax, 1 head, lr 3e-4": {"n_layers": 1, "kernel": "softmax"},
                "softmax, 1 head, lr 3e-3": {"n_layers": 1, "kernel": "softmax"},
                # A.9: with LayerNorm more heads do not help substantially
                "LayerNorm + LSA, 2 heads": {"n_layers": 1, "layer_norm": True, "n_heads": 2},
                # A.9, Fig. 14b: two layers, LayerNorm only between them; against two steps of GD
                "LSA + LayerNorm + LSA": {"n_layers": 2, "layer_norm": "between"}}
_SOFTMAX_KEYS = {"softmax, 1 head": "softmax1", "softmax, 2 heads": "softmax2", "LayerNorm + LSA": "layernorm",
                 "softmax, 1 head, lr 3e-4": "softmax1-lr3e-4", "softmax, 1 head, lr 3e-3": "softmax1-lr3e-3",
                 "LayerNorm + LSA, 2 heads": "layernorm2", "LSA + LayerNorm + LSA": "layernorm-between"}
_SOFTMAX_LRS = {"softmax1-lr3e-4": 3e-4, "softmax1-lr3e-3": 3e-3}


def _softmax_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    """The A.9 models, and the 1-layer LSA (the LayerNorm OOD comparison)."""
    return {key: train_config(ctx, key, _SOFTMAX_VARIANTS[name], (2000, 8000), lr=_SOFTMAX_LRS.get(key, 1e-3))
            for name, key in _SOFTMAX_KEYS.items()} | one_layer_model(ctx)


@register("oswald-softmax", "softmax attention with 1 and 2 heads, and LayerNorm, vs one GD step "
          "(Fig. 11, 12, 14)", "source 000, A.9", quick_minutes=2.0, full_minutes=9.5, models=_softmax_models)
def softmax_layernorm(ctx: ExperimentContext) -> None:
    variants, keys, configs = _SOFTMAX_VARIANTS, _SOFTMAX_KEYS, _softmax_models(ctx)
    fig, axes = subplots(2)
    rows = []
    gd_loss = None
    trained, gds = {}, {}
    for name, model in variants.items():
        res = ctx.train(keys[name], configs[keys[name]])
        trained[keys[name]] = res
        task = res.config.task
        ev = eval_tasks(ctx, task)
        gd = gds[keys[name]] = tune_gd(tune_tasks(ctx, task), model["n_layers"])  # as many GD steps as layers
        gd_loss = evaluate(gd, ev).mean
        losses, coss = seed_losses(res, ev), []
        for s, lr, loss in zip(res.config.seeds, seed_learners(res), losses):
            coss.append(alignment(lr, gd, ev[:size(ctx, ALIGN_TASKS)])["sensitivity_cosine"].mean)
            rows.append({"model": name, "seed": s, "loss": loss, "gd_loss": gd_loss,
                         "loss_over_gd": loss / gd_loss, "sensitivity_cosine": coss[-1]})
        ctx.result(SOFTMAX_LOSS_OVER_GD.format(variant=keys[name]), median([x / gd_loss for x in losses]))
        ctx.result(f"{keys[name]}.cosine_median", median(coss))
        color = {"softmax1": COLORS["tf"], "softmax2": COLORS["other"], "layernorm": COLORS["interp"]}.get(keys[name])
        if color is None:  # the lr and head-count variants are in the table, not in the figure
            continue
        for ax, key in ((axes[0], "eval_loss"), (axes[1], "sensitivity_cosine")):
            steps, ys = curves(res, key)
            band(ax, steps, ys, name, color, per_seed=True)
        if keys[name] == "softmax2":
            _softmax_heads(ctx, res)
    r = ctx.results
    by_lr = [r[SOFTMAX_LOSS_OVER_GD.format(variant=v)] for v in ("softmax1-lr3e-4", "softmax1", "softmax1-lr3e-3")]
    ctx.result(SOFTMAX_LR_SPREAD, max(by_lr) / min(by_lr))
    ctx.result(SOFTMAX_BEST_LR, min(by_lr))
    ctx.result(LN_HEADS_CHANGE, abs(r[SOFTMAX_LOSS_OVER_GD.format(variant="layernorm2")]
                                    / r[SOFTMAX_LOSS_OVER_GD.format(variant="layernorm")] - 1))
    ctx.report("one softmax head: tuning the learning rate makes no significant difference (A.9)",
               "loss / GD (median seed) at Adam lr 3e-4, 1e-3, 3e-3: " + ", ".join(f"{x:.3f}" for x in by_lr))
    ctx.report("with LayerNorm, more heads do not help substantially (A.9)",
               f"loss / GD with 1 head {r['layernorm.loss_over_gd_median']:.3f}, with 2 heads "
               f"{r['layernorm2.loss_over_gd_median']:.3f}")
    ctx.report("one softmax head cannot match GD; two heads nearly do (Fig. 11, 12)",
               f"loss / GD (median over seeds): 1 head {r['softmax1.loss_over_gd_median']:.3f}, 2 heads "
               f"{r['softmax2.loss_over_gd_median']:.3f}")
    ctx.report("two layers with LayerNorm between them are inferior to two steps of GD (Fig. 14b)",
               f"loss / GD 2 steps {r['layernorm-between.loss_over_gd_median']:.3f}, cosine "
               f"{r['layernorm-between.cosine_median']:.4f}")
    ctx.report("LayerNorm before attention loses performance against GD (Fig. 14)",
               f"loss / GD {r['layernorm.loss_over_gd_median']:.3f}, cosine {r['layernorm.cosine_median']:.4f}")
    axes[0].axhline(evaluate(gds["softmax1"], curve_tasks(trained["softmax1"])).mean, color=COLORS["gd"],
                    linestyle="--", label="GD, 1 step")
    axes[0].set_yscale("log")
    label_axes(axes, ("loss", "sensitivity cosine with GD"), ("loss", "cosine"))
    ctx.figure("softmax_layernorm", fig)
    ctx.table("softmax_layernorm", rows)
    _layernorm_ood(ctx, trained["layernorm"], one_layer_run(ctx))


def _layernorm_ood(ctx: ExperimentContext, ln: TrainResult, lsa: TrainResult) -> None:
    """A.9's speculation that LayerNorm generalises better to larger inputs and targets (Fig. 14, OOD): the
    LN + LSA model against the plain 1-layer LSA (both trained in distribution) on A.2's two families,
    median seed each. Result LN_OOD: the larger over the two families of LN loss / LSA loss at the largest
    scale (alpha = 2); table layernorm_ood."""
    rows, at_max = [], []
    models = {"LayerNorm + LSA": ln, "LSA": lsa}
    for fam in ("input scale (uniform)", "teacher scale"):
        for i, a in enumerate(OOD_ALPHAS):
            ev = eval_tasks(ctx, OOD_FAMILIES[fam](ln.config.task, a), EVAL_SEED + i, OOD_TASKS)
            loss = {m: median(seed_losses(run, ev)) for m, run in models.items()}
            rows.append({"family": fam, "alpha": a, "layernorm_loss_median": loss["LayerNorm + LSA"],
                         "lsa_loss_median": loss["LSA"], "ratio": loss["LayerNorm + LSA"] / loss["LSA"]})
        at_max.append(rows[-1]["ratio"])
    ctx.result(LN_OOD, max(at_max))
    ctx.table("layernorm_ood", rows)
    ctx.report("LayerNorm might enable 'better generalization for larger inputs as well as targets' (A.9, "
               "speculative)", "LN + LSA loss / LSA loss at alpha = 2 (median seeds): input scale "
               f"{at_max[0]:.3g}, teacher scale {at_max[1]:.3g}")


def _softmax_heads(ctx: ExperimentContext, res: TrainResult) -> None:
    """Fig. 11 (A.9): per head h, M_h = (W_K^T W_Q)_h / s_h (s_h its softmax temperature) times the last
    diagonal entry of (P W_V)_h; the off-diagonal entries of M_1 + M_2 almost cancel. Result: the Frobenius
    norm of the sum's off-diagonal part over the mean of the heads' (median seed), and a figure of seed 0."""
    ratios, mats, relative = [], [], []
    for lr in seed_learners(res):
        attn = lr.model.layers[0].attn
        kq, pv = attention_products(attn.w_q.detach(), attn.w_k.detach(), attn.w_v.detach(), attn.w_o.detach())
        s = attn.kernel_params.detach()[:, 0]
        m = kq / s[:, None, None] * pv[:, -1, -1][:, None, None]  # (H, D, D)
        off = ~torch.eye(m.shape[-1], dtype=torch.bool)
        ratios.append(float(m.sum(0)[off].norm() / torch.stack([mh[off].norm() for mh in m]).mean()))
        rel = [float(x[off].norm() / x[~off].norm()) for x in (*m, m.sum(0))]
        relative.append(rel)
        mats.append(m)
    ctx.result(SOFTMAX_HEADS_CANCEL, median(ratios))
    ctx.report("two softmax heads: the off-diagonal terms of the heads' scaled W_K^T W_Q cancel in their sum (Fig. 11)",
               "Frobenius norm of the sum's off-diagonal part / mean of the heads' (per seed): "
               + ", ".join(f"{x:.3f}" for x in ratios) + "; off-diagonal / diagonal norm of head 1, head 2, "
               "their sum (per seed): " + "; ".join(", ".join(f"{x:.3f}" for x in r) for r in relative))
    m = mats[0].double().numpy()
    fig, axes = subplots(3, width=3.0, height=2.8)
    vmax = float(np.abs(m).max())
    heatmap(axes[0], m[0], "head 1", vmax)
    heatmap(axes[1], m[1], "head 2", vmax)
    heatmap(axes[2], m.sum(0), "sum of the heads", vmax)
    fig.suptitle(f"seed {res.config.seeds[0]}: W_K^T W_Q / s per head, scaled by the head's (P W_V)[y, y]")
    ctx.figure("softmax_heads", fig)


# ------------------------------------------------------------------------------- phase transitions
def _transition(steps: list[int], losses: np.ndarray, refs: np.ndarray) -> float:
    """First evaluated step with loss within 5% of the reference (inf when never)."""
    hit = np.nonzero(losses <= 1.05 * refs)[0]
    return float(steps[hit[0]]) if len(hit) else float("inf")


def _phase_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    """1 and 2 heads, evaluated every 25 steps."""
    out = {}
    for heads in (1, 2):
        cfg = train_config(ctx, f"phase-h{heads}", {"n_layers": 1, "n_heads": heads}, (1500, 3000))
        out[f"phase-h{heads}"] = cfg.model_copy(update={"seeds": ctx.seeds,
                                                       "eval": cfg.eval.model_copy(update={"every": 25})})
    return out


@register("oswald-phase", "seed-dependent phase transitions of training, 1 vs 2 heads (Fig. 15)",
          "source 000, A.11, Fig. 15", quick_minutes=1.5, full_minutes=4.0,
          n_seeds={"smoke": 2, "quick": 4, "full": 8}, models=_phase_models)
def phase(ctx: ExperimentContext) -> None:
    """Seeds: 4 (quick) or 8 (full) by default, as the paper's figure compares many seeds' transitions."""
    seeds = ctx.seeds
    configs = _phase_models(ctx)
    fig, axes = subplots(2, sharey=True)
    rows = []
    for ax, heads in zip(axes, (1, 2)):
        res = ctx.train(f"phase-h{heads}", configs[f"phase-h{heads}"])
        steps, ys = curves(res, "eval_loss")
        _, ref = curves(res, "reference_loss")
        trans = [_transition(steps, y, r) for y, r in zip(ys, ref)]
        for s, y, t in zip(seeds, ys, trans):
            ax.plot(steps, y, linewidth=1, label=f"seed {s}")
            rows.append({"heads": heads, "seed": s, "transition_step": t})
        ax.plot(steps, ref[0], color=COLORS["gd"], linestyle="--", label="GD")
        ax.set_yscale("log")
        ax.set_title(f"{heads} head{'s' if heads > 1 else ''}: held-out loss per seed")
        ax.set_xlabel("training step")
        ax.set_ylabel("loss")
        ax.legend(fontsize=6, ncol=2)
        ctx.result(f"h{heads}.transition_steps", trans)
        ctx.result(SLOWEST_TRANSITION.format(heads=heads), max(trans))
        ctx.result(TRANSITION_SPREAD.format(heads=heads),
                   max(trans) / min(trans) if np.isfinite(min(trans)) else float("nan"))
        ctx.report(f"{heads} head(s): training loss drops to GD at a seed-dependent step (Fig. 15)",
                   "first step within 5% of GD per seed: " + ", ".join(f"{t:g}" for t in trans))
    ctx.figure("phase", fig)
    ctx.table("phase", rows)


# ------------------------------------------------------------------------------- fixed training sets
_FIXED_SIZES = [128, 512, 2048, 8192]


def _fixed_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    """1-layer LSAs on fixed training sets, and one LSA + MLP block on 8192 fixed tasks (grokking)."""
    out = {f"fixed-{m}": train_config(ctx, f"fixed-{m}", {"n_layers": 1}, (1500, 5000), train_set_size=m,
                                      batch_size=min(2048, m)) for m in _FIXED_SIZES}
    out["fixed-8192-mlp"] = train_config(ctx, "fixed-8192-mlp", {"n_layers": 1, "mlp": True}, (3000, 10000),
                                         train_set_size=8192, batch_size=2048)
    return out


@register("oswald-fixed-data", "training on a fixed set of 128 to 8192 tasks (Fig. 16)",
          "source 000, A.12, Fig. 16", quick_minutes=1.0, full_minutes=3.0, models=_fixed_models)
def fixed_data(ctx: ExperimentContext) -> None:
    sizes = _FIXED_SIZES
    configs = _fixed_models(ctx)
    ev = None
    rows, ratios, cos_med = [], {}, {}
    fig, axes = subplots(2)
    for m in sizes:
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
        band(axes[0], steps, ys, f"{m} tasks", None)
        _, tr = curves(res, "train_loss")
        band(axes[1], steps, tr, f"{m} tasks", None)
        ctx.result(FIXED_LOSS_OVER_GD.format(size=m), ratios[m])
    axes[0].axhline(evaluate(gd, curve_tasks(res)).mean, color=COLORS["gd"], linestyle="--", label="GD")
    label_axes(axes, ("held-out loss", "training loss (on the fixed set)"), ("loss", "loss"))
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
    Adam 1e-3 and batch 2048). Per seed, on the training curve's held-out tasks: grokking = the held-out
    loss rises to at least twice its first evaluation and ends within 20% of GD (our reading of 'drastically'
    and 'almost'). Result GROKKING_SEEDS: how many seeds do; figure and table grokking."""
    res = ctx.train("fixed-8192-mlp", _fixed_models(ctx)["fixed-8192-mlp"])
    gd_curve = evaluate(gd, curve_tasks(res)).mean
    steps, ys = curves(res, "eval_loss")
    _, tr = curves(res, "train_loss")
    rows, grokked = [], 0
    for s, y in zip(res.config.seeds, ys):
        rise = float(np.max(y) / y[0])
        end = float(y[-1] / gd_curve)
        grokked += int(rise >= 2 and end <= 1.2)
        rows.append({"seed": s, "first_eval_loss": float(y[0]), "max_eval_loss": float(np.max(y)),
                     "final_eval_loss": float(y[-1]), "gd_loss": gd_curve, "rise": rise, "final_over_gd": end})
    ctx.result(GROKKING_SEEDS, grokked)
    ctx.table("grokking", rows)
    fig, axes = subplots(2)
    band(axes[0], steps, ys, "held-out", COLORS["tf"], per_seed=True)
    axes[0].axhline(gd_curve, color=COLORS["gd"], linestyle="--", label="GD")
    band(axes[1], steps, tr, "training (the fixed set)", COLORS["other"], per_seed=True)
    label_axes(axes, ("LSA + MLP on 8192 fixed tasks: held-out", "training"), ("loss", "loss"))
    for ax in axes:
        ax.set_yscale("log")
    ctx.figure("grokking", fig)
    ctx.report("one block (LSA + MLP) on 8192 fixed tasks can 'grokk': the held-out loss first rises "
               "drastically, then drops to about GD's (Fig. 15 right)",
               "per seed, highest / first held-out loss and final / GD: " + ", ".join(
                   f"{r['rise']:.2f} and {r['final_over_gd']:.3f}" for r in rows) + f"; seeds that grokk: {grokked}")


# --------------------------------------------------------------------------------------- depths 2-4
def _depth_variants(ctx: ExperimentContext) -> dict[str, tuple[dict[str, Any], int]]:
    """{name: (model, depth)}: recurrent and separate layers of depth 2-4, and (full mode) 2 layers with
    4 heads and MLPs."""
    variants = {f"{'recurrent' if rec else 'layers'}-{k}": ({"n_layers": k, "recurrent": rec}, k)
                for rec in (True, False) for k in (2, 3, 4)}
    if not ctx.quick:  # the MLP model trains on the slower fused path: full mode only
        variants["layers-2-heads4-mlp"] = ({"n_layers": 2, "n_heads": 4, "mlp": True}, 2)
    return variants


def _depth_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    return {f"depth-{name}": train_config(ctx, f"depth-{name}", model, (2000, 10000))
            for name, (model, _) in _depth_variants(ctx).items()}


@register("oswald-depth", "recurrent and separate-layer LSA stacks of depth 2 to 4, and (full mode) 2 layers "
          "with 4 heads and MLPs, vs GD and GD++ (Fig. 7, 8)", "source 000, A.5, Fig. 7, 8", quick_minutes=2.5,
          full_minutes=28.5, models=_depth_models)
def depth(ctx: ExperimentContext) -> None:
    variants = _depth_variants(ctx)
    configs = _depth_models(ctx)
    ev = None
    rows, summary, runs = [], {}, {}
    refs: dict[tuple[int, bool], tuple[float, float, Any, Any]] = {}
    for name, (model, k) in variants.items():
        res = runs[name] = ctx.train(f"depth-{name}", configs[f"depth-{name}"])
        task = res.config.task
        ev = eval_tasks(ctx, task) if ev is None else ev
        recurrent = bool(model.get("recurrent"))
        if (k, recurrent) not in refs:  # a recurrent model's GD++ shares one (eta, gamma), as the official code's
            tune = tune_tasks(ctx, task)
            gd, gdpp = tune_gd(tune, k), tune_gdpp(tune, k, shared=recurrent)
            refs[k, recurrent] = (evaluate(gd, ev).mean, evaluate(gdpp, ev).mean, gd, gdpp)
        gd_loss, gdpp_loss, gd, gdpp = refs[k, recurrent]
        pd_gd, pd_gdpp = seed_prediction_differences(res, [gd, gdpp], ev[:size(ctx, ALIGN_TASKS)])
        per = [{"model": name, "depth": k, "seed": s, "tf_loss": t, "gd_loss": gd_loss, "gdpp_loss": gdpp_loss,
                "pd_gd": a, "pd_gdpp": b}
               for s, t, a, b in zip(res.config.seeds, seed_losses(res, ev), pd_gd, pd_gdpp)]
        rows += per
        summary[name] = {key: median([r[key] for r in per]) for key in ("tf_loss", "pd_gd", "pd_gdpp")}
        for key, v in summary[name].items():
            ctx.result(f"{name}.{key}_median", v)
        ctx.result(f"{name}.tf_over_gd", summary[name]["tf_loss"] / gd_loss)
    for (k, recurrent), (g, gp, _, _) in refs.items():
        ctx.result(f"gd_{k}_loss", g)
        ctx.result(f"gdpp{'_shared' if recurrent else ''}_{k}_loss", gp)
    ctx.result(DEPTH_MAX_TF_OVER_GD, max(ctx.results[f"{n}.tf_over_gd"] for n in variants))
    ctx.result(DEPTH_MAX_PD_RATIO, max(summary[n]["pd_gdpp"] / summary[n]["pd_gd"] for n in variants))
    ood = _deep_ood(ctx, task, {n: (runs[n], refs[variants[n][1], n.startswith("recurrent")][3]) for n in variants},
                    "depth_ood", "LSA stacks of depth 2-4 vs GD++ with as many steps (one eta, gamma when recurrent), "
                    "out of distribution (Fig. 7)")
    ctx.result(DEPTH_OOD_MAX, max(ood.values()))
    ctx.report("deep LSA stacks outperform GD with as many steps, at every depth (Fig. 7, 8)",
               "TF / GD (median seed): " + ", ".join(f"{n} {ctx.results[n + '.tf_over_gd']:.3f}" for n in variants))
    ctx.report("and are described by GD++ (Fig. 7, 8)", "prediction difference to GD++ vs to GD: " + ", ".join(
        f"{n} {summary[n]['pd_gdpp']:.3f} vs {summary[n]['pd_gd']:.3f}" for n in variants))
    fig, axes = subplots(2)
    ks = [2, 3, 4]
    for rec, color, label in ((True, COLORS["tf"], "recurrent TF"), (False, COLORS["other"], "TF, separate layers")):
        names = [f"{'recurrent' if rec else 'layers'}-{k}" for k in ks]
        axes[0].plot(ks, [summary[n]["tf_loss"] for n in names], marker="o", color=color, label=label)
        axes[1].plot(ks, [summary[n]["pd_gdpp"] for n in names], marker="o", color=color, label=f"{label} vs GD++")
        axes[1].plot(ks, [summary[n]["pd_gd"] for n in names], marker="o", color=color, linestyle=":",
                     label=f"{label} vs GD")
    if "layers-2-heads4-mlp" in summary:
        axes[0].plot([2], [summary["layers-2-heads4-mlp"]["tf_loss"]], marker="*", markersize=10, linestyle="",
                     color=COLORS["interp"], label="2 layers, 4 heads, MLP")
    axes[0].plot(ks, [refs[k, False][0] for k in ks], color=COLORS["gd"], linestyle="--", marker="s", label="GD")
    axes[0].plot(ks, [refs[k, False][1] for k in ks], color=COLORS["gdpp"], linestyle="--", marker="s",
                 label="GD++ (per step)")
    axes[0].plot(ks, [refs[k, True][1] for k in ks], color=COLORS["gdpp"], linestyle=":", marker="s",
                 label="GD++ (one eta, gamma)")
    axes[0].set_yscale("log")
    label_axes(axes, ("held-out loss (median seed)", "prediction difference (median seed)"),
               ("loss", "||y_TF - y_ref||"), xlabel="depth (layers or steps)")
    for ax in axes:
        ax.set_xticks(ks)
    ctx.figure("depth", fig)
    ctx.table("depth", rows)
