"""A small decoder-only language model built from the library's attention stack (source 003, sec. 4).

ids (B, T) -> embedding (V, D) + sinusoidal positions -> `n_layers` pre-norm blocks of causal attention +
MLP (`icgd.nn.stack.Stack` with layer_norm and mlp) -> LayerNorm -> logits (B, T, V) through the tied
embedding. The attention is `icgd.nn.attention.Attention` (softmax with s = sqrt(d_head), fixed, i.e.
scaled dot-product attention), so momentum attention is the option `attention.momentum`.

As a learner it reads the ids of `episodes.query_x` (B, T, 1) (a text task's windows) and predicts the
next-token logits at every position (B, T, V). Hook points: those of the stack (`model.stack.hooks`).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from icgd.core.episodes import Episodes, ShapeError
from icgd.nn.attention import AttentionConfig, AttentionOptions
from icgd.nn.stack import Stack, StackConfig


def sinusoidal_positions(t_len: int, d: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """(T, D) sine/cosine position codes (Vaswani et al.; the source's fairseq models use them)."""
    pos = torch.arange(t_len, device=device, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, device=device, dtype=torch.float64) / d)
    pe = torch.zeros(t_len, d, device=device, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: d // 2])
    return pe.to(dtype)


def default_init_std(d_model: int) -> float:
    """The attention weights' std at initialisation, 1 / sqrt(2 d_model): that of the source's fairseq models,
    whose `MultiheadAttention.reset_parameters` draws q, k and v with `xavier_uniform_(gain=1 / sqrt(2))`
    (microsoft/LMOps, understand_icl/fairseq/fairseq/modules/multihead_attention.py; its out_proj, gain 1, has
    1 / sqrt(d_model): here one std for the four). Why it matters: with std 0.02 the 2-layer, 64-wide model
    never read the key in associative recall in 10,000 steps, with this one it did within 2000
    (docs/sources/momentum.md)."""
    return (2 * d_model) ** -0.5


def default_embed_scale(d_model: int) -> float:
    """sqrt(d_model), the factor of the source's fairseq LMs on their token embeddings before the positions are
    added (microsoft/LMOps, understand_icl/fairseq/fairseq/models/transformer/transformer_decoder.py lines 81
    and 309, `no_scale_embedding` False by default: models/transformer_lm.py line 377). With the embeddings'
    init std 1 / sqrt(d_model) (models/transformer/transformer_base.py line 177, as here) a token's code then
    has entries of size 1, as the sine/cosine positions do; unscaled, the positions outweigh it 8 to 1 at
    d_model = 64. The output logits use the unscaled (tied) embedding, as fairseq's shared projection does."""
    return math.sqrt(d_model)


def lm_stack_config(d_model: int, n_layers: int, n_heads: int, mlp_ratio: int, attention: AttentionOptions,
                    init_std: float | None = None) -> StackConfig:
    """The stack of a causal LM: pre-norm blocks, causal softmax attention over every earlier token, heads
    of width d_model / n_heads, attention weights drawn with std `init_std` (None: `default_init_std`)."""
    if init_std is None:
        init_std = default_init_std(d_model)
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not a multiple of n_heads={n_heads}")
    dh = d_model // n_heads
    opts = attention.model_dump() | {"n_heads": n_heads, "d_key": dh, "d_value": dh, "causal": True,
                                     "query_in_keys": True, "kernel": "softmax", "kernel_init": (math.sqrt(dh),),
                                     "learn_kernel_params": False}
    return StackConfig(attention=AttentionConfig(d_model=d_model, **opts), n_layers=n_layers, layer_norm=True,
                       mlp=True, mlp_ratio=mlp_ratio, init_scale=init_std ** 2 * d_model)


class CausalLM(nn.Module):
    """Token ids -> next-token logits (see the module doc). Weights are drawn from `generator`."""

    def __init__(self, vocab: int, config: StackConfig, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None, generator: torch.Generator | None = None,
                 name: str = "causal_lm", max_len: int | None = None, embed_scale: float | None = None) -> None:
        super().__init__()
        d = config.d_model
        #: the token embeddings' factor (`default_embed_scale` where None)
        self.embed_scale = default_embed_scale(d) if embed_scale is None else float(embed_scale)
        #: the longest sequence it reads (None: any); the experiments set the training length
        self.max_len = max_len
        self.embed = nn.Parameter(torch.empty(vocab, d, dtype=dtype, device=device))
        nn.init.normal_(self.embed, std=d ** -0.5, generator=generator)
        self.stack = Stack(config, dtype=dtype, device=device, generator=generator)
        self.ln_f = nn.LayerNorm(d, dtype=dtype, device=device)
        self.name = name

    def logits(self, ids: Tensor) -> Tensor:
        """ids (B, T) integer -> logits (B, T, V)."""
        if ids.dim() != 2:
            raise ShapeError(f"CausalLM expects ids (B, T), got shape {tuple(ids.shape)}")
        t_len = ids.shape[1]
        if self.max_len is not None and t_len > self.max_len:
            raise ShapeError(f"a sequence of {t_len} tokens is longer than the model's limit of {self.max_len} "
                             "(model.max_len)")
        pos = sinusoidal_positions(t_len, self.embed.shape[1], self.embed.dtype, ids.device)
        x = self.embed_scale * self.embed[ids] + pos
        x = self.stack(x, t_len)
        return self.ln_f(x) @ self.embed.T

    def forward(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        return self.predict(ep, cache)

    def predict(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        """Logits (B, T, V) at every position of the windows in `ep.query_x` (float ids (B, T, 1))."""
        if cache is not None:
            with self.stack.hooks.caching(cache):
                return self.logits(ep.query_x[..., 0].long())
        return self.logits(ep.query_x[..., 0].long())

    @torch.no_grad()
    def sequence_logprobs(self, ids: Tensor) -> Tensor:
        """log p(ids[t] | ids[<t]) (B, T-1) for ids (B, T), in float64."""
        logits = self.logits(ids[:, :-1])
        return torch.log_softmax(logits.double(), -1).gather(-1, ids[:, 1:, None])[..., 0]

    def describe(self) -> dict[str, Any]:
        a = self.stack.config.attention
        return {"learner": self.name, "layers": self.stack.config.n_layers, "d_model": a.d_model,
                "heads": a.n_heads, "momentum": a.momentum, "max_len": self.max_len,
                "embed_scale": self.embed_scale}
