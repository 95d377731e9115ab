"""A GPT-style in-context regression transformer (Garg et al. 2022; Akyuerek et al. 2023): the model family
whose hidden states are wide enough to probe.

Episodes -> the sequence x_1, y_1, ..., x_N, y_N, x_q (one sequence per query): an x token is [x; 0], a y
token [0; y] (width Dx + Dy) -> a learnt read-in (Linear to d_model) + learnt positions -> `n_layers` pre-norm
blocks of causal softmax attention + MLP (`icgd.nn.stack.Stack`, as in `icgd.learners.causal_lm`) -> a
learnt read-out (Linear to Dy) at x_q. Akyuerek et al.'s code reads its model the same way: the sequence
without the last y, the prediction of y_n at the x_n token (google-research/google-research 1d4d2f1,
incontext/incontext/predictor_flax.py:84-105; tokens [0; x] and [y; 0], sampler_lib.py:99-134).

Hook points: those of the stack (`decoder.stack.hooks`: `resid_pre`, `layers.{i}.resid_post`, ...), and
`hidden_states(episodes)` gives the residual stream at each query token after every layer: what a probe reads.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from icgd.core.episodes import Episodes, ShapeError, require_episodes
from icgd.nn.stack import Stack, StackConfig


class RegressionDecoder(nn.Module):
    """Episodes -> predictions (B, Q, Dy) of a causal transformer on interleaved x and y tokens (module doc)."""

    def __init__(self, dx: int, dy: int, config: StackConfig, max_len: int, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None, generator: torch.Generator | None = None,
                 name: str = "decoder") -> None:
        super().__init__()
        d = config.d_model
        self.dx, self.dy, self.max_len, self.name = dx, dy, max_len, name
        kw = dict(dtype=dtype, device=device)
        self.read_in = nn.Linear(dx + dy, d, **kw)
        self.read_out = nn.Linear(d, dy, **kw)
        self.pos = nn.Parameter(torch.empty(max_len, d, **kw))
        # drawn from `generator` (nn.Linear's own init reads the global generator): std 1 / sqrt(fan-in),
        # biases 0, positions std 0.02 (GPT-2's)
        for lin in (self.read_in, self.read_out):
            nn.init.normal_(lin.weight, std=lin.in_features ** -0.5, generator=generator)
            nn.init.zeros_(lin.bias)
        nn.init.normal_(self.pos, std=0.02, generator=generator)
        self.stack = Stack(config, dtype=dtype, device=device, generator=generator)

    def extra_repr(self) -> str:
        a = self.stack.config.attention
        return (f"name={self.name!r}, layers={self.stack.config.n_layers}, d_model={a.d_model}, heads={a.n_heads}, "
                f"max_len={self.max_len}")

    def sequences(self, ep: Episodes) -> Tensor:
        """(B * Q, 2N + 1, Dx + Dy): each query's sequence x_1, y_1, ..., x_N, y_N, x_q as tokens."""
        require_episodes(ep, f"{self.name}.predict")
        if (ep.dx, ep.dy) != (self.dx, self.dy):
            raise ShapeError(f"{self.name} reads Dx={self.dx}, Dy={self.dy}; these episodes have Dx={ep.dx}, Dy={ep.dy}")
        if 2 * ep.n_context + 1 > self.max_len:
            raise ShapeError(f"{self.name} reads up to {self.max_len} tokens (N <= {(self.max_len - 1) // 2}); these "
                             f"episodes have N={ep.n_context}")
        dtype = self.read_in.weight.dtype
        if ep.context_x.dtype != dtype:
            raise TypeError(f"{self.name}: the episodes are {str(ep.context_x.dtype).replace('torch.', '')} but the "
                            f"model is {str(dtype).replace('torch.', '')}: use episodes.to(dtype={dtype})")
        b, n, q = ep.batch_size, ep.n_context, ep.n_queries
        xs = torch.cat([ep.context_x, ep.context_x.new_zeros(b, n, self.dy)], -1)
        ys = torch.cat([ep.context_y.new_zeros(b, n, self.dx), ep.context_y], -1)
        ctx = torch.stack([xs, ys], 2).reshape(b, 2 * n, self.dx + self.dy)  # x_1, y_1, x_2, ...
        qry = torch.cat([ep.query_x, ep.query_x.new_zeros(b, q, self.dy)], -1)  # (B, Q, D)
        seq = torch.cat([ctx[:, None].expand(b, q, 2 * n, self.dx + self.dy), qry[:, :, None]], 2)
        return seq.reshape(b * q, 2 * n + 1, self.dx + self.dy)

    def _residual(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        seq = self.sequences(ep)
        t_len = seq.shape[1]
        h = self.read_in(seq) + self.pos[:t_len]
        return self.stack(h, t_len, cache)

    def forward(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        return self.predict(ep, cache)

    def predict(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        """Predictions (B, Q, Dy) at each query's x token; `cache` collects the stack's named activations."""
        out = self.read_out(self._residual(ep, cache)[:, -1])
        return out.reshape(ep.batch_size, ep.n_queries, self.dy)

    @torch.no_grad()
    def hidden_states(self, ep: Episodes) -> Tensor:
        """(L + 1, B, Q, d_model): the residual stream at each query's x token before the first layer and after
        every layer (`resid_pre`, `layers.{i}.resid_post`)."""
        cache: dict[str, Tensor] = {}
        with self.stack.hooks.caching(cache, "resid_pre"), self.stack.hooks.caching(cache, "layers.*.resid_post"):
            self._residual(ep)
        names = ["resid_pre"] + [f"layers.{i}.resid_post" for i in range(self.stack.n_steps)]
        return torch.stack([cache[k][:, -1].reshape(ep.batch_size, ep.n_queries, -1) for k in names])

    def describe(self) -> dict[str, Any]:
        a = self.stack.config.attention
        return {"learner": self.name, "layers": self.stack.config.n_layers, "d_model": a.d_model, "heads": a.n_heads,
                "max_len": self.max_len}
