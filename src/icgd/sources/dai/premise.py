"""Which language model learns in context on the study's data sets: ZSL and ICL accuracy,
ICL with the demonstrations of every seed, and the premise "ICL averaged over the seeds beats ZSL" with its
95% bootstrap interval (`icgd.sources.dai.premise_study`), for every model and data set: `dai-premise`.

Models: `--model` (comma-separated), else every packaged model whose package is installed, smallest first.
Data sets: `--data`, else BBC News and the tweets (the full suite's two) in every mode. The result key
`smallest_model_where_premise_holds` names the smallest model whose premise holds on every data set: the rule
by which `dai-icl-vs-ft`'s default model (`DEFAULT_MODEL`) was chosen.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icgd.core.io import atomic_path
from icgd.experiments.common import size
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.figures import subplots
from icgd.sources.dai.icl_vs_ft import N_DEMOS, N_TEST, SOURCE, STAGES

#: result keys: "{model}.{dataset}.premise" (ICL mean minus ZSL), "{model}.{dataset}.premise_interval"
PREMISE_AT = "{model}.{dataset}.premise"
INTERVAL_AT = "{model}.{dataset}.premise_interval"
SMALLEST = "smallest_model_where_premise_holds"


def models(ctx: ExperimentContext) -> list[Any]:
    """options["model"]: a name, a comma-separated list, a list, or a loaded LM; else the installed packaged ones."""
    from icgd.data.packaged import package_dir
    from icgd.lm.models import LM, PACKAGED

    m = ctx.options.get("model")
    if isinstance(m, (LM, list, tuple)):
        return list(m) if isinstance(m, (list, tuple)) else [m]
    if m:
        return [s.strip() for s in str(m).split(",") if s.strip()]
    return [name for name, p in PACKAGED.items() if package_dir(p.package) is not None]


@register("dai-premise", "does each language model learn in context? ZSL vs ICL accuracy over demonstration seeds "
          "with a bootstrap interval, per model and data set (Table 1's premise)", SOURCE, quick_minutes=20,
          full_minutes=60)
def dai_premise(ctx: ExperimentContext) -> None:
    import pandas as pd

    from icgd.data.text import load_task
    from icgd.lm.models import LM, check, load_lm
    from icgd.sources.dai.premise_study import premise
    from icgd.sources.dai.study import DaiConfig, stages_text

    names = tuple(ctx.options.get("data") or ("bbc-news", "tweets"))
    tasks = [load_task(n) for n in names]  # a bad data set fails before any model loads
    todo = models(ctx)
    if not todo:
        raise ValueError("no packaged language model is installed: python3 -m pip install -e '.[lm]'")
    for m in todo:  # every model found and its file's header read before the first loads: a bad one fails at once
        if not isinstance(m, LM):
            check(m)
    cfg = DaiConfig(n_demos=size(ctx, N_DEMOS), demo_seeds=tuple(ctx.seeds), n_test=size(ctx, N_TEST))
    ctx.result("config", cfg.model_dump(mode="json", include={"n_demos", "demo_seeds", "n_test", "start", "batch",
                                                               "bootstrap", "metric_seed"}))
    ctx.result("datasets", list(names))
    rows, summaries = [], []
    stages = ctx.result(STAGES, {})  # per "{model}.{dataset}": what this call made and read from the stage cache
    for m in todo:
        lm = m if isinstance(m, LM) else load_lm(m, device=ctx.device)
        for task in tasks:
            r = premise(lm, task, cfg, cache=ctx.cache / f"dai-{lm.name.replace('/', '_')}", progress=not ctx.quiet)
            s = {"model": lm.name, "parameters": sum(p.numel() for p in lm.model.parameters())} | r["summary"]
            summaries.append(s)
            rows += [{"model": lm.name} | q for q in r["queries"]]
            ctx.result(PREMISE_AT.format(model=lm.name, dataset=task.name), s["premise"])
            ctx.result(INTERVAL_AT.format(model=lm.name, dataset=task.name), [s["premise_low"], s["premise_high"]])
            stages[f"{lm.name}.{task.name}"] = r["stages"]
        del lm
    tab = pd.DataFrame(summaries)
    holds = tab.groupby("model", sort=False).agg(holds=("holds", "all"), parameters=("parameters", "first"))
    ok = holds[holds.holds].sort_values("parameters")
    ctx.result(SMALLEST, str(ok.index[0]) if len(ok) else None)
    with atomic_path(ctx.out / "premise.parquet") as tmp:
        pd.DataFrame(rows).to_parquet(tmp, index=False)
    ctx.table("premise", summaries)
    _figure(ctx, tab)
    for s in summaries:
        ctx.report(f"{s['model']} on {s['dataset']}: ICL beats ZSL (Table 1's premise)",
                   f"ZSL {s['zsl_accuracy']:.3f}, ICL {s['icl_accuracy_mean']:.3f} +- {s['icl_accuracy_std']:.3f} "
                   f"over {s['seeds']} seeds ({s['n_demos']} demonstrations, {s['n_test']} test queries): "
                   f"{s['premise']:+.3f}, 95% interval [{s['premise_low']:+.3f}, {s['premise_high']:+.3f}]: "
                   + ("holds" if s["holds"] else "**does not hold**"))
        ctx.report(f"{s['model']} on {s['dataset']}: the study's stages, made by this call or read from the stage "
                   "cache (--cache)", stages_text(ctx.results[STAGES][f"{s['model']}.{s['dataset']}"]))
    ctx.note(f"Smallest model where the premise holds on every data set: {ctx.results[SMALLEST]}. Per-query "
             "correctness: premise.parquet.")


def _figure(ctx: ExperimentContext, tab) -> None:
    """ZSL and ICL (mean over seeds, min-max bar) per model, one panel per data set."""
    sets = list(dict.fromkeys(tab.dataset))
    fig, axes = subplots(len(sets), width=4.2, height=3.2)
    for ax, d in zip(axes, sets):
        t = tab[tab.dataset == d]
        x = np.arange(len(t))
        ax.bar(x - 0.2, t.zsl_accuracy, 0.4, label="ZSL")
        err = np.clip(np.stack([t.icl_accuracy_mean - t.icl_accuracy_min, t.icl_accuracy_max - t.icl_accuracy_mean]),
                      0, None)  # equal seeds: a rounding error below zero
        ax.bar(x + 0.2, t.icl_accuracy_mean, 0.4, yerr=err, capsize=3, label="ICL (seeds: mean, min-max)")
        ax.set_xticks(x, list(t.model), rotation=20, fontsize=7)
        ax.set_title(d)
        ax.set_ylabel("test accuracy")
    axes[0].legend(fontsize=7)
    fig.suptitle("Does the model learn in context?")
    ctx.figure("premise", fig)
