"""The premise of source 003's comparison, alone: does a model learn in context on a task at all?

Dai et al. compare ICL with finetuning on models where ICL beats zero-shot (their Table 1). Before the
whole study (`icgd.sources.dai.study`, which also finetunes), `premise(lm, task, cfg)` measures only that: ZSL and
ICL accuracy on the same test queries, ICL with the demonstrations of every seed of `cfg.demo_seeds` (drawn
as the study draws them, `compare.demonstrations`), and the difference "ICL averaged over the seeds minus
ZSL" with a percentile-bootstrap interval over the seeds and the test queries (`premise_interval`). The
premise holds where the interval's lower end is above zero, the rule of `dai-icl-vs-ft`'s claim
`premise-icl-beats-zsl`. No finetuning and no recording, so it costs ZSL plus one ICL pass per seed.
`icgd reproduce dai-premise` runs it over models and data sets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from icgd.data.text import TextTask
from icgd.lm.icl import build_prefix, label_ids, query_ids, score, start_ids
from icgd.sources.dai.study import DaiConfig, StageCache


def percentile_interval(values, level: float = 95.0) -> tuple[float, float]:
    """The central `level`% of bootstrap replicates (the percentile interval); (nan, nan) when there are none.
    The one rule for the premise's interval: `premise_interval` here and `dai-icl-vs-ft` (over `compare`'s
    replicates) both use it."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    low, high = np.percentile(v, [(100 - level) / 2, (100 + level) / 2])
    return float(low), float(high)


def premise_holds(low: float) -> bool:
    """The premise holds where its interval's lower end is above zero (NaN: it does not)."""
    return bool(low > 0)


def premise_interval(zsl_correct: np.ndarray, icl_correct: np.ndarray, n: int, seed: int = 0,
                     level: float = 95.0) -> tuple[float, float]:
    """Percentile-bootstrap interval of mean(ICL over seeds) - ZSL accuracy. zsl_correct: (Q,) booleans;
    icl_correct: (S, Q) booleans, a row per demonstration seed, the same queries in the same order. Each
    replicate draws the seeds and the queries with replacement; (nan, nan) when n is 0."""
    zsl = np.asarray(zsl_correct, dtype=float)
    icl = np.asarray(icl_correct, dtype=float)
    if icl.ndim != 2 or icl.shape[1] != zsl.shape[0]:
        raise ValueError(f"icl_correct must be (seeds, {zsl.shape[0]} queries), got {icl.shape}")
    if n == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    n_s, n_q = icl.shape
    diffs = np.empty(n)
    for b in range(n):
        sd, ti = rng.integers(n_s, size=n_s), rng.integers(n_q, size=n_q)
        diffs[b] = icl[sd][:, ti].mean() - zsl[ti].mean()
    return percentile_interval(diffs, level)


def premise(lm, task: TextTask, cfg: DaiConfig = DaiConfig(), cache: str | Path | None = None,
            progress: bool = True) -> dict[str, Any]:
    """ZSL and ICL of every demonstration seed on the task's first `cfg.n_test` test queries. Returns
    {"queries": rows (dataset, demo_seed, query_id, gold, zsl_correct, icl_correct), "summary": {dataset,
    n_test, n_demos, seeds, zsl_accuracy, icl_accuracy_mean/std/min/max, premise, premise_low, premise_high,
    holds}, "stages": what this call made and read (`StageCache.tally`)}. Stages are saved under `cache` as
    `compare`'s are, so a rerun reads them."""
    test = task.split("test")[:cfg.n_test]
    labels, start, queries = label_ids(lm, task), start_ids(lm, cfg.start), query_ids(lm, task, test)
    gold = np.array([task.label_index(i) for i in test])
    store = StageCache(cache, {"study": "premise", "model": str(lm.path), "task": task.name,
                           "n_examples": len(task.examples), "template": task.template, "words": task.words,
                           "n_test": cfg.n_test, "n_demos": cfg.n_demos, "start": cfg.start, "batch": cfg.batch})
    zsl = store.get("zsl", lambda: score(lm, start, queries, labels, progress=progress, desc="ZSL", batch=cfg.batch).logp)
    icl = {s: store.get(f"icl-seed{s}", lambda s=s: score(
        lm, build_prefix(lm, task, task.demonstrations(cfg.n_demos, s), cfg.start), queries, labels,
        progress=progress, desc=f"ICL, seed {s}", batch=cfg.batch).logp) for s in cfg.demo_seeds}
    zsl_ok = zsl.argmax(-1).numpy() == gold
    icl_ok = np.stack([icl[s].argmax(-1).numpy() == gold for s in cfg.demo_seeds])
    rows = [{"dataset": task.name, "demo_seed": s, "query_id": int(q), "gold": task.labels[gold[j]],
             "zsl_correct": bool(zsl_ok[j]), "icl_correct": bool(icl_ok[i, j])}
            for i, s in enumerate(cfg.demo_seeds) for j, q in enumerate(test)]
    per_seed = icl_ok.mean(1)
    low, high = premise_interval(zsl_ok, icl_ok, cfg.bootstrap, cfg.metric_seed)
    diff = float(per_seed.mean() - zsl_ok.mean())
    summary = {"dataset": task.name, "n_test": len(test), "n_demos": cfg.n_demos, "seeds": len(cfg.demo_seeds),
               "zsl_accuracy": float(zsl_ok.mean()), "icl_accuracy_mean": float(per_seed.mean()),
               "icl_accuracy_std": float(per_seed.std(ddof=1)) if len(per_seed) > 1 else 0.0,
               "icl_accuracy_min": float(per_seed.min()), "icl_accuracy_max": float(per_seed.max()),
               "premise": diff, "premise_low": low, "premise_high": high, "holds": premise_holds(low)}
    return {"queries": rows, "summary": summary, "stages": store.tally()}  # this call's account, not a measure
