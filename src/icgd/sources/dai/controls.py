"""The controls that later papers showed source 003's comparison needs, run beside it on the same prompts
(`icgd.sources.dai.study.compare` calls `run` once the chosen seed and FT rate are known):

- **The untrained model** (Deutch, Magar, Kaplan and Karpas 2024): the same measures (SimAOU, SimAM,
  Kendall, Rec2FTP) for a model of the same architecture and tokenizer with initial weights
  (`icgd.lm.models.untrained`, one model per seed of `DaiConfig.untrained_seeds`), on the chosen seed's
  demonstrations and the same test queries, finetuned at the trained model's FT rate (as Deutch et al. do)
  or, where that does not lower the untrained model's loss on the demonstrations, at the largest of
  `smaller_rates(lr)` that does (LCGD's rule; added after Qwen2.5-Coder-0.5B on MR, where every init
  seed's FT went from 12.1 to NaN: there the cause was a zero BOS embedding, which `untrained` now draws,
  and the search stays as the guard against a rate too large for a model that learnt nothing). The margin
  trained - untrained says how much of ICL's likeness to FT the training made; its interval resamples the
  test queries (paired) and the init seeds.
- **Layer-causal GD** (Deutch et al.): `icgd.lm.finetune.finetune_kv(layer_causal=True)` on the chosen
  seed's demonstrations at the largest rate, from FT's down, at which it lowers its own loss on them (the
  sum of the layers' read-out losses; `lcgd_control`), and ICL's SimAOU, SimAM and Kendall against it
  beside those against FT, per test query; the margin SimAOU (ICL, LCGD) - SimAOU (ICL, FT) resamples the
  queries (paired). Only the chosen seed: reading out every layer through a 262k-word unembedding makes
  LCGD about 20 times as costly as FT on Gemma-3-270M (4 min against 12 s per set of 32 demonstrations
  on 2 CPU cores).
- **The order of the demonstrations** (Shen, Mishra and Khashabi 2024): the chosen seed's demonstrations in
  `DaiConfig.orders` orders (the chosen order first, then random permutations), on the first
  `order_queries` test queries: ICL with each order, one-pass SGD in each order (FT as in the study) and
  full-batch GD (`batch="full"`: one step on the summed loss, which no order can change). The spread of a
  learner is the standard deviation over orders of each label's probability (renormalised over the labels),
  averaged over labels and queries; its interval resamples the queries.

Every stage is saved in the study's `StageCache`, so a rerun reads it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from icgd.core.io import fingerprint
from icgd.lm import measures as M
from icgd.lm.finetune import KVSnapshot, finetune_kv, lm_loss
from icgd.lm.icl import build_prefix, demonstration_ids, score
from icgd.sources.dai.keys import lowered
from icgd.sources.dai.per_seed import kendall_measures, layer_mean, measure_seed

#: the measures of the untrained control (Rec2FTP from the predictions, the others per query and layer)
UNTRAINED = ("simaou", "simam", "kendall", "rec2ftp")
#: the learners of the order study
ORDER_LEARNERS = ("icl", "sgd", "gd")


def run(lm, task, cfg, store, *, chosen: int, lr: float, rows: list[dict[str, Any]], q_test, labels,
        start: list[int], zsl: dict[str, Any], progress: bool) -> dict[str, Any]:
    """The controls of one data set. rows: the chosen seed's per-query rows of the study (trained side), in
    the order of the test queries; zsl: the study's recorded ZSL test. Returns {"summary": values,
    "bootstrap": {key: replicates}, "untrained": rows, "lcgd": rows, "orders": rows}."""
    if [r["query_id"] for r in rows] != [int(i) for i in task.split("test")[:len(q_test)]]:
        raise ValueError("the chosen seed's rows are not the test queries in their order")
    summary: dict[str, Any] = {}
    boot: dict[str, list[float]] = {}
    demos = task.demonstrations(cfg.n_demos, chosen)
    untrained_rows: list[dict[str, Any]] = []
    if cfg.untrained_seeds:
        s, b, untrained_rows = untrained_control(lm, task, cfg, store, demos=demos, chosen=chosen, lr=lr, rows=rows,
                                                 q_test=q_test, labels=labels, start=start, progress=progress)
        summary |= s
        boot |= b
    lcgd_rows: list[dict[str, Any]] = []
    if cfg.lcgd:
        s, b, lcgd_rows = lcgd_control(lm, task, cfg, store, demos=demos, chosen=chosen, lr=lr, rows=rows,
                                       q_test=q_test, labels=labels, start=start, zsl=zsl, progress=progress)
        summary |= s
        boot |= b
    order_rows: list[dict[str, Any]] = []
    if cfg.orders:
        s, b, order_rows = order_study(lm, task, cfg, store, demos=demos, chosen=chosen, lr=lr, q_test=q_test,
                                       labels=labels, start=start, progress=progress)
        summary |= s
        boot |= b
    return {"summary": summary, "bootstrap": boot, "untrained": untrained_rows, "lcgd": lcgd_rows,
            "orders": order_rows}


def _per_query(r: dict[str, Any], zsl_logp: torch.Tensor) -> dict[str, np.ndarray]:
    """The per-query numbers the control compares (each measure averaged over layers)."""
    return {"simaou": layer_mean(r["simaou_ft"]),
            "simam": layer_mean(r["simam_after"]) - layer_mean(r["simam_before"]),
            "kendall": layer_mean(r["kendall_ft"]), "zsl": zsl_logp.argmax(-1).numpy(),
            "icl": r["icl_logp"].argmax(-1).numpy(), "ft": r["ft_logp"].argmax(-1).numpy()}


def _value(q: dict[str, np.ndarray], gold: np.ndarray, name: str, idx: np.ndarray) -> float:
    """One control measure over the queries idx: the mean of a per-query measure, or Rec2FTP."""
    if name == "rec2ftp":
        z, f, i = (q[k][idx] == gold[idx] for k in ("zsl", "ft", "icl"))
        fixed = f & ~z
        return 100.0 * float(i[fixed].mean()) if fixed.any() else float("nan")
    v = q[name][idx]
    return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")


def untrained_control(lm, task, cfg, store, *, demos, chosen: int, lr: float, rows, q_test, labels, start,
                      progress: bool) -> tuple[dict[str, Any], dict[str, list[float]], list[dict[str, Any]]]:
    from icgd.lm.models import bos_is_padding, untrained

    prefix = build_prefix(lm, task, demos, cfg.start)
    examples = [start + d for d in demonstration_ids(lm, task, demos)]
    sc = dict(analysed=cfg.analysed, progress=progress, batch=cfg.batch)

    def make(seed: int, rate: float) -> dict[str, Any]:
        ulm = untrained(lm, seed, cfg.untrained_keep)
        z = score(ulm, start, q_test, labels, record=True, desc=f"untrained {seed}: ZSL test", **sc)
        zd = {"logp": z.logp, "out": z.out, "query_scores": z.query_scores}
        before = lm_loss(ulm, examples)
        r = measure_seed(ulm, cfg, prefix, examples, len(start), q_test, labels, zd, rate, chosen, progress,
                         loss_after=True)
        keep = ("icl_logp", "ft_logp", "simaou_ft", "simam_before", "simam_after", "kendall_ft")
        return {k: r[k] for k in keep} | {"zsl_logp": z.logp, "loss_before": before, "loss_after": r["ft_loss_after"]}

    per: dict[int, dict[str, Any]] = {}
    tried: dict[str, list[dict[str, Any]]] = {}
    bos = "-bos" if bos_is_padding(lm) else ""  # the BOS row drawn (`untrained`): stages of its own
    for u in cfg.untrained_seeds:
        per[u], tried[str(u)] = search_rate(
            lr, lambda rate, u=u: store.get(f"untrained-{cfg.untrained_keep}{bos}-init{u}-seed{chosen}-lr{rate:.4g}",
                                            lambda: make(u, rate)))
    by_query = rows  # the study's rows of the chosen seed, in the order of the test queries (checked by run)
    gold = np.array([task.labels.index(r["gold"]) for r in by_query])
    trained = {"simaou": np.array([r["simaou_ft"] for r in by_query]),
               "simam": np.array([r["simam_after"] - r["simam_before"] for r in by_query]),
               "kendall": np.array([r["kendall_ft"] for r in by_query]),
               **{k: np.array([task.labels.index(r[f"{k}_pred"]) for r in by_query]) for k in ("zsl", "icl", "ft")}}
    unt = {u: _per_query(r, r["zsl_logp"]) for u, r in per.items()}
    n_q = len(gold)
    every = np.arange(n_q)
    summary: dict[str, Any] = {}
    for m in UNTRAINED:
        t = _value(trained, gold, m, every)
        us = [_value(q, gold, m, every) for q in unt.values()]
        summary[f"{m}_trained"], summary[f"{m}_untrained"] = t, float(np.mean(us))
        summary[f"{m}_margin"] = t - float(np.mean(us))
        summary[f"{m}_untrained_per_seed"] = dict(zip(map(str, per), us))
    for name, q in (("zsl", "zsl"), ("icl", "icl"), ("ft", "ft")):
        summary[f"untrained_{name}_accuracy"] = float(np.mean([(unt[u][q] == gold).mean() for u in unt]))
    summary["untrained_ft_loss"] = {str(u): [float(r["loss_before"]), float(r["loss_after"])] for u, r in per.items()}
    summary["untrained_ft_rates"] = tried
    summary["untrained_lr"] = {u: (t[-1]["lr"] if t[-1]["converged"] else None) for u, t in tried.items()}
    rng = np.random.default_rng(cfg.metric_seed * 1000 + 7)
    seeds = list(unt)
    boot: dict[str, list[float]] = {f"{m}_margin": [] for m in UNTRAINED}
    for _ in range(cfg.bootstrap):
        ti = rng.integers(n_q, size=n_q)
        ui = rng.integers(len(seeds), size=len(seeds))
        for m in UNTRAINED:
            t = _value(trained, gold, m, ti)
            boot[f"{m}_margin"].append(t - float(np.mean([_value(unt[seeds[i]], gold, m, ti) for i in ui])))
    out_rows = []
    for u, q in unt.items():
        for j in range(n_q):
            out_rows.append({"dataset": task.name, "init_seed": u, "keep": cfg.untrained_keep, "demo_seed": chosen,
                             "query_id": by_query[j]["query_id"], "gold": task.labels[gold[j]]}
                            | {f"{k}_pred": task.labels[q[k][j]] for k in ("zsl", "icl", "ft")}
                            | {m: float(q[m][j]) for m in ("simaou", "simam", "kendall")})
    return summary, boot, out_rows


#: ICL's measures against layer-causal GD, per query (the layer mean), beside those against FT
LCGD = ("simaou", "simam", "kendall")


def smaller_rates(lr: float, tries: int = 5) -> list[float]:
    """The rates LCGD and the untrained model's FT try, in order: FT's chosen rate, then smaller by a factor
    sqrt(10) each time (down to lr / 100)."""
    return [lr * 10 ** (-k / 2) for k in range(tries)]


def search_rate(lr: float, run, judged: tuple[str, str] = ("loss_before", "loss_after"),
                shown: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a finetuning at `smaller_rates(lr)` in order (`run(rate)` -> its result) until one lowers the loss
    named by `judged` (before, after) on its demonstrations (`keys.lowered`). Returns the last result run and
    the rates tried: {"lr", the judged and `shown` losses, "converged"}, the last row saying whether any did."""
    tried: list[dict[str, Any]] = []
    for rate in smaller_rates(lr):
        r = run(rate)
        ok = lowered(float(r[judged[0]]), float(r[judged[1]]))
        tried.append({"lr": rate} | {k: float(r[k]) for k in (*judged, *shown)} | {"converged": ok})
        if ok:
            break
    return r, tried


def lcgd_control(lm, task, cfg, store, *, demos, chosen: int, lr: float, rows, q_test, labels, start, zsl,
                 progress: bool) -> tuple[dict[str, Any], dict[str, list[float]], list[dict[str, Any]]]:
    """LCGD at the largest rate of `smaller_rates(lr)` at which it lowers its own loss on the demonstrations
    (the sum over layers of the read-out losses: FT's convergence rule, `study.select_lr`, applied to LCGD's
    objective); Deutch et al. take FT's rate. The model's own loss (its last layer's read-out) is reported
    beside it: LCGD does not minimise it, and it can rise (on Gemma-3-270M, BBC News, quick mode, FT's rate
    took it from 4.37 to 7.89). Where no rate converges the summary says so and the margin is left out (its
    claim is untested)."""
    prefix = build_prefix(lm, task, demos, cfg.start)
    examples = [start + d for d in demonstration_ids(lm, task, demos)]
    sc = dict(analysed=cfg.analysed, progress=progress, batch=cfg.batch)
    # what every rate's stage shares, computed once where a stage is not saved yet: ICL's recorded test and
    # the losses before LCGD (the model's, LCGD's own)
    shared: dict[str, Any] = {}

    def make(rate: float) -> dict[str, Any]:
        if not shared:
            shared["icl"] = score(lm, prefix, q_test, labels, record=True, desc=f"ICL test, seed {chosen}", **sc)
            shared["before"] = lm_loss(lm, examples), lm_loss(lm, examples, layer_causal=True)
        i = shared["icl"]
        before, own_before = shared["before"]
        with KVSnapshot(lm.model):
            ft = finetune_kv(lm, examples, rate, record_from=len(start), progress=progress,
                             query_point=cfg.kendall_query, layer_causal=True)
            after, own_after = lm_loss(lm, examples), lm_loss(lm, examples, layer_causal=True)
            z = score(lm, start, q_test, labels, record=True, record_queries=cfg.kendall_query,
                      desc=f"LCGD test, seed {chosen}, lr {rate:g}", **sc)
        kendall = kendall_measures(lm, cfg, prefix, i, ft.queries, z, chosen)["kendall_ft"]
        return {"logp": z.logp, "simaou": M.simaou(zsl["out"], i.out, z.out),
                "simam": M.simam(i.query_scores, z.query_scores), "kendall": kendall,
                "loss_before": before, "loss_after": after, "lcgd_loss_before": own_before,
                "lcgd_loss_after": own_after}

    r, tried = search_rate(lr, lambda rate: store.get(f"lcgd-seed{chosen}-lr{rate:.4g}", lambda: make(rate)),
                           judged=("lcgd_loss_before", "lcgd_loss_after"), shown=("loss_before", "loss_after"))
    summary: dict[str, Any] = {"lcgd_rates": tried, "lcgd_converged": tried[-1]["converged"],
                               "lcgd_lr": tried[-1]["lr"] if tried[-1]["converged"] else None}
    if not summary["lcgd_converged"]:
        return summary, {}, []
    means = {m: layer_mean(r[m]) for m in LCGD}
    ft_simaou = np.array([q["simaou_ft"] for q in rows])
    gold = np.array([task.labels.index(q["gold"]) for q in rows])
    pred = r["logp"].argmax(-1).numpy()
    summary |= {f"{m}_lcgd": float(np.nanmean(means[m])) for m in LCGD}
    summary |= {"lcgd_accuracy": float((pred == gold).mean()),
                "simaou_lcgd_minus_ft": summary["simaou_lcgd"] - float(np.nanmean(ft_simaou)),
                "lcgd_loss": [float(r["loss_before"]), float(r["loss_after"])]}
    rng = np.random.default_rng(cfg.metric_seed * 1000 + 13)
    n_q = len(rows)
    boot = {"simaou_lcgd_minus_ft": []}
    for _ in range(cfg.bootstrap):
        ti = rng.integers(n_q, size=n_q)
        boot["simaou_lcgd_minus_ft"].append(float(np.nanmean(means["simaou"][ti]) - np.nanmean(ft_simaou[ti])))
    out_rows = [{"dataset": task.name, "demo_seed": chosen, "lr": summary["lcgd_lr"], "query_id": q["query_id"],
                 "gold": q["gold"], "lcgd_pred": task.labels[pred[j]], "lcgd_correct": bool(pred[j] == gold[j])}
                | {f"{m}_lcgd": float(means[m][j]) for m in LCGD} for j, q in enumerate(rows)]
    return summary, boot, out_rows


def label_probabilities(logp: torch.Tensor) -> np.ndarray:
    """(..., C) label log-probabilities -> probabilities renormalised over the labels."""
    return torch.softmax(logp.double(), -1).numpy()


def spread(probs: np.ndarray) -> np.ndarray:
    """(O, Q, C) probabilities over orders -> (Q,) the standard deviation over orders, averaged over labels."""
    return probs.std(0, ddof=1).mean(-1)


def orders_of(n: int, count: int, seed: int) -> list[np.ndarray]:
    """`count` distinct orders of n demonstrations: the given order first, then random permutations (drawn
    again where one repeats an earlier order); a ValueError where n! < count."""
    if math.factorial(n) < count:
        raise ValueError(f"{count} distinct orders of {n} demonstrations do not exist (n! = {math.factorial(n)})")
    rng = np.random.default_rng(seed)
    out = [np.arange(n)]
    while len(out) < count:
        p = rng.permutation(n)
        if not any(np.array_equal(p, q) for q in out):
            out.append(p)
    return out


def order_study(lm, task, cfg, store, *, demos, chosen: int, lr: float, q_test, labels, start, progress: bool
                ) -> tuple[dict[str, Any], dict[str, list[float]], list[dict[str, Any]]]:
    n_q = min(cfg.order_queries, len(q_test))
    queries = q_test[:n_q]
    gold = np.array([task.label_index(i) for i in task.split("test")[:n_q]])
    perms = orders_of(len(demos), cfg.orders, cfg.metric_seed * 1000 + chosen)
    sc = dict(analysed=cfg.analysed, progress=progress, batch=cfg.batch)

    def make(perm: np.ndarray, i: int) -> dict[str, Any]:
        ordered = [demos[k] for k in perm]
        examples = [start + d for d in demonstration_ids(lm, task, ordered)]
        out = {"perm": torch.from_numpy(np.asarray(perm)),
               "icl": score(lm, build_prefix(lm, task, ordered, cfg.start), queries, labels,
                            desc=f"order {i}: ICL", **sc).logp}
        for name, batch in (("sgd", "example"), ("gd", "full")):
            with KVSnapshot(lm.model):
                finetune_kv(lm, examples, lr, batch=batch)
                out[name] = score(lm, start, queries, labels, desc=f"order {i}: {name.upper()}", **sc).logp
        return out

    per = [store.get(f"order{i}-{fingerprint(str(p.tolist()))}-seed{chosen}-lr{lr:g}-q{n_q}", lambda p=p, i=i: make(p, i))
           for i, p in enumerate(perms)]
    probs = {k: np.stack([label_probabilities(r[k]) for r in per]) for k in ORDER_LEARNERS}  # (O, Q, C)
    sp = {k: spread(p) for k, p in probs.items()}  # (Q,)
    summary: dict[str, Any] = {"order_n": len(perms), "order_queries": n_q}

    def derived(idx: np.ndarray) -> dict[str, float]:
        s = {k: float(sp[k][idx].mean()) for k in ORDER_LEARNERS}
        return {"order_icl_spread": s["icl"], "order_sgd_spread": s["sgd"], "order_gd_spread": s["gd"],
                "order_icl_minus_gd": s["icl"] - s["gd"],
                "order_icl_over_sgd": s["icl"] / s["sgd"] if s["sgd"] > 0 else float("nan")}

    summary |= derived(np.arange(n_q))
    summary["order_spread_per_query"] = {k: [round(float(v), 6) for v in sp[k]] for k in ORDER_LEARNERS}
    for k, p in probs.items():
        pred = p.argmax(-1)  # (O, Q)
        acc = (pred == gold).mean(1)
        summary[f"order_{k}_accuracy_mean"], summary[f"order_{k}_accuracy_std"] = float(acc.mean()), float(acc.std(ddof=1))
        summary[f"order_{k}_flips"] = float((pred != pred[0]).any(0).mean())  # queries whose prediction an order changes
    brng = np.random.default_rng(cfg.metric_seed * 1000 + 11)
    boot: dict[str, list[float]] = {k: [] for k in ("order_icl_minus_gd", "order_icl_over_sgd", "order_gd_spread")}
    for _ in range(cfg.bootstrap):
        d = derived(brng.integers(n_q, size=n_q))
        for k in boot:
            boot[k].append(d[k])
    out_rows = [{"dataset": task.name, "demo_seed": chosen, "order": i, "learner": k, "query_id": int(qid),
                 "gold": task.labels[gold[j]], "pred": task.labels[int(probs[k][i, j].argmax())],
                 "p_gold": float(probs[k][i, j, gold[j]])}
                for k in ORDER_LEARNERS for i in range(len(perms)) for j, qid in enumerate(task.split("test")[:n_q])]
    return summary, boot, out_rows


