"""Momentum attention's beta: the fixed value of the other momentum studies, a sweep over beta, and a beta
learnt per head, on the synthetic tasks where small models learn in context: `momentum-beta`.

Source 003 gives beta as a fixed scalar whose value our text of it lacks; the momentum studies fix 0.5
(`MOMENTUM_BETA`). Here each task (associative recall with N = 8 pairs, `momentum-recall`'s models; bursty
few-shot classification with K = 2 shots, `momentum-fewshot`'s) trains vanilla attention, momentum
attention at each beta of `BETAS`, and momentum attention with one beta per head learnt from 0.5 (stored as
a logit, so it stays in (0, 1)), all with the same seeds, batches and steps. Each is scored on the same
held-out sequences; the difference from vanilla comes with the paired interval of `paired.bootstrap_means`.

The same sweep from the command line, one run per beta (`icgd sweep`, resumable, on Ray with --workers):

    icgd reproduce momentum-recall --quick --plan --json   # the configs; or examples/momentum-recall.yaml
    icgd sweep examples/momentum-recall.yaml model.attention.momentum=0.1,0.3,0.5,0.7,0.9 --seeds 3
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icgd.experiments.common import Size, size
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.figures import label_axes, subplots
from icgd.sources.momentum import bursty, recall
from icgd.sources.momentum.language import MOMENTUM_BETA, SOURCE
from icgd.sources.momentum.paired import bootstrap_means, score_models

#: the fixed betas swept (the momentum studies' 0.5 among them)
BETAS = (0.1, 0.3, 0.5, 0.7, 0.9)
#: the setting of each task: recall's number of pairs, few-shot's shots per class (smoke: their smoke ones)
SETTING = {"recall": {"smoke": 2, "quick": 8, "full": 8}, "fewshot": {"smoke": 1, "quick": 2, "full": 2}}
TEST = Size(quick=2048, full=4096, smoke=16)
TEST_SEED = 20_261_129
BOOT = Size(quick=1000, full=2000, smoke=50)


def _variants() -> list[tuple[str, dict[str, Any]]]:
    """(name, the attention options) of each model: vanilla, each fixed beta, learnt."""
    return ([("vanilla", {})] + [(f"beta{b:g}", {"momentum": b}) for b in BETAS]
            + [("learnt", {"momentum": MOMENTUM_BETA, "learn_momentum": True})])


def _config(ctx: ExperimentContext, task: str, variant: str, attention: dict[str, Any]):
    """The task's model of its own study (`momentum-recall`, `momentum-fewshot`) with these attention options:
    vanilla and beta 0.5 are those studies' very configs, so a shared --cache trains them once."""
    n = SETTING[task][ctx.mode]
    study = recall.recall_config if task == "recall" else bursty.fewshot_config
    if variant == "vanilla" or attention == {"momentum": MOMENTUM_BETA}:
        return study(ctx, n, variant != "vanilla")
    from icgd.train.config import build_config

    raw = study(ctx, n, False).model_dump(mode="json")
    raw["model"]["attention"] |= attention
    return build_config(raw | {"name": raw["name"].replace("vanilla", variant)})


def _labels(ctx: ExperimentContext) -> dict[tuple[str, str], Any]:
    """(task, variant) -> its config; the config's name is its cache label, so that vanilla and 0.5 are the
    very runs of `momentum-recall` and `momentum-fewshot` in a shared cache."""
    return {(task, name): _config(ctx, task, name, att) for task in SETTING for name, att in _variants()}


def _models(ctx: ExperimentContext) -> dict[str, Any]:
    return {cfg.name: cfg for cfg in _labels(ctx).values()}


@register("momentum-beta", "momentum attention's beta on associative recall and bursty few-shot classification: "
          "vanilla, fixed beta in 0.1..0.9, and beta learnt per head, each against vanilla with a paired "
          "bootstrap interval; the learnt betas", SOURCE, quick_minutes=34, full_minutes=250, models=_models,
          deviations=("the source fixes beta (its value is lost from our text); the sweep and the learnt beta "
                      "are this library's additions",))
def beta(ctx: ExperimentContext) -> None:
    import torch

    from icgd.core.episodes import make_generator
    from icgd.tasks.recall import recall_accuracy

    configs = _labels(ctx)
    runs = {f"{task}-{name}": ctx.train(cfg.name, cfg) for (task, name), cfg in configs.items()}
    names = tuple(name for name, _ in _variants())
    rows, learnt_rows = [], []
    for task in SETTING:
        t = configs[(task, "vanilla")].task
        t = t.query_only() if hasattr(t, "query_only") else t  # few-shot: the query's accuracy
        tests = {task: t.sample(size(ctx, TEST), make_generator(TEST_SEED))}
        _, acc = score_models(ctx, runs, tests, "{n}-{model}", lambda m, ep: recall_accuracy(m.predict(ep), ep.query_y),
                              "task", "accuracy", models=names)
        boot = bootstrap_means({name: acc[(task, name)] for name in names}, size(ctx, BOOT),
                               np.random.default_rng(TEST_SEED))
        for name in names:
            a, van = acc[(task, name)], acc[(task, "vanilla")]
            lo, hi = np.percentile(boot[name] - boot["vanilla"], [2.5, 97.5]).tolist()
            rows.append({"task": task, "model": name, "accuracy": float(a.mean()),
                         "seed_accuracies": a.mean(1).round(4).tolist(), "difference": float(a.mean() - van.mean()),
                         "low": lo, "high": hi})
            ctx.result(f"{task}.{name}.accuracy", float(a.mean()))
            ctx.result(f"{task}.{name}.difference_interval", [lo, hi])
        res = runs[f"{task}-learnt"]
        for seed in res.config.seeds:
            for li, layer in enumerate(res.learner(seed).stack.layers):
                for h, b in enumerate(torch.sigmoid(layer.attn.momentum_logit).tolist()):
                    learnt_rows.append({"task": task, "seed": seed, "layer": li, "head": h, "beta": b})
    ctx.table("beta", rows)
    ctx.table("learnt_beta", learnt_rows)
    _report(ctx, rows, learnt_rows)
    _figure(ctx, rows, learnt_rows)


def _report(ctx: ExperimentContext, rows, learnt_rows) -> None:
    for task in SETTING:
        mine = [r for r in rows if r["task"] == task]
        van = next(r for r in mine if r["model"] == "vanilla")
        ctx.report(f"{task}: accuracy by beta (momentum minus vanilla, 95% interval)",
                   f"vanilla {van['accuracy']:.3f}; " + "; ".join(
                       f"{r['model']} {r['accuracy']:.3f} ({r['difference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}])"
                       for r in mine if r["model"] != "vanilla"))
        betas = [r["beta"] for r in learnt_rows if r["task"] == task]
        ctx.report(f"{task}: the learnt betas (from 0.5, per layer and head, over seeds)",
                   f"min {min(betas):.3f}, median {float(np.median(betas)):.3f}, max {max(betas):.3f} "
                   f"({len(betas)} heads)")


def _figure(ctx: ExperimentContext, rows, learnt_rows) -> None:
    fig, axes = subplots(len(SETTING), width=4.2, height=3.2)
    for ax, task in zip(axes, SETTING):
        mine = {r["model"]: r for r in rows if r["task"] == task}
        fixed = [mine[f"beta{b:g}"] for b in BETAS]
        # each seed's accuracy beside the mean (the paired intervals of the differences are in beta.csv: an
        # interval of a difference drawn around an accuracy left [0, 1])
        ax.plot(BETAS, [r["accuracy"] for r in fixed], "o-", color="C1", label="fixed beta (mean over seeds)")
        for b, r in zip(BETAS, fixed):
            ax.plot([b] * len(r["seed_accuracies"]), r["seed_accuracies"], ".", color="C1", alpha=0.5)
        ax.axhline(mine["vanilla"]["accuracy"], color="C0", ls="--", label="vanilla (mean; its seeds at left)")
        ax.plot([0.0] * len(mine["vanilla"]["seed_accuracies"]), mine["vanilla"]["seed_accuracies"], ".",
                color="C0", alpha=0.5)
        ax.set_ylim(-0.02, 1.05)
        betas = [r["beta"] for r in learnt_rows if r["task"] == task]
        ax.plot([float(np.median(betas))], [mine["learnt"]["accuracy"]], "k*", ms=10, label="learnt (median beta)")
        ax.legend(fontsize=7)
    label_axes(axes, [f"{t}: accuracy by beta" for t in SETTING], ["held-out accuracy"] * len(SETTING),
               xlabel="beta")
    ctx.figure("beta", fig)
