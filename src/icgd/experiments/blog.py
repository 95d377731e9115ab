"""The replication study of Rossi, Yuan and Hannagan, ICLR 2024 blog post (source 001, SPEC 4).

blog-eta: the analytic optimal learning rate of one GD step against a line search (values, CIs, times),
    the loss as a function of eta, and the implicit eta of trained LSA layers;
blog-dampening: a trained layer applied 50 times with dampening lambda = 0.7 against GD with eta * lambda;
blog-lstm: LSTM and bidirectional LSTM learners of 1 to 4 layers, trained by the same engine on the same
    tasks, against the 1-layer LSA and one GD step (loss, prediction difference, sensitivity cosine);
blog-scaling: test loss of trained LSA models as a function of the context size N and of the depth,
    beside GD with as many steps.

Inputs x ~ U(-1, 1) unless stated (the source does not state its range; `blog-eta` also reports the
official code's U(-0.5, 0.5)). Models shared with the oswald-* experiments use the same configs, so a
shared cache (`--cache`) trains them once.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch

from icgd.analysis.readoff import (
    divergence_cap,
    gd_repeat_losses,
    implicit_eta,
    products,
    tf_repeat_losses,
)
from icgd.core.episodes import make_generator
from icgd.core.metrics import alignment, evaluate, mean_ci95
from icgd.experiments.common import (
    TUNE_TASKS,
    Size,
    curves,
    eval_every,
    eval_tasks,
    median,
    one_layer_model,
    one_layer_run,
    seed_learners,
    size,
    train_config,
    tune_tasks,
)
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.explicit import ZeroPredictor
from icgd.learners.tuning import (
    analytic_eta,
    gd_loss_fn,
    line_search,
    tune_gd,
    tune_gdpp,
)
from icgd.results.figures import COLORS, band, label_axes, subplots
from icgd.tasks.linear import LinearRegression
from icgd.train.config import TrainConfig, build_config

# ---- result keys the claims read (icgd.claims.blog); {tag} etc. are filled by `.format`
ETA_MAX_DIFFERENCE = "{tag}.max_relative_difference"  # blog-eta, tag a1 or a0.5
ETA_SPEEDUP = "{tag}.speedup"
TF_ETA_ERROR = "{tag}.tf_eta_relative_error_median"
ETA_OFF_GAP = "{tag}.gd_eta_halved_or_doubled_over_tf_min"
DAMPING_MEDIAN = "{key}.{measure}_median"  # blog-dampening, key lambda_0_7 or lambda_1
LSTM_BEST_COSINE_OVER_LSA = "lstm.best_cosine_over_lsa"  # blog-lstm
BILSTM_COSINE_GAIN = "bilstm.cosine_gain_deepest_vs_1"
BILSTM_OVER_LSTM = "bilstm_over_lstm.max_loss_ratio_depth_ge_2"
BEST_LSTM_OVER_LSA = "best_lstm_loss_over_lsa"  # best of the LSTMs and BiLSTMs
BEST_UNI_LSTM_OVER_LSA = "best_unidirectional_lstm_loss_over_lsa"
BILSTM_GAIN_DEEPEST_OVER_1 = "bilstm_over_lstm.deepest_over_1_layer"
BILSTM_COSINE_GAIN_FROM_2 = "bilstm.cosine_gain_deepest_vs_2"
BILSTM_BEST_COSINE = "bilstm.best_cosine"
RATIO_CONTEXT = "max_consecutive_ratio_context"  # blog-scaling
RATIO_DEPTH = "max_consecutive_ratio_depth"
TF_GD_GAP_ACROSS_N = "max_relative_gap_tf_gd_over_context_sizes"
TF_OVER_ZERO_N10 = "n10.tf_over_zero_loss"

ETA_SEED = 20_240_100
#: independent task sets of the learning-rate study, and tasks in each
ETA_REPETITIONS = Size(quick=5, full=20, smoke=2)
ETA_TASKS = Size(quick=10_000, full=10_000, smoke=256)
#: the LSTM study: held-out tasks behind its curves and their alignment, and of its alignment analysis
LSTM_CURVE_TASKS = Size(quick=1024, full=2048)
LSTM_CURVE_ALIGN_TASKS = Size(quick=256, full=512, smoke=16)
LSTM_ALIGN_TASKS = Size(quick=1024, full=2048)


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean of independent repetitions with its 95% t-interval."""
    return mean_ci95(values, student=True)


# --------------------------------------------------------------------------------- learning rate
@register("blog-eta", "analytic optimal eta of one GD step vs line search: values, CIs, times, loss vs eta",
          "source 001, 'Analysis on the learning rate'", quick_minutes=0.5, full_minutes=2.0,
          models=lambda ctx: one_layer_model(ctx, 1.0) | one_layer_model(ctx, 0.5))
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
    axes[2].legend(fontsize=7, loc="center")
    ctx.figure("eta", fig)


# ------------------------------------------------------------------------------------- dampening
DAMPING = 0.7
REPEATS = 50


@register("blog-dampening", "a trained layer applied 50 times with dampening 0.7 vs GD with eta * 0.7",
          "source 001, 'How about multiple layers?'", quick_minutes=0.5, full_minutes=1.0, models=one_layer_model)
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
    fig, axes = subplots(2, width=4.6)
    steps = np.arange(1, REPEATS + 1)
    for lam, style in ((DAMPING, "-"), (1.0, ":")):
        tf_c, gd_c, _ = curves[lam]
        band(axes[0], steps, tf_c, f"TF, lambda={lam:g}", COLORS["tf"], linestyle=style)
        axes[0].plot(steps, gd_c, color=COLORS["gd"], linestyle=style, label=f"GD, eta*{lam:g}")
    axes[0].set_yscale("log")
    axes[0].set_title("repeated application\n(tasks that diverged under either learner left out)", fontsize=8)
    axes[0].set_xlabel("number of applications")
    axes[0].set_ylabel("loss (mean over tasks)")
    axes[0].legend(fontsize=7)
    r = curves[DAMPING][2][0]
    finite = r[torch.isfinite(r)].numpy()
    axes[1].hist(np.log10(finite), bins=60, color=COLORS["tf"])
    axes[1].axvline(0, color="black", linestyle="--")
    axes[1].set_xlabel(f"log10(loss after {REPEATS} / after 1), per task")
    axes[1].set_ylabel("tasks")
    axes[1].set_title(f"lambda = {DAMPING:g}, seed {res.config.seeds[0]}: {int((~torch.isfinite(r)).sum())} "
                      "diverged task(s) not shown", fontsize=8)
    ctx.figure("dampening", fig)


# ----------------------------------------------------------------------------------------- LSTMs
def lstm_config(ctx: ExperimentContext, layers: int, bidirectional: bool) -> TrainConfig:
    """LSTMs of 32 units per direction, Adam 3e-3, batch 256 (CPU-sized choices: the source does not state
    its sizes), against one tuned GD step."""
    n = size(ctx, Size(quick=1500, full=4000, smoke=4))
    name = f"{'bi' if bidirectional else ''}lstm-{layers}"
    ev = {"every": eval_every(ctx, n, 20), "n_tasks": size(ctx, LSTM_CURVE_TASKS), "reference": "gd",
          "reference_steps": 1, "alignment_tasks": size(ctx, LSTM_CURVE_ALIGN_TASKS)}
    if ctx.mode == "smoke":
        ev["n_tune"] = size(ctx, TUNE_TASKS)
    return build_config({
        "name": name, "model": {"kind": "lstm", "n_layers": layers, "bidirectional": bidirectional, "hidden": 32},
        "optim": {"lr": 3e-3}, "steps": n, "batch_size": 256, "seeds": ctx.seeds, "checkpoint_every": 250,
        "eval": ev})


def _relative_curve(res) -> tuple[list[int], np.ndarray]:
    """(steps, seeds x steps) of a run's held-out loss over the tuned one-step GD loss on the same tasks
    (each run draws its own held-out tasks)."""
    steps, ys = curves(res, "eval_loss")
    return steps, ys / curves(res, "reference_loss")[1]


def lstm_depths(quick: bool) -> list[int]:
    return [1, 2, 4] if quick else [1, 2, 3, 4]


def _lstm_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    """The 1-layer LSA, and LSTMs and BiLSTMs of every depth."""
    configs = [lstm_config(ctx, k, bi) for bi in (False, True) for k in lstm_depths(ctx.quick)]
    return one_layer_model(ctx) | {c.name: c for c in configs}


@register("blog-lstm", "LSTM and bidirectional LSTM learners of 1-4 layers vs the 1-layer LSA and one GD step",
          "source 001, 'Is this behavior unique to transformers?'", quick_minutes=8.0, full_minutes=45.0,
          models=_lstm_models)
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
    ks = lstm_depths(ctx.quick)
    uni, bid = [f"lstm-{k}" for k in ks], [f"bilstm-{k}" for k in ks]
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
    for names, color, label in ((uni, COLORS["other"], "LSTM"), (bid, COLORS["gdpp"], "BiLSTM")):
        axes[0].plot([], [], color=color, label=label)
        for n, k in zip(names, ks):
            band(axes[0], *_relative_curve(models[n]), "_", color, alpha=0.35 + 0.65 * k / ks[-1])
        for ax, key in zip(axes[1:], ("loss", "sensitivity_cosine", "prediction_difference")):
            ax.plot(ks, [med[n][key] for n in names], marker="o", color=color, label=label)
    band(axes[0], *_relative_curve(lsa), "LSA, 1 layer", COLORS["tf"])
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
    axes[0].legend(fontsize=6, handlelength=1.2)
    label_axes(axes[1:], ("loss (median seed)", "sensitivity cosine with GD", "prediction difference to GD"),
               ("loss", "cosine", "||y - y_GD||"), xlabel="layers")
    ctx.figure("lstm", fig)


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
    return {f"depth-layers-{k}": train_config(ctx, f"depth-layers-{k}", {"n_layers": k, "recurrent": False},
                                              (2000, 10000))}  # the same configs as oswald-depth's


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
          "source 001, 'Pre-training setup' figure", quick_minutes=4.5, full_minutes=40.0, models=_scaling_models)
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
    for k in DEPTHS:
        if k == 1:  # the 1-layer model, GD and tasks of the N = 10 point
            res, losses, gd = run10, losses10, gd10
        else:
            res = depth_run(ctx, k)
            losses = [evaluate(lr, ev10).mean for lr in seed_learners(res)]
            gd = tune_gd(tune10, k)
        gdpp = tune_gdpp(tune10, k) if k > 1 else gd
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
    fig, axes = subplots(2)
    axes[0].plot(ns, [by_n[n]["tf_loss"] for n in ns], marker="o", color=COLORS["tf"], label="LSA trained at each N")
    axes[0].plot(ns, [by_n[n]["gd_loss"] for n in ns], marker="s", linestyle="--", color=COLORS["gd"],
                 label="one GD step, eta tuned at each N")
    axes[0].plot(ns, [by_n[n]["tf10_loss"] for n in ns], marker="^", linestyle=":", color=COLORS["other"],
                 label="LSA trained at N = 10")
    axes[0].plot(ns, [by_n[n]["zero_loss"] for n in ns], color="grey", linestyle=":", label="zero predictor")
    axes[0].set_xscale("log", base=2)
    axes[0].minorticks_off()
    axes[0].set_xticks(ns, [str(n) for n in ns])
    axes[1].plot(DEPTHS, [by_k[k]["tf_loss"] for k in DEPTHS], marker="o", color=COLORS["tf"], label="LSA")
    axes[1].plot(DEPTHS, [by_k[k]["gd_loss"] for k in DEPTHS], marker="s", linestyle="--", color=COLORS["gd"],
                 label="GD, as many steps")
    axes[1].plot(DEPTHS, [by_k[k]["gdpp_loss"] for k in DEPTHS], marker="s", linestyle="--", color=COLORS["gdpp"],
                 label="GD++, as many steps")
    axes[1].set_xticks(DEPTHS)
    for ax in axes:
        ax.set_yscale("log")
    label_axes(axes[:1], ("test loss vs context size (median seed)",), ("loss",), xlabel="context size N")
    label_axes(axes[1:], ("test loss vs depth (median seed)",), ("loss",), xlabel="layers (GD steps)")
    ctx.figure("scaling", fig)
