"""Linear self-attention on deep features (source 000, sec. 3 and A.7, Prop. 2).

Tokens [x; y] (query [x_q; 0]) are embedded by a linear map without bias into d dimensions, transformed
by a residual MLP (one hidden layer of ratio * d units, GELU), then by one LSA layer:

    h0 = E [x; y],   h = h0 + MLP(h0),   out = h + LSA(h),   prediction = -(last Dy entries of out_q)

The last Dy entries of h play the targets t, the others the features m. `initial_prediction` is the
read-out before the attention, -t(x_q, 0): the meta-learned initial function.

`gd_control=True` replaces the LSA by the GD construction (Prop. 1) on (m, t) with a learnt eta:
prediction = -t_q + (eta / N) sum_i t_i m_i^T m_q, one GD step (from W0 = 0) of a linear read-out of
the MLP features, i.e. kernel regression with k(z, z') = m(z)^T m(z') (Prop. 2).

Embedding and MLP weights are drawn first from the generator, so a model and its control built from the
same seed start from the same embedding and MLP (as in the paper).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from icgd.core.episodes import Episodes, ShapeError
from icgd.learners.tokens import concat_tokens
from icgd.nn.attention import Attention, AttentionConfig
from icgd.nn.hooks import HookPoints


def _variance_scaling_(lin: nn.Linear, scale: float, generator: torch.Generator | None) -> None:
    """Truncated normal (at 2 std) with std sqrt(scale / fan_in) and zero bias: the init of the official code
    of source 000 (haiku VarianceScaling(scale), whose std is not corrected for the truncation)."""
    with torch.no_grad():
        std = math.sqrt(scale / lin.in_features)
        w = torch.empty_like(lin.weight).normal_(generator=generator)
        bad = w.abs() > 2
        while bad.any():  # redraw the tail
            w[bad] = torch.empty(int(bad.sum()), dtype=w.dtype, device=w.device).normal_(generator=generator)
            bad = w.abs() > 2
        lin.weight.copy_(w * std)
        if lin.bias is not None:
            lin.bias.zero_()


def _uniform_(lin: nn.Linear, generator: torch.Generator | None) -> None:
    """torch's default Linear init, drawn from `generator`."""
    bound = 1 / math.sqrt(lin.in_features)
    with torch.no_grad():
        lin.weight.uniform_(-bound, bound, generator=generator)
        if lin.bias is not None:
            lin.bias.uniform_(-bound, bound, generator=generator)


class FeatureLSA(nn.Module):
    """Embedding + residual MLP + one LSA layer (or the GD construction) on concatenated tokens.

    Hook points (`.hooks`, `icgd.nn.hooks`): `embed` (B, T, d), `features` (B, T, d) = h, `attn.weights`,
    `attn.out`, `out`; `cache` (a dict) reads them all.
    """

    def __init__(self, dx: int = 1, dy: int = 1, d_embed: int = 40, mlp_ratio: int = 4, gd_control: bool = False,
                 eta_init: float = 0.1, attention_init_std: float | None = None, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None, generator: torch.Generator | None = None,
                 name: str | None = None, mlp_init_scale: float | None = None, learn_eta: bool = True) -> None:
        super().__init__()
        if d_embed <= dy:
            raise ValueError(f"d_embed={d_embed} must exceed Dy={dy}")
        kw = dict(dtype=dtype, device=device)
        self.dx, self.dy, self.d_embed, self.gd_control = dx, dy, d_embed, gd_control
        self.name = name or ("gd_on_mlp_features" if gd_control else "mlp_lsa")
        self.embed = nn.Linear(dx + dy, d_embed, bias=False, **kw)
        self.mlp = nn.Sequential(nn.Linear(d_embed, mlp_ratio * d_embed, **kw), nn.GELU(),
                                 nn.Linear(mlp_ratio * d_embed, d_embed, **kw))
        if device is None or torch.device(device).type != "meta":
            for lin in (self.embed, self.mlp[0], self.mlp[2]):
                if mlp_init_scale is None:
                    _uniform_(lin, generator)
                else:
                    _variance_scaling_(lin, mlp_init_scale, generator)
        self.hooks = HookPoints()
        if gd_control:
            self.eta = nn.Parameter(torch.tensor(float(eta_init), **kw), requires_grad=learn_eta)
            self.attn = None
        else:
            std = attention_init_std if attention_init_std is not None else math.sqrt(0.002 / d_embed)
            self.attn = Attention(AttentionConfig(d_model=d_embed), init_std=std, generator=generator, **kw)

    @property
    def n_features(self) -> int:
        """Width of the features m: every embedding coordinate but the last Dy (the target t)."""
        return self.d_embed - self.dy

    # ------------------------------------------------------------------------------------- parts
    def features(self, ep: Episodes) -> Tensor:
        """h = h0 + MLP(h0) for all tokens (B, N + Q, d), context first."""
        if ep.dx != self.dx or ep.dy != self.dy:
            raise ShapeError(f"{self.name} was built for Dx={self.dx}, Dy={self.dy}; episodes have "
                             f"Dx={ep.dx}, Dy={ep.dy}")
        h0 = concat_tokens(ep) @ self.embed.weight.T
        if self.hooks:
            h0 = self.hooks("embed", h0)
        h = h0 + self.mlp(h0)
        return self.hooks("features", h) if self.hooks else h

    def update(self, h: Tensor, n_context: int, rows_from: int = 0) -> Tensor:
        """The attention (or GD) update of the tokens h (B, T, d); with rows_from, of tokens rows_from.. only
        (what `predict` reads when no hook is set)."""
        if self.attn is not None:
            return self.attn(h, n_context, self.hooks if self.hooks else None, "attn", rows_from)
        m, t = h[..., :self.n_features], h[..., self.n_features:]
        mc, tc = m[:, :n_context], t[:, :n_context]
        m = m[:, rows_from:] if rows_from else m
        # y_j <- y_j - (eta / N) sum_i t_i m_i^T m_j, the x-part unchanged (Prop. 1 with W0 = 0)
        dt = -(self.eta / n_context) * (m @ mc.transpose(1, 2)) @ tc
        out = torch.cat([torch.zeros_like(m), dt], -1)
        return self.hooks("attn.out", out) if self.hooks else out

    # ----------------------------------------------------------------------------------- learner
    def forward(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        return self.predict(ep, cache)

    def predict(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        """Predictions (B, Q, Dy) = -(last Dy entries of the query tokens after the attention)."""
        if cache is not None:
            with self.hooks.caching(cache):
                return self.predict(ep)
        n = ep.n_context
        if ep.n_queries > 1 and self.attn is not None and self.attn.config.query_in_keys:
            raise ShapeError("query_in_keys is not supported here")
        h = self.features(ep)
        if not self.hooks:  # only the queries are read out: their update alone (training's path)
            return -(h[:, n:] + self.update(h, n, rows_from=n))[..., -self.dy:]
        out = self.hooks("out", h + self.update(h, n))
        return -out[:, n:, -self.dy:]

    def initial_prediction(self, ep: Episodes) -> Tensor:
        """The read-out before the attention layer, -(last Dy entries of h_q) (B, Q, Dy)."""
        return -self.features(ep)[:, ep.n_context:, -self.dy:]

    def kernel(self, x: Tensor, x2: Tensor | None = None) -> Tensor:
        """The kernel the attention applies between query-like inputs (y = 0): (n, n2) for x (n, Dx).

        Control: m(x)^T m(x'); trained LSA: (W_K m(x))^T (W_Q m(x')) summed over heads (keys x, queries x2).
        """
        x2 = x if x2 is None else x2
        zeros = x.new_zeros(1, x.shape[0], self.dy)
        ep = Episodes(context_x=x.unsqueeze(0), context_y=zeros, query_x=x2.unsqueeze(0))
        h = self.features(ep)[0]
        hk, hq = h[: x.shape[0]], h[x.shape[0]:]
        if self.attn is None:
            f = self.n_features
            return hk[:, :f] @ hq[:, :f].T
        wk, wq = self.attn.w_k, self.attn.w_q  # (H, dk, d)
        return torch.einsum("hkd,nd,hke,me->nm", wk, hk, wq, hq)

    def describe(self) -> dict[str, Any]:
        d = {"learner": self.name, "d_embed": self.d_embed, "gd_control": self.gd_control}
        if self.gd_control:
            d["eta"] = float(self.eta.detach())
        return d
