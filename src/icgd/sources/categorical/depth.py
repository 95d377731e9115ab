"""Exponential against softmax attention, every weight trained, with 1 to 3 (full 4) layers; the seeds
train batched and, when a run diverges, the seeds with a non-finite loss are recorded with the step and
the others train on (the source's text on stability): `categorical-depth`."""

from __future__ import annotations

from statistics import median
from typing import Any

from icgd.experiments.common import (
    Size,
    seed_learners,
    size,
)
from icgd.experiments.registry import DocTable, ExperimentContext, register
from icgd.results.figures import label_axes, subplots
from icgd.sources.categorical.keys import (
    DEPTH_GD_MAX_CHANGE,
    DEPTH_GD_MSE,
    DEPTH_RUNS,
    DEPTH_UNSTABLE,
    DEPTH_UNSTABLE_FRACTION,
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
    tf_model,
    train,
)
from icgd.train.config import TrainConfig
from icgd.train.engine import TrainingDiverged

DEPTHS = Size(quick=3, full=4, smoke=2)

KERNELS = ("softmax", "exponential")

#: instability is a fraction of seeds, so the depth study runs more of them than the suite's default
DEPTH_SEEDS = {"smoke": 2, "quick": 5, "full": 8}


def _configs(ctx: ExperimentContext) -> dict[tuple[str, int], TrainConfig]:
    """{(kernel, layers): the Trained TF with every seed; ("softmax_gd", layers): the softmax GD model}. A seed
    that diverges is trained no further: the others train again under `tf_label(...)` with their seeds."""
    out: dict[tuple[str, int], TrainConfig] = {}
    for layers in range(1, size(ctx, DEPTHS) + 1):
        out["softmax_gd", layers] = gd_config(ctx, "softmax", n_layers=layers)
        for kernel in KERNELS:
            out[kernel, layers] = tf_config(ctx, kernel, layers, list(ctx.seeds))
    return out


def tf_label(kernel: str, layers: int, seeds: list[int], all_seeds: list[int]) -> str:
    """The study's own names: its Trained TFs run more seeds than the other experiments' (DEPTH_SEEDS), so even
    at one layer they are other models than `cat-tf-{kernel}`. (Before the models were declared they shared
    that name, each under its own config's fingerprint.)"""
    label = f"cat-depth-{kernel}-l{layers}"
    return label if seeds == all_seeds else label + "-s" + "_".join(map(str, seeds))


def tf_config(ctx: ExperimentContext, kernel: str, layers: int, seeds: list[int]) -> TrainConfig:
    label = tf_label(kernel, layers, seeds, list(ctx.seeds))
    return cat_config(ctx, label, tf_model(kernel, n_layers=layers), TF_STEPS, seeds=seeds)


# ------------------------------------------------------------------------------------------ depth
@register("categorical-depth", "exponential vs softmax attention, every weight trained, 1-3 layers (full 1-4): "
          "divergence and MSE per seed and depth; the softmax GD model at the same depths (the source's text on "
          "stability and on depth)", SOURCE, quick_minutes=4, full_minutes=60, n_seeds=DEPTH_SEEDS,
          models=lambda ctx: declared(_configs(ctx).values()),
          retrains="when some seeds of a Trained TF diverge, the others again without them (the model's name "
                   "ends in -s and their seeds)",
          doc_tables=(DocTable("depth_summary", "Training stability with depth, every weight trained: per model and "
                               "depth the runs, the unstable ones (diverged, or ended above the prior's MSE) with "
                               "the step each diverged at, and the MSE of the others (median, range)"),))
def depth(ctx: ExperimentContext) -> None:
    ep = held_out(ctx)
    prior = score(prior_learner(ep.dy), ep)
    depths = range(1, size(ctx, DEPTHS) + 1)
    rows = []
    for kernel in KERNELS:
        unstable = runs = 0
        for layers in depths:
            bad_here = n_here = 0
            for seed, res, diverged_at in seeds_until_diverged(ctx, kernel, layers):
                mse = float("nan") if res is None else score(res, ep)
                bad = res is None or not mse < prior
                unstable += bad
                bad_here += bad
                runs += 1
                n_here += 1
                rows.append({"kernel": kernel, "layers": layers, "seed": seed, "diverged_at_step": diverged_at,
                             "mse": mse, "prior_mse": prior, "unstable": bad})
            ctx.result(DEPTH_UNSTABLE_FRACTION.format(kernel=kernel, layers=layers), bad_here / n_here)
        ctx.result(DEPTH_UNSTABLE.format(kernel=kernel), unstable)
        ctx.result(DEPTH_RUNS.format(kernel=kernel), runs)
        ctx.report(f"{kernel}: training stability with depth",
                   f"{unstable} of {runs} runs diverged or ended above the prior's MSE ({prior:.4f}); per depth "
                   + ", ".join(f"{L}: {ctx.results[DEPTH_UNSTABLE_FRACTION.format(kernel=kernel, layers=L)]:.2f}"
                               for L in depths))
    gd_mse = {}
    for layers in depths:
        res = train(ctx, gd_config(ctx, "softmax", n_layers=layers))
        gd_mse[layers] = ctx.result(DEPTH_GD_MSE.format(layers=layers), score(seed_learners(res)[0], ep))
        rows.append({"kernel": "softmax (GD model)", "layers": layers, "seed": ctx.seeds[0], "diverged_at_step": None,
                     "mse": gd_mse[layers], "prior_mse": prior, "unstable": False})
    ctx.result(DEPTH_GD_MAX_CHANGE, max(abs(v / gd_mse[1] - 1) for v in gd_mse.values()))
    ctx.report("the multi-layer GD model changes little with depth (softmax)",
               ", ".join(f"{L} layer(s) {v:.4f}" for L, v in gd_mse.items()))
    ctx.table("depth", rows)
    ctx.table("depth_summary", depth_summary(rows))
    depth_figure(ctx, rows, list(depths), prior)


def depth_figure(ctx: ExperimentContext, rows: list[dict[str, Any]], depths: list[int], prior: float) -> None:
    """MSE per seed against depth (a diverged seed drawn at the top, as x), and the softmax GD model."""
    fig, (ax,) = subplots(1, width=5.4, height=3.8)
    top = max([r["mse"] for r in rows if r["mse"] == r["mse"]] + [prior]) * 1.5
    for i, kernel in enumerate(("softmax", "exponential", "softmax (GD model)")):
        pts = [r for r in rows if r["kernel"] == kernel]
        shift = (i - 1) * 0.08
        ok = [r for r in pts if not r["unstable"]]
        bad = [r for r in pts if r["unstable"]]
        ax.scatter([r["layers"] + shift for r in ok], [r["mse"] for r in ok], color=f"C{i}", s=18, label=kernel)
        if bad:
            ax.scatter([r["layers"] + shift for r in bad], [min(r["mse"], top) if r["mse"] == r["mse"] else top
                                                            for r in bad], color=f"C{i}", marker="x", s=30,
                       label=f"{kernel}: diverged or above the prior")
            for layers in sorted({r["layers"] for r in bad}):  # diverged seeds share the top: say how many
                n = sum(r["layers"] == layers for r in bad)
                ax.annotate(f"{n} of {sum(r['layers'] == layers for r in pts)}", (layers + shift, top),
                            xytext=(6, -3), textcoords="offset points", fontsize=7, color=f"C{i}")
    ax.axhline(prior, color="grey", ls=":", label="prior 1/C")
    ax.set_xticks(depths)
    ax.set_yscale("log")
    label_axes([ax], ["Trained TF per seed and depth; softmax GD model"], [MSE_LABEL])
    ax.set_xlabel("attention layers")
    ctx.figure("depth", fig)


def seeds_until_diverged(ctx: ExperimentContext, kernel: str, layers: int) -> list[tuple[int, Any, int | None]]:
    """[(seed, trained learner or None, step of divergence or None)] for every seed: the seeds train batched;
    when a run diverges, the seeds whose loss was non-finite are recorded and the others train again without
    them."""
    out: list[tuple[int, Any, int | None]] = []
    todo = list(ctx.seeds)
    while todo:
        try:
            res = train(ctx, tf_config(ctx, kernel, layers, todo))
        except TrainingDiverged as e:
            bad = e.seeds or list(todo)
            out += [(s, None, e.step) for s in bad]
            todo = [s for s in todo if s not in bad]
            continue
        out += [(s, m, None) for s, m in zip(todo, seed_learners(res))]
        todo = []
    return sorted(out, key=lambda t: t[0])


def depth_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The depth table per model and depth: runs, the unstable ones (diverged, or ended above the prior's
    MSE) with the steps where they diverged, and the median and range of the others' MSE."""
    out = []
    for kernel, layers in dict.fromkeys((r["kernel"], r["layers"]) for r in rows):
        here = [r for r in rows if (r["kernel"], r["layers"]) == (kernel, layers)]
        stable = sorted(r["mse"] for r in here if not r["unstable"])
        out.append({"model": kernel, "layers": layers, "runs": len(here), "unstable": sum(r["unstable"] for r in here),
                    "diverged_at_steps": [r["diverged_at_step"] for r in here if r["diverged_at_step"] is not None],
                    "mse_median": median(stable) if stable else float("nan"),
                    "mse_min": stable[0] if stable else float("nan"),
                    "mse_max": stable[-1] if stable else float("nan"), "prior_mse": here[0]["prior_mse"]})
    return out
