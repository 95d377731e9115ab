"""One demonstration seed of source 003's study on the test queries: ICL, K/V finetuning, and the per-query,
per-layer measures of their correspondence (`measure_seed`), used by the study (`study.compare`) and by its
controls (the untrained model, layer-causal GD: `controls`). Its own file so that both import it and neither
imports the other; `cfg` is the study's `DaiConfig` (read by attribute, not imported, for the same reason).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from icgd.lm import measures as M
from icgd.lm.finetune import KVSnapshot, finetune_kv, lm_loss
from icgd.lm.icl import Prefix, Scored, score

#: the measures kept per query and layer (each averaged over layers in the per-query table). simaou_random is
#: the authors' baseline (a uniform [0, 1) update, LMOps compute_sim.py:144-150), simaou_random_normal the
#: zero-mean one of our reading of the text
MEASURES = ("simaou_ft", "simaou_random", "simaou_random_normal", "simam_before", "simam_after",
            "kendall_ft", "kendall_random", "kendall_ft_example", "kendall_random_example")


def layer_mean(t: torch.Tensor) -> np.ndarray:
    """(Q, L) per query and layer -> (Q,) the mean over the finite layers (NaN where none is)."""
    a = t.numpy()
    n = np.isfinite(a).sum(1)
    return np.where(n > 0, np.nansum(a, 1) / np.maximum(n, 1), np.nan)


#: the Kendall measures (`icgd.lm.measures.kendall`'s keys): token and example level, against FT and random
KENDALL = (("kendall_ft", "token"), ("kendall_random", "token_random"), ("kendall_ft_example", "example"),
           ("kendall_random_example", "example_random"))


def kendall_measures(lm, cfg, prefix: Prefix, icl: Scored, ft_queries, ft_scored: Scored, seed: int
                     ) -> dict[str, torch.Tensor]:
    """The `KENDALL` measures (Q, L) of ICL's attention to the demonstrations against a finetuned model's
    dual attention (its training queries `ft_queries`, its recorded test `ft_scored`), for the first
    cfg.kendall_queries queries (NaN after)."""
    n_q, n_l = icl.logp.shape[0], icl.out.shape[1]
    kend = {name: torch.full((n_q, n_l), float("nan"), dtype=torch.float64) for name, _ in KENDALL}
    pos = prefix.demo_positions
    sizes = [b - a for a, b in prefix.spans]
    rng = np.random.default_rng(cfg.metric_seed * 1000 + seed)
    scale = M.attention_scale(lm.model)
    for j in range(min(cfg.kendall_queries, n_q)):
        k = M.kendall(icl.prefix_scores[j][:, pos], M.ft_attention(ft_queries, ft_scored.q_last[j], scale), sizes, rng)
        for name, key in KENDALL:
            kend[name][j] = torch.from_numpy(k[key])
    return kend


def measure_seed(lm, cfg, prefix: Prefix, examples: list[list[int]], n_start: int, q_test, labels,
              zsl: dict[str, Any], lr: float, seed: int, progress: bool, loss_after: bool = False) -> dict[str, Any]:
    """ICL and FT of one demonstration seed on the test queries, and the per-query, per-layer measures
    (loss_after: also FT's loss on the demonstrations after it, "ft_loss_after", `lm_loss`)."""
    sc = dict(analysed=cfg.analysed, progress=progress, batch=cfg.batch)
    t0 = time.perf_counter()
    icl = score(lm, prefix, q_test, labels, record=True, desc=f"ICL test, seed {seed}", **sc)
    t_icl = time.perf_counter() - t0
    with KVSnapshot(lm.model):
        t0 = time.perf_counter()
        ft = finetune_kv(lm, examples, lr, record_from=n_start, progress=progress, query_point=cfg.kendall_query)
        t_ft = time.perf_counter() - t0
        ftz = score(lm, examples[0][:n_start], q_test, labels, record=True, record_queries=cfg.kendall_query,
                    desc=f"FT test, seed {seed}", **sc)
        after = lm_loss(lm, examples) if loss_after else None
    gen = torch.Generator().manual_seed(cfg.metric_seed * 1000 + seed)
    out: dict[str, Any] = {
        "icl_logp": icl.logp, "ft_logp": ftz.logp, "ft_losses": torch.tensor(ft.losses),
        "icl_seconds": t_icl, "ft_seconds": t_ft,
        "simaou_ft": M.simaou(zsl["out"], icl.out, ftz.out),
        "simaou_random": M.simaou_random(zsl["out"], icl.out, gen, "uniform"),
        "simaou_random_normal": M.simaou_random(zsl["out"], icl.out, gen, "normal"),
        "simam_before": M.simam(icl.query_scores, zsl["query_scores"]),
        "simam_after": M.simam(icl.query_scores, ftz.query_scores)}
    if after is not None:
        out["ft_loss_after"] = after
    return out | kendall_measures(lm, cfg, prefix, icl, ft.queries, ftz, seed)
