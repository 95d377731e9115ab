"""Recurrent and separate-layer LSA stacks of depth 2 to 4, and (full mode) 2 layers with 4 heads and MLPs,
against GD and GD++ (A.5, Fig. 7, 8): `oswald-depth`."""

from __future__ import annotations

from typing import Any

from icgd.core.metrics import evaluate
from icgd.experiments.common import (
    ALIGN_TASKS,
    eval_tasks,
    median,
    seed_losses,
    seed_prediction_differences,
    size,
    tune_tasks,
)
from icgd.experiments.linear_setup import authors_steps, train_config
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.tuning import tune_gd
from icgd.results.figures import COLORS, label_axes, subplots
from icgd.sources.oswald.keys import (
    DEPTH_MAX_PD_RATIO,
    DEPTH_MAX_TF_OVER_GD,
    DEPTH_OOD_MAX,
    DEPTH_OOD_LEARNT_MAX,
)
from icgd.sources.oswald.shared import GDPP_DEEP_DEVIATION, GELU_DEVIATION, LINEAR_DEVIATIONS, deep_ood, gdpp_reference
from icgd.train.config import TrainConfig


# --------------------------------------------------------------------------------------- depths 2-4
def _depth_variants(ctx: ExperimentContext) -> dict[str, tuple[dict[str, Any], int]]:
    """{name: (model, depth)}: recurrent and separate layers of depth 2-4, and (full mode) separate layers
    with 4 heads and MLPs at every depth (Fig. 8: 'multiple heads and equipped with MLPs')."""
    variants = {f"{'recurrent' if rec else 'layers'}-{k}": ({"n_layers": k, "recurrent": rec}, k)
                for rec in (True, False) for k in (2, 3, 4)}
    if not ctx.quick:  # the MLP models train on the slower fused path: full mode only
        for k in (2, 3, 4):
            variants[f"layers-{k}-heads4-mlp"] = ({"n_layers": k, "n_heads": 4, "mlp": True}, k)
    return variants


def _depth_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    return {f"depth-{name}": train_config(ctx, f"depth-{name}", model, (2000, authors_steps(model)))
            for name, (model, _) in _depth_variants(ctx).items()}


# full_minutes: the 4-head MLP stacks' 50,000 steps alone take about 90, 125 and 160 min at depths 2, 3, 4 on 2
# cores (40 steps timed each while another training ran, 2026-11-25): full mode is for a GPU
@register("oswald-depth", "recurrent and separate-layer LSA stacks of depth 2 to 4, and (full mode) 4 heads "
          "and MLPs at every depth, vs GD and GD++ (Fig. 7, 8)", "source 000, A.5, Fig. 7, 8", quick_minutes=5.4,
          full_minutes=480.0, models=_depth_models, deviations=LINEAR_DEVIATIONS + (GDPP_DEEP_DEVIATION,) + (
              "the code has no script for Figs. 7-8; the models follow the rules of "
              "constructed_token_setup.ipynb for their depth. The 4-head MLP "
              "models train in full mode only. Reason: it needs the slower generic training path.", GELU_DEVIATION))
def depth(ctx: ExperimentContext) -> None:
    variants = _depth_variants(ctx)
    configs = _depth_models(ctx)
    ev = None
    rows, summary, runs = [], {}, {}
    refs: dict[tuple[int, bool, float | None], tuple[float, float, Any, Any]] = {}
    for name, (model, k) in variants.items():
        res = runs[name] = ctx.train(f"depth-{name}", configs[f"depth-{name}"])
        task = res.config.task
        ev = eval_tasks(ctx, task) if ev is None else ev
        recurrent = bool(model.get("recurrent"))
        clip = res.config.model.clip  # the references clip their tokens as the model does (the code's)
        if (k, recurrent, clip) not in refs:  # a recurrent model's GD++ shares one (eta, gamma), as the code's
            tune = tune_tasks(ctx, task)
            gd = tune_gd(tune, k, clip=clip)
            gdpp, fits, fit = gdpp_reference(ctx, task, k, recurrent, clip)  # best of three, the code's among them
            tag = f"gdpp{'_shared' if recurrent else ''}_{k}"
            fit_losses = {f: evaluate(v, ev).mean for f, v in fits.items()}
            ctx.result(f"{tag}_fits", fit_losses)
            ctx.result(f"{tag}_fit", fit)
            refs[k, recurrent, clip] = (evaluate(gd, ev).mean, fit_losses[fit], gd, gdpp)
        gd_loss, gdpp_loss, gd, gdpp = refs[k, recurrent, clip]
        pd_gd, pd_gdpp = seed_prediction_differences(res, [gd, gdpp], ev[:size(ctx, ALIGN_TASKS)])
        per = [{"model": name, "depth": k, "seed": s, "tf_loss": t, "gd_loss": gd_loss, "gdpp_loss": gdpp_loss,
                "pd_gd": a, "pd_gdpp": b}
               for s, t, a, b in zip(res.config.seeds, seed_losses(res, ev), pd_gd, pd_gdpp)]
        rows += per
        summary[name] = {key: median([r[key] for r in per]) for key in ("tf_loss", "pd_gd", "pd_gdpp")}
        for key, v in summary[name].items():
            ctx.result(f"{name}.{key}_median", v)
        ctx.result(f"{name}.tf_over_gd", summary[name]["tf_loss"] / gd_loss)
    for (k, recurrent, _), (g, gp, _, _) in refs.items():
        ctx.result(f"gd_{k}_loss", g)
        ctx.result(f"gdpp{'_shared' if recurrent else ''}_{k}_loss", gp)
    ctx.result(DEPTH_MAX_TF_OVER_GD, max(ctx.results[f"{n}.tf_over_gd"] for n in variants))
    ctx.result(DEPTH_MAX_PD_RATIO, max(summary[n]["pd_gdpp"] / summary[n]["pd_gd"] for n in variants))
    def ref(k: int, recurrent: bool) -> tuple[float, float, Any, Any]:
        """The references of depth k (with the clip of the depth's models)."""
        return next(v for (kk, rr, _), v in refs.items() if (kk, rr) == (k, recurrent))

    ood = deep_ood(ctx, task, {n: (runs[n], ref(variants[n][1], n.startswith("recurrent"))[3]) for n in variants},
                    "depth_ood", "LSA stacks of depth 2-4 vs GD++ with as many steps (one eta, gamma when recurrent), "
                    "out of distribution (Fig. 7)")
    ctx.result(DEPTH_OOD_MAX, max(mean for mean, _ in ood.values()))  # the measure before (mean over tasks)
    ctx.result(DEPTH_OOD_LEARNT_MAX, max((v for _, v in ood.values() if v is not None), default=None))
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
    mlp = [k for k in ks if f"layers-{k}-heads4-mlp" in summary]
    if mlp:
        names = [f"layers-{k}-heads4-mlp" for k in mlp]
        axes[0].plot(mlp, [summary[n]["tf_loss"] for n in names], marker="*", markersize=10,
                     color=COLORS["interp"], label="TF, 4 heads + MLP per layer")
        axes[1].plot(mlp, [summary[n]["pd_gdpp"] for n in names], marker="*", markersize=10,
                     color=COLORS["interp"], label="4 heads + MLP vs GD++")
    axes[0].plot(ks, [ref(k, False)[0] for k in ks], color=COLORS["gd"], linestyle="--", marker="s", label="GD")
    axes[0].plot(ks, [ref(k, False)[1] for k in ks], color=COLORS["gdpp"], linestyle="--", marker="s",
                 label="GD++ (per step)")
    axes[0].plot(ks, [ref(k, True)[1] for k in ks], color=COLORS["gdpp"], linestyle=":", marker="s",
                 label="GD++ (one eta, gamma)")
    axes[0].set_yscale("log")
    label_axes(axes, ("held-out loss (median seed)", "prediction difference (median seed)"),
               ("loss", "||y_TF - y_ref||"), xlabel="depth (layers or steps)")
    for ax in axes:
        ax.set_xticks(ks)
    ctx.figure("depth", fig)
    ctx.table("depth", rows)
