"""Exponential against softmax attention, every weight trained, with 1 to 3 (full 4) layers; the seeds
train batched and, when a run diverges, the seeds with a non-finite loss are recorded with the step and
the others train on (the source's text on stability): `categorical-depth`."""

from __future__ import annotations

from typing import Any

from icgd.experiments.categorical.keys import DEPTH_RUNS, DEPTH_UNSTABLE
from icgd.experiments.categorical.shared import (
    SOURCE,
    TF_STEPS,
    cat_config,
    held_out,
    prior_learner,
    score,
    tf_model,
)
from icgd.experiments.common import (
    Size,
    seed_learners,
    size,
)
from icgd.experiments.registry import ExperimentContext, register
from icgd.train.engine import TrainingDiverged

DEPTHS = Size(quick=3, full=4, smoke=2)


# ------------------------------------------------------------------------------------------ depth
@register("categorical-depth", "exponential vs softmax attention, every weight trained, 1-3 layers (full 1-4): "
          "divergence and MSE per seed (the source's text on stability)", SOURCE, quick_minutes=2, full_minutes=40)
def depth(ctx: ExperimentContext) -> None:
    ep = held_out(ctx)
    prior = score(prior_learner(ep.dy), ep)
    rows = []
    for kernel in ("softmax", "exponential"):
        unstable = runs = 0
        for layers in range(1, size(ctx, DEPTHS) + 1):
            for seed, res, diverged_at in seeds_until_diverged(ctx, kernel, layers):
                mse = float("nan") if res is None else score(res, ep)
                bad = res is None or not mse < prior
                unstable += bad
                runs += 1
                rows.append({"kernel": kernel, "layers": layers, "seed": seed, "diverged_at_step": diverged_at,
                             "mse": mse, "prior_mse": prior, "unstable": bad})
        ctx.result(DEPTH_UNSTABLE.format(kernel=kernel), unstable)
        ctx.result(DEPTH_RUNS.format(kernel=kernel), runs)
        ctx.report(f"{kernel}: training stability with depth",
                   f"{unstable} of {runs} runs diverged or ended above the prior's MSE ({prior:.4f})")
    ctx.table("depth", rows)


def seeds_until_diverged(ctx: ExperimentContext, kernel: str, layers: int) -> list[tuple[int, Any, int | None]]:
    """[(seed, trained learner or None, step of divergence or None)] for every seed: the seeds train batched
    (the 1-layer run is the one categorical-gd-vs-tf trains); when a run diverges, the seeds whose loss was
    non-finite are recorded and the others train again without them."""
    out: list[tuple[int, Any, int | None]] = []
    todo = list(ctx.seeds)
    while todo:
        label = f"cat-tf-{kernel}" + (f"-l{layers}" if layers > 1 else "")
        if todo != ctx.seeds:
            label += "-s" + "_".join(map(str, todo))
        try:
            res = ctx.train(label, cat_config(ctx, label, tf_model(kernel, n_layers=layers), TF_STEPS, seeds=todo))
        except TrainingDiverged as e:
            bad = e.seeds or list(todo)
            out += [(s, None, e.step) for s in bad]
            todo = [s for s in todo if s not in bad]
            continue
        out += [(s, m, None) for s, m in zip(todo, seed_learners(res))]
        todo = []
    return sorted(out, key=lambda t: t[0])
