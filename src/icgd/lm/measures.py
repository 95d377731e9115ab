"""The source's measures of how close ICL is to finetuning (source 003), defined as the authors'
code computes them (docs/sources/dai_lmops_code.md section 1); each is per query and layer, averaged over
queries per layer and then over layers with equal weight, as in the source's tables.

- Rec2FTP: among the queries FT (zero-shot prompt on the finetuned model) gets right and ZSL wrong, the
  percentage ICL also gets right.
- SimAOU: cos(h_ICL - h_ZSL, h_FT - h_ZSL), h the attention output at the analysed token, L2-normalised
  per layer. Random baseline: cos(h_ICL - h_ZSL, u) with u uniform in [0, 1) as the authors' code draws it
  (not zero-mean; the claims use it), or a zero-mean Gaussian vector (our reading of the text), reported beside.
- SimAM: cosine between the pre-softmax scores of the analysed token to the query's own tokens, ICL vs
  ZSL (before finetuning) and ICL vs FT (after), per head, averaged over heads.
- Kendall: Kendall's tau-b between (a) ICL's attention of the analysed token to the demonstration tokens
  (pre-softmax scores summed over heads, softmaxed over those tokens) and (b) FT's dual-form attention to
  the same tokens as training tokens: softmax over tokens of q(token) . q(query), q the query (recorded
  after or before the rotary embedding: `icgd.lm.record`) of the token in its own FT step's forward and of
  the analysed token on the finetuned model. Token level; example level sums the softmaxed weights per demonstration. Random
  baseline: tau between (a) and a uniform random vector.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


def rec2ftp(zsl_correct: np.ndarray, ft_correct: np.ndarray, icl_correct: np.ndarray) -> tuple[float, int]:
    """(Rec2FTP in percent, its denominator): NaN when FT fixes no ZSL error."""
    zsl_correct, ft_correct, icl_correct = (np.asarray(a, bool) for a in (zsl_correct, ft_correct, icl_correct))
    fixed = ft_correct & ~zsl_correct
    n = int(fixed.sum())
    return (100.0 * float(icl_correct[fixed].mean()) if n else float("nan")), n


def _unit(h: Tensor) -> Tensor:
    return torch.nn.functional.normalize(h.double(), dim=-1)


def simaou(h_zsl: Tensor, h_icl: Tensor, h_ft: Tensor) -> Tensor:
    """(Q, L) cosine between the ICL and FT updates of the normalised attention outputs; inputs (Q, L, D)."""
    z = _unit(h_zsl)
    return torch.nn.functional.cosine_similarity(_unit(h_icl) - z, _unit(h_ft) - z, dim=-1)


def simaou_random(h_zsl: Tensor, h_icl: Tensor, gen: torch.Generator, kind: str = "normal") -> Tensor:
    """(Q, L) cosine between the ICL update and a random update: `kind` "normal" (zero-mean, our reading) or
    "uniform" ([0, 1), the authors' code)."""
    d = _unit(h_icl) - _unit(h_zsl)
    if kind == "normal":
        u = torch.randn(d.shape, generator=gen, dtype=torch.float64)
    elif kind == "uniform":
        u = torch.rand(d.shape, generator=gen, dtype=torch.float64)
    else:
        raise ValueError(f"kind must be normal or uniform, got {kind!r}")
    return torch.nn.functional.cosine_similarity(d, u, dim=-1)


def simam(scores_a: Sequence[Tensor], scores_b: Sequence[Tensor]) -> Tensor:
    """(Q, L) head-averaged cosine between two settings' pre-softmax scores to the query tokens; each
    element (L, H, S_q) for one query (the same S_q in both settings)."""
    out = []
    for a, b in zip(scores_a, scores_b, strict=True):
        if a.shape != b.shape:
            raise ValueError(f"query scores of different shapes {tuple(a.shape)} and {tuple(b.shape)}")
        out.append(torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1).mean(-1))
    return torch.stack(out)


def ft_attention(train_queries: Sequence[Tensor], q_query: Tensor, scale: float = 1.0) -> Tensor:
    """(L, P_d) FT's dual-form attention weights: softmax over the training tokens of scale * q(token) .
    q(query); train_queries[i] (L, T_i, Dq) per example, q_query (L, Dq). The authors' code scales each q by
    the attention's scaling, so scale = scaling**2 there (`attention_scale`); the token-level Kendall
    does not depend on it, the example level does."""
    q = torch.cat(list(train_queries), dim=1).double()  # (L, P_d, Dq)
    return torch.softmax(scale * torch.einsum("ltd,ld->lt", q, q_query.double()), -1)


def attention_scale(model) -> float:
    """scaling**2 of the model's attention (scaling = head_dim**-0.5 unless the model sets its own)."""
    from icgd.lm.record import attention_modules

    m = attention_modules(model)[0]
    scaling = getattr(m, "scaling", None)
    if scaling is None:
        scaling = getattr(m, "head_dim") ** -0.5
    return float(scaling) ** 2


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b of two vectors (scipy)."""
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def kendall(icl_scores: Tensor, ft_weights: Tensor, sizes: Sequence[int], gen: np.random.Generator) -> dict[str, np.ndarray]:
    """Kendall's tau per layer between ICL's attention to the demonstration tokens and FT's, at token and
    example level, and the random baselines. icl_scores (L, P_d) pre-softmax, summed over heads; ft_weights
    (L, P_d) from `ft_attention`; sizes: tokens per demonstration (summing to P_d). Returns arrays (L,):
    token, token_random, example, example_random. Scores of -inf (tokens outside a layer's sliding window)
    get ICL weight 0 and are left out of that layer's token level (nan where fewer than 2 remain)."""
    icl = torch.nan_to_num(torch.softmax(icl_scores.double(), -1), nan=0.0).numpy()
    ft = ft_weights.double().numpy()
    if icl.shape != ft.shape or sum(sizes) != icl.shape[1]:
        raise ValueError(f"ICL weights {icl.shape}, FT weights {ft.shape} and demonstration sizes {sum(sizes)} "
                         "do not line up")
    bounds = np.cumsum([0, *sizes])
    out: dict[str, list[float]] = {"token": [], "token_random": [], "example": [], "example_random": []}
    seen = torch.isfinite(icl_scores).numpy()
    for layer in range(icl.shape[0]):
        r = gen.random(icl.shape[1])
        v = seen[layer]  # a sliding-window layer (Gemma 3): the token level over the tokens it can attend
        few = v.sum() < 2
        out["token"].append(float("nan") if few else kendall_tau(icl[layer][v], ft[layer][v]))
        out["token_random"].append(float("nan") if few else kendall_tau(icl[layer][v], r[v]))
        ex_icl, ex_ft = np.add.reduceat(icl[layer], bounds[:-1]), np.add.reduceat(ft[layer], bounds[:-1])
        out["example"].append(kendall_tau(ex_icl, ex_ft))
        out["example_random"].append(kendall_tau(ex_icl, gen.random(len(sizes))))
    return {k: np.asarray(v) for k, v in out.items()}
