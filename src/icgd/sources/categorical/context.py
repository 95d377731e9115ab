"""Softmax models trained at N = 20 applied unchanged at N = 5 .. 160, against the RBF kernel with and
without the 1/N rescaled; MSE at the quadrant centres (Fig. 4 right): `categorical-context`."""

from __future__ import annotations

from typing import Any

import torch

from icgd.experiments.common import (
    Size,
    median,
    seed_learners,
)
from icgd.experiments.registry import DocTable, ExperimentContext, register
from icgd.learners.kernel_gd import KernelGD
from icgd.nn.kernels import get_kernel
from icgd.results.figures import subplots
from icgd.sources.categorical.keys import (
    CONTEXT_FIXED_OVER_RESCALED,
    CONTEXT_INVARIANCE,
    CONTEXT_MAX_RATIO,
    CONTEXT_MSE,
    CONTEXT_RETRAINED_LARGEST_N,
    CONTEXT_TF_OVER_GD_MAX,
    CONTEXT_TF_OVER_GD_MAX_SEEDS,
    CONTEXT_UNCHANGED_OVER_RETRAINED,
)
from icgd.sources.categorical.shared import (
    GD_LR,
    GD_STEPS,
    N_TRAIN,
    SOURCE,
    TF_STEPS,
    cat_config,
    declared,
    gd_config,
    gd_model,
    held_out,
    score,
    task,
    tf_model,
    train,
    train_or_diverge,
)
from icgd.train.config import TrainConfig

CONTEXT_SIZES = (5, 10, 20, 40, 80, 160)

CONTEXT_TASKS = Size(quick=2048, full=10_000, smoke=64)

#: the context sizes at which the GD models are also trained (the invariance claims' reference): quick mode
#: leaves out 80 and 160, whose training took 2.5 of the quick suite's minutes
RETRAINED_SIZES = {"quick": (5, 10, 20, 40), "full": CONTEXT_SIZES, "smoke": CONTEXT_SIZES}


#: the normalised kernel of the claims and an unnormalised one
KERNELS = ("softmax", "rbf")


def _configs(ctx: ExperimentContext) -> dict[tuple[str, Any], TrainConfig]:
    """{(kernel, "gd" or "tf"): the models trained at N = 20; (kernel, N): the GD model trained at N}."""
    out: dict[tuple[str, Any], TrainConfig] = {}
    for kernel in KERNELS:
        out[kernel, "gd"] = gd_config(ctx, kernel)
        out[kernel, "tf"] = cat_config(ctx, f"cat-tf-{kernel}", tf_model(kernel), TF_STEPS)
        out.update({(kernel, n): retrained_config(ctx, kernel, n) for n in RETRAINED_SIZES[ctx.mode]})
    return out


# ------------------------------------------------------------------------------------ context size
@register("categorical-context", "softmax models trained at N = 20 applied at N = 5..160 vs RBF with and "
          "without the 1/N rescaled, and vs the GD models retrained at each N (quick: up to 40); MSE at the "
          "quadrant centres (Fig. 4 right)", SOURCE, quick_minutes=1,
          full_minutes=12, models=lambda ctx: declared(_configs(ctx).values()),
          doc_tables=(DocTable("context_size", "Context size: MSE at the quadrant centres (median seed) of the models "
                               "trained at N = 20 applied unchanged at each N (RBF: also with its 1/N rescaled to "
                               "N = 20's), against the GD models retrained at that N"),))
def context_size(ctx: ExperimentContext) -> None:
    configs = _configs(ctx)
    models: dict[str, list[Any]] = {}
    normalized: dict[str, bool] = {}  # a normalised kernel needs no 1/N: it is applied unchanged at every N
    for kernel in KERNELS:
        gd_res = train(ctx, configs[kernel, "gd"])
        tf_res, _ = train_or_diverge(ctx, configs[kernel, "tf"])
        models[f"{kernel}_gd"] = seed_learners(gd_res)[:1]
        models[f"{kernel}_tf"] = [] if tf_res is None else seed_learners(tf_res)
        normalized[f"{kernel}_gd"] = normalized[f"{kernel}_tf"] = get_kernel(kernel).normalized
    rows = []
    series: dict[str, list[float]] = {}
    tf_seeds: list[list[float]] = []  # softmax TF: MSE of each seed at each N
    for n in CONTEXT_SIZES:
        ep = held_out(ctx, n_context=n, queries="centres", n=CONTEXT_TASKS)
        row: dict[str, Any] = {"n_context": n}
        for name, ls in models.items():
            variants = [("", 1.0)] if normalized[name] else [("_fixed", 1.0), ("_rescaled", N_TRAIN / n)]
            for suffix, factor in variants:
                per_seed = [score(_rescaled(m, factor), ep) for m in ls]
                if name == "softmax_tf":
                    tf_seeds.append(per_seed)
                mse = median(per_seed) if ls else float("nan")
                key = name + suffix
                row[key] = ctx.result(CONTEXT_MSE.format(model=key, n=n), mse)
                series.setdefault(key, []).append(mse)
        for kernel in KERNELS:  # the GD model trained at this N itself: what invariance is measured against
            if n not in RETRAINED_SIZES[ctx.mode]:
                continue
            key = f"{kernel}_gd_trained_here"
            res = train(ctx, configs[kernel, n])
            row[key] = ctx.result(CONTEXT_MSE.format(model=key, n=n), score(seed_learners(res)[0], ep))
            series.setdefault(key, []).append(row[key])
        rows.append(row)
    ctx.table("context_size", rows)
    for key, ys in series.items():
        ratios = [b / a for a, b in zip(ys, ys[1:])]
        ctx.result(CONTEXT_MAX_RATIO.format(model=key), max(ratios) if ratios else float("nan"))
    ctx.result(CONTEXT_FIXED_OVER_RESCALED, series["rbf_gd_fixed"][-1] / series["rbf_gd_rescaled"][-1])
    tf_gd = [abs(t / g - 1) for t, g in zip(series["softmax_tf"], series["softmax_gd"])]
    ctx.result(CONTEXT_TF_OVER_GD_MAX, max(tf_gd))
    if tf_seeds and tf_seeds[0]:
        ctx.result(CONTEXT_TF_OVER_GD_MAX_SEEDS, [max(abs(at_n[i] / g - 1) for at_n, g in zip(tf_seeds, series["softmax_gd"]))
                                                 for i in range(len(tf_seeds[0]))])
    # invariance as the source means it: the model trained at N = 20, applied unchanged at N', against the same
    # model trained at N'
    at = [i for i, n in enumerate(CONTEXT_SIZES) if n in RETRAINED_SIZES[ctx.mode]]
    ctx.result(CONTEXT_INVARIANCE.format(model="softmax_gd"),
               max(abs(series["softmax_gd"][i] / b - 1) for i, b in zip(at, series["softmax_gd_trained_here"])))
    ctx.result(CONTEXT_UNCHANGED_OVER_RETRAINED.format(model="rbf_gd"),
               series["rbf_gd_fixed"][at[-1]] / series["rbf_gd_trained_here"][-1])
    ctx.result(CONTEXT_RETRAINED_LARGEST_N, CONTEXT_SIZES[at[-1]])
    fig, (ax,) = subplots(1, width=5.4, height=3.8)
    styles = {"softmax_gd": ("C0", "--"), "softmax_tf": ("C0", "-"), "rbf_gd_fixed": ("C1", "--"),
              "rbf_gd_rescaled": ("C2", "--"), "rbf_tf_fixed": ("C1", "-"), "rbf_tf_rescaled": ("C2", "-"),
              "softmax_gd_trained_here": ("C0", ":"), "rbf_gd_trained_here": ("C3", ":")}
    for key, ys in series.items():
        color, ls = styles.get(key, (None, "-"))
        xs = [n for n in CONTEXT_SIZES if n in RETRAINED_SIZES[ctx.mode]] if key.endswith("_trained_here") else CONTEXT_SIZES
        ax.plot(xs, ys, marker="o", color=color, ls=ls, label=key.replace("_", " "))
    ax.axvline(N_TRAIN, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("context size N at inference (trained at N = 20)")
    ax.set_ylabel("MSE at the quadrant centres")
    ax.legend(fontsize=7)
    ctx.figure("context_size", fig)
    ctx.report("softmax trained at one N applies unchanged to other N and improves with N",
               "softmax GD: " + " / ".join(f"{v:.4f}" for v in series["softmax_gd"]) + " at N = "
               + " / ".join(map(str, CONTEXT_SIZES)))
    ctx.report("other kernels need the 1/N rescaled",
               f"RBF GD at N = {CONTEXT_SIZES[-1]}: {series['rbf_gd_fixed'][-1]:.4f} unchanged, "
               f"{series['rbf_gd_rescaled'][-1]:.4f} rescaled")


def retrained_config(ctx: ExperimentContext, kernel: str, n: int):
    """The GD model of `kernel` trained at context size `n` (the reference of the invariance claims; at n = 20
    the model every experiment trains)."""
    if n == N_TRAIN:
        return gd_config(ctx, kernel)
    return cat_config(ctx, f"cat-gd-{kernel}-n{n}", gd_model(kernel), GD_STEPS, seeds=ctx.seeds[:1], lr=GD_LR,
                      task_spec=task(n).model_dump())


def _rescaled(learner: Any, factor: float) -> Any:
    """The learner with its update scaled by `factor` (N_train / N: eta / N instead of eta / N_train)."""
    if factor == 1.0:
        return learner
    import copy

    m = copy.deepcopy(learner)
    with torch.no_grad():
        if isinstance(m, KernelGD):
            m.n_scale = None  # divide by the episodes' own N
        else:  # a stack: every head's P
            for block in m.model.layers:
                block.attn.w_o.mul_(factor)
    return m
