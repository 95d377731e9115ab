"""ZSL, ICL and K/V finetuning of one language model on the same queries of one task, and the source's
measures of their correspondence (source 003). `compare(lm, task, DaiConfig(...))` is the whole
study of one data set; `icgd reproduce dai-icl-vs-ft` runs it on the packaged data sets.

Protocol (the source's Appendix B, and the authors' code where the paper is silent):
1. Demonstrations of seed s: the first `n_demos` examples of the train split after a shuffle by s (no class
   balancing, as the authors' code); their order is the shuffle's.
2. The demonstration seed is chosen by ICL accuracy on the validation queries; the FT learning rate by the
   finetuned model's zero-shot accuracy on them, finetuning on the chosen seed's demonstrations, among the
   rates whose FT converged: its loss on those demonstrations (`lm_loss`) ends finite and no higher than it
   started (`select_lr`; the table is the result's "lr_selection"). A study where no rate converges stops
   with a one-line error.
3. On the test queries, for every seed (the source reports only the chosen one; we add the spread): ZSL,
   ICL, FT (one epoch of SGD on the key/value projections at the chosen rate, then the zero-shot prompt),
   the predictions and every measure of `icgd.lm.measures`.
Unlike the authors' code, selection uses a validation split and the numbers come from a separate test split.

Every finished stage is saved under `cache` (keyed by the model file, the task and this config), so an
interrupted study resumes where it stopped and a rerun reads the saved numbers.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator

from icgd.core.io import atomic_path, fingerprint, write_text
from icgd.data.text import TextTask
from icgd.lm import measures as M
from icgd.lm.finetune import KVSnapshot, finetune_kv, lm_loss
from icgd.lm.icl import (
    Scored,
    build_prefix,
    demonstration_ids,
    label_ids,
    query_ids,
    score,
    start_ids,
)
from icgd.sources.dai.keys import lowered
from icgd.sources.dai.per_seed import MEASURES, layer_mean, measure_seed


#: DaiConfig's fields that only say which control stages run (each stage's name carries what it depends on)
CONTROL_FIELDS = {"untrained_seeds", "untrained_keep", "lcgd", "orders", "order_queries", "bootstrap"}


class DaiConfig(BaseModel):
    """One data set's study. n_demos: demonstrations per prompt (the source: up to 32); demo_seeds: the
    demonstration draws (the best on validation is the chosen one); n_validation / n_test: queries taken
    from the task's fixed validation / test splits; lrs: the FT learning-rate grid; analysed: the analysed
    "last token" (see `icgd.lm.icl.ANALYSED`); start: what starts every sequence (`icgd.lm.icl.STARTS`:
    BOS, so the attention sink sits outside the measured slices); kendall_queries: test queries the Kendall
    measure uses (the authors' code: 100); kendall_query: the query FT's dual attention is computed with
    ("rotary": the one the attention scores with, as the authors' code's q, which is what their attention
    uses; "projection": before the rotary embedding); metric_seed: the random baselines' and the bootstrap's
    seed; bootstrap: replicates of the percentile bootstrap over seeds and queries (`bootstrap`); batch:
    queries side by side in every scoring forward (`icgd.lm.icl.score_batched`: the same log-probabilities
    and hook points to float tolerance; 1.22x faster for Gemma-3-270M on 2 CPU cores; 1: one at a time)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_demos: int = Field(32, ge=1, le=256)
    demo_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    n_validation: int = Field(200, ge=1)
    n_test: int = Field(500, ge=1)
    lrs: tuple[float, ...] = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
    analysed: Literal["label", "prompt"] = "label"
    start: Literal["bos", "tokenizer"] = "bos"
    kendall_queries: int = Field(100, ge=0)
    kendall_query: Literal["rotary", "projection"] = "rotary"
    metric_seed: int = 0
    bootstrap: int = Field(1000, ge=0)
    batch: int = Field(8, ge=1, le=256)
    #: the critics' controls (`icgd.sources.dai.controls`), on the chosen seed's demonstrations: init seeds
    #: of the untrained model (empty: no untrained control) and what it keeps of the trained one
    #: (`icgd.lm.models.UNTRAINED_KEEP`); layer-causal GD beside FT; orders of the demonstrations (0: none)
    #: on the first order_queries test queries
    untrained_seeds: tuple[int, ...] = (0, 1)
    untrained_keep: Literal["none", "io"] = "none"
    lcgd: bool = True
    orders: int = Field(4, ge=0, le=100)
    order_queries: int = Field(50, ge=1)

    @field_validator("demo_seeds")
    @classmethod
    def _seeds(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or len(set(v)) != len(v) or any(s < 0 for s in v):
            raise ValueError(f"demo_seeds: one or more distinct non-negative seeds, got {list(v)}")
        return v

    @field_validator("orders")
    @classmethod
    def _orders(cls, v: int) -> int:
        if v == 1:
            raise ValueError("orders: 0 (no order study) or at least 2 orders, got 1")
        return v

    @field_validator("untrained_seeds")
    @classmethod
    def _untrained(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if len(set(v)) != len(v) or any(s < 0 for s in v):
            raise ValueError(f"untrained_seeds: distinct non-negative seeds, got {list(v)}")
        return v

    @field_validator("lrs")
    @classmethod
    def _lrs(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not v or any(not lr > 0 for lr in v):
            raise ValueError(f"lrs: one or more positive learning rates, got {list(v)}")
        return v


class StageCache:
    """Saved stages of one study (torch files, written atomically); no directory: nothing is saved.

    Each stage's computing time goes beside it (`NAME.seconds`), and the cache counts what one run read and
    made (`tally`): a run resumed from the cache takes less than the study costs, and its report says how much
    of the study it read (a stage saved before these records: its time unknown, `None`)."""

    def __init__(self, root: Path | None, key: dict[str, Any]):
        text = json.dumps(key, sort_keys=True, default=str)
        self.dir = None if root is None else Path(root) / f"{key['task']}-{fingerprint(text)}"
        self.read: dict[str, float | None] = {}  # stage -> its recorded seconds, read from the cache
        self.made: dict[str, float] = {}  # stage -> seconds, computed by this run
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)
            write_text(self.dir / "key.json", text)

    def get(self, name: str, make):
        path = None if self.dir is None else self.dir / f"{name}.pt"
        if path is not None and path.is_file():
            try:
                value = torch.load(path, weights_only=True)
            except Exception:  # noqa: BLE001 - a file cut short by a crash is computed again
                path.unlink()
            else:
                self.read[name] = _recorded_seconds(path.with_suffix(".seconds"))
                return value
        t0 = time.perf_counter()
        value = make()
        self.made[name] = time.perf_counter() - t0
        if path is not None:
            with atomic_path(path) as tmp:
                torch.save(value, tmp)
            write_text(path.with_suffix(".seconds"), f"{self.made[name]:.3f}\n")
        return value

    def tally(self) -> dict[str, Any]:
        """What this run read from the cache and made: counts, and the seconds the read stages took when they
        were made (`None` where a read stage has no record)."""
        known = list(self.read.values())
        return {"stages_read": len(self.read), "stages_made": len(self.made),
                "stage_seconds_made": round(sum(self.made.values()), 3),
                "stage_seconds_read": None if None in known else round(sum(known), 3)}


def stages_text(t: dict[str, Any]) -> str:
    """A `StageCache.tally` as the report says it: what this call made, and what it read and when that was made."""
    earlier = ("time unknown: saved before stage times were recorded" if t["stage_seconds_read"] is None
               else f"made in {t['stage_seconds_read'] / 60:.1f} min by an earlier call")
    return (f"made {t['stages_made']} in {t['stage_seconds_made'] / 60:.1f} min; read {t['stages_read']}"
            + (f" ({earlier})" if t["stages_read"] else ""))


def _recorded_seconds(path: Path) -> float | None:
    """A stage's recorded time; `None` where there is none (saved before the records, or a crash between the
    stage and its time) or it is unreadable or not a time (not finite, negative): unknown, never taken as 0."""
    try:
        seconds = float(path.read_text())
    except (OSError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _scored_dict(s: Scored) -> dict[str, Any]:
    return {k: v for k, v in vars(s).items() if v is not None}


def stage_key(model: str, task: TextTask, cfg: DaiConfig) -> dict[str, Any]:
    """What a study's stage cache is keyed on. The controls' own settings name their stages (init seed and
    keep, LCGD rate, order and queries), so the key leaves them out: a run with fewer controls, or with one
    added, reuses every stage it shares."""
    return {"model": model, "task": task.name, "n_examples": len(task.examples), "template": task.template,
            "words": task.words, "config": cfg.model_dump(mode="json", exclude=CONTROL_FIELDS)}


def compare(lm, task: TextTask, cfg: DaiConfig = DaiConfig(), cache: str | Path | None = None,
            progress: bool = True) -> dict[str, Any]:
    """The study of one data set (see the module doc). Returns {"queries": per-query rows, "layers":
    per-seed-and-layer rows, "summary": the data set's numbers}; the rows are lists of dicts (pandas-ready)."""
    val = task.split("validation")[:cfg.n_validation]
    test = task.split("test")[:cfg.n_test]
    labels = label_ids(lm, task)
    start = start_ids(lm, cfg.start)
    q_val, q_test = query_ids(lm, task, val), query_ids(lm, task, test)
    gold_val = np.array([task.label_index(i) for i in val])
    gold_test = np.array([task.label_index(i) for i in test])
    store = StageCache(cache, stage_key(str(lm.path), task, cfg))
    sc = dict(analysed=cfg.analysed, progress=progress, batch=cfg.batch)

    def acc(logp: torch.Tensor, gold: np.ndarray) -> float:
        return float((logp.argmax(-1).numpy() == gold).mean())

    # ZSL: no demonstrations (the start tokens only)
    zsl_val = store.get("zsl-validation", lambda: score(lm, start, q_val, labels, desc="ZSL validation", **sc).logp)

    def zsl_test_run() -> dict[str, Any]:
        t0 = time.perf_counter()
        s = score(lm, start, q_test, labels, record=True, desc="ZSL test", **sc)
        return _scored_dict(s) | {"seconds": time.perf_counter() - t0}

    zsl = store.get("zsl-test", zsl_test_run)
    prefixes = {s: build_prefix(lm, task, task.demonstrations(cfg.n_demos, s), cfg.start) for s in cfg.demo_seeds}
    icl_val = {s: store.get(f"icl-validation-seed{s}", lambda s=s: score(
        lm, prefixes[s], q_val, labels, desc=f"ICL validation, seed {s}", **sc).logp) for s in cfg.demo_seeds}
    icl_val_acc = {s: acc(icl_val[s], gold_val) for s in cfg.demo_seeds}
    chosen = max(cfg.demo_seeds, key=lambda s: icl_val_acc[s])  # ties: the first seed

    def ft_examples(seed: int) -> list[list[int]]:
        return [start + d for d in demonstration_ids(lm, task, task.demonstrations(cfg.n_demos, seed))]

    def ft_validation(lr: float) -> dict[str, Any]:
        with KVSnapshot(lm.model):
            ft = finetune_kv(lm, ft_examples(chosen), lr, progress=progress)
            after = lm_loss(lm, ft_examples(chosen))
            logp = score(lm, start, q_val, labels, desc=f"FT validation, lr {lr:g}", **sc).logp
        return {"logp": logp, "losses": torch.tensor(ft.losses), "loss_after": after}

    loss_before = store.get(f"ft-loss-before-seed{chosen}", lambda: lm_loss(lm, ft_examples(chosen)))
    ft_val = {lr: store.get(f"ft-val-loss-seed{chosen}-lr{lr:g}", lambda lr=lr: ft_validation(lr)) for lr in cfg.lrs}
    ft_val_acc = {lr: acc(v["logp"], gold_val) for lr, v in ft_val.items()}
    selection = [{"dataset": task.name, "seed": chosen, "lr": lr, "loss_before": float(loss_before),
                  "loss_after": float(ft_val[lr]["loss_after"]), "validation_accuracy": ft_val_acc[lr]}
                 for lr in cfg.lrs]
    lr_star = select_lr(selection, task.name)

    per_seed = {s: store.get(f"test-seed{s}-lr{lr_star:g}", lambda s=s: measure_seed(
        lm, cfg, prefixes[s], ft_examples(s), len(start), q_test, labels, zsl, lr_star, s, progress))
        for s in cfg.demo_seeds}

    rows, layer_rows = [], []
    zsl_pred = zsl["logp"].argmax(-1).numpy()
    for s, r in per_seed.items():
        icl_pred, ft_pred = r["icl_logp"].argmax(-1).numpy(), r["ft_logp"].argmax(-1).numpy()
        means = {m: layer_mean(r[m]) for m in MEASURES}
        for j, qid in enumerate(test):
            g = int(gold_test[j])
            rows.append({"dataset": task.name, "demo_seed": s, "chosen_seed": s == chosen, "query_id": int(qid),
                         "gold": task.labels[g], "zsl_pred": task.labels[zsl_pred[j]],
                         "icl_pred": task.labels[icl_pred[j]], "ft_pred": task.labels[ft_pred[j]],
                         "zsl_correct": bool(zsl_pred[j] == g), "icl_correct": bool(icl_pred[j] == g),
                         "ft_correct": bool(ft_pred[j] == g)}
                        | {m: float(means[m][j]) for m in MEASURES})
        for layer in range(r["simaou_ft"].shape[1]):
            layer_rows.append({"dataset": task.name, "demo_seed": s, "chosen_seed": s == chosen, "layer": layer}
                              | {m: float(np.nanmean(r[m][:, layer].numpy())) for m in MEASURES})

    summary = _summary(task, cfg, rows, layer_rows, per_seed, chosen, lr_star, icl_val_acc, ft_val_acc,
                       acc(zsl_val, gold_val), zsl)
    val_correct = {s: icl_val[s].argmax(-1).numpy() == gold_val for s in cfg.demo_seeds}
    summary["bootstrap"] = bootstrap(rows, val_correct, cfg.bootstrap, cfg.metric_seed)
    from icgd.sources.dai import controls

    ctl = controls.run(lm, task, cfg, store, chosen=chosen, lr=lr_star, rows=[r for r in rows if r["chosen_seed"]],
                       q_test=q_test, labels=labels, start=start, zsl=zsl, progress=progress)
    summary |= ctl["summary"]
    summary["bootstrap"] |= ctl["bootstrap"]
    return {"queries": rows, "layers": layer_rows, "summary": summary, "lr_selection": selection,
            "untrained": ctl["untrained"], "orders": ctl["orders"], "lcgd": ctl["lcgd"],
            "stages": store.tally()}  # this call's account (what it read from the cache), not a measured number


def select_lr(rows: list[dict[str, Any]], dataset: str) -> float:
    """The FT learning rate: the best validation accuracy among the rates that converged (loss_after finite
    and <= loss_before; ties: the first in the grid). Marks every row's "converged" and "chosen" in place; a
    ValueError (one line) when no rate converged."""
    for r in rows:
        r["converged"] = lowered(r["loss_before"], r["loss_after"])
        r["chosen"] = False
    ok = [r for r in rows if r["converged"]]
    if not ok:
        tried = ", ".join(f"{r['lr']:g}: {r['loss_before']:.3g} -> {r['loss_after']:.3g}" for r in rows)
        raise ValueError(f"{dataset}: K/V finetuning converged at no learning rate of the grid (loss on the "
                         f"demonstrations before -> after: {tried}); try smaller rates")
    best = max(ok, key=lambda r: r["validation_accuracy"])  # max keeps the first of equals
    best["chosen"] = True
    return float(best["lr"])


#: what `bootstrap` resamples: the chosen seed's numbers (the source's protocol), the means over seeds, and
#: the best constant answer's accuracy (`guess_accuracy`)
BOOTSTRAPPED = ("zsl_accuracy", "icl_accuracy", "ft_accuracy", "rec2ftp", *MEASURES, "icl_accuracy_mean",
                "ft_accuracy_mean", "guess_accuracy")


def guess_accuracy(gold) -> float:
    """The accuracy of the best constant answer on these queries: the share of their most frequent label (the
    guess a learner that learnt only the label prior, or less, cannot beat)."""
    _, counts = np.unique(np.asarray(gold), return_counts=True)
    return float(counts.max() / counts.sum())


def bootstrap(rows: list[dict[str, Any]], val_correct: dict[int, np.ndarray], n: int, seed: int = 0
              ) -> dict[str, list[float]]:
    """Percentile-bootstrap replicates of one data set's numbers ({key: n values}, keys `BOOTSTRAPPED`),
    resampling the whole protocol: each replicate draws the demonstration seeds with replacement, the
    validation queries with replacement (and chooses among the drawn seeds the one with the best ICL
    accuracy on them, as the study does) and the test queries with replacement, then computes the chosen
    seed's accuracies, Rec2FTP and measures, the means over the drawn seeds and the best constant answer's
    accuracy on the drawn queries (paired with FT's, for FT's premise). The FT learning rate stays
    the one chosen (its grid is not re-run). rows: the per-query rows of `compare`; val_correct: each seed's
    ICL correctness on the validation queries."""
    import pandas as pd

    q = pd.DataFrame(rows)
    seeds = sorted(val_correct)
    by = {s: g.sort_values("query_id") for s, g in q.groupby("demo_seed")}
    col = {k: np.stack([by[s][k].to_numpy(dtype=float) for s in seeds]) for k in
           ("icl_correct", "ft_correct", *MEASURES)}  # (S, Q)
    zsl = by[seeds[0]].zsl_correct.to_numpy(dtype=bool)
    gold = by[seeds[0]].gold.to_numpy()
    icl, ft = col["icl_correct"].astype(bool), col["ft_correct"].astype(bool)
    val = np.stack([val_correct[s] for s in seeds]).astype(float)  # (S, V)
    rng = np.random.default_rng(seed)
    n_s, n_q, n_v = len(seeds), len(zsl), val.shape[1]
    out: dict[str, list[float]] = {k: [] for k in BOOTSTRAPPED}
    for _ in range(n):
        sd = rng.integers(n_s, size=n_s)
        vi, ti = rng.integers(n_v, size=n_v), rng.integers(n_q, size=n_q)
        c = int(sd[np.argmax(val[sd][:, vi].mean(1))])  # argmax keeps the first of equals
        z, i, f = zsl[ti], icl[c, ti], ft[c, ti]
        fixed = f & ~z
        rep = {"zsl_accuracy": z.mean(), "icl_accuracy": i.mean(), "ft_accuracy": f.mean(),
               "rec2ftp": 100.0 * i[fixed].mean() if fixed.any() else np.nan,
               "icl_accuracy_mean": icl[sd][:, ti].mean(), "ft_accuracy_mean": ft[sd][:, ti].mean(),
               "guess_accuracy": guess_accuracy(gold[ti])}
        for m in MEASURES:
            v = col[m][c, ti]
            rep[m] = np.nanmean(v) if np.isfinite(v).any() else np.nan
        for k in BOOTSTRAPPED:
            out[k].append(float(rep[k]))
    return out


def _mean_std(x: list[float]) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    return float(np.mean(a)), float(np.std(a, ddof=1)) if len(a) > 1 else 0.0


def _summary(task: TextTask, cfg: DaiConfig, rows, layer_rows, per_seed, chosen: int, lr: float,
             icl_val_acc: dict[int, float], ft_val_acc: dict[float, float], zsl_val_acc: float,
             zsl: dict[str, Any]) -> dict[str, Any]:
    """The data set's numbers: the chosen seed's (the source's protocol) and the mean and spread over seeds."""
    import pandas as pd

    q = pd.DataFrame(rows)
    lay = pd.DataFrame(layer_rows)
    out: dict[str, Any] = {"dataset": task.name, "n_test": int(q.query_id.nunique()), "n_demos": cfg.n_demos,
                           "chosen_seed": chosen, "chosen_lr": lr, "zsl_validation_accuracy": zsl_val_acc,
                           "icl_validation_accuracy": {str(s): a for s, a in icl_val_acc.items()},
                           "ft_validation_accuracy": {f"{k:g}": a for k, a in ft_val_acc.items()},
                           "zsl_accuracy": float(q[q.chosen_seed].zsl_correct.mean()),
                           "guess_accuracy": guess_accuracy(q[q.chosen_seed].gold)}
    per: dict[str, list[float]] = {}
    for s, g in q.groupby("demo_seed"):
        rec, n_fixed = M.rec2ftp(g.zsl_correct, g.ft_correct, g.icl_correct)
        vals = {"icl_accuracy": float(g.icl_correct.mean()), "ft_accuracy": float(g.ft_correct.mean()),
                "rec2ftp": rec, "rec2ftp_denominator": n_fixed}
        # the source's tables: mean over queries per layer, then over layers
        vals |= {m: float(lay[lay.demo_seed == s][m].mean()) for m in MEASURES}
        for k, v in vals.items():
            per.setdefault(k, []).append(v)
            if s == chosen:
                out[k] = v
    for k, v in per.items():
        finite = [x for x in v if np.isfinite(x)]
        out[f"{k}_mean"], out[f"{k}_std"] = _mean_std(finite) if finite else (float("nan"), float("nan"))
        out[f"{k}_min"], out[f"{k}_max"] = (min(finite), max(finite)) if finite else (float("nan"), float("nan"))
    out["ft_seconds_per_set"] = float(np.mean([r["ft_seconds"] for r in per_seed.values()]))
    out["icl_queries_per_second"] = float(np.mean([len(r["icl_logp"]) / r["icl_seconds"] for r in per_seed.values()]))
    out["zsl_queries_per_second"] = len(zsl["logp"]) / zsl["seconds"]
    return out
