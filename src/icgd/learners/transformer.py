"""Transformer learners: a token construction + a Stack + the construction's read-out."""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor, nn

from icgd.core.episodes import Episodes, ShapeError
from icgd.learners.constructions import gd_construction
from icgd.learners.tokens import ConcatTokens, InterleavedTokens
from icgd.nn.stack import Stack


class TransformerLearner(nn.Module):
    """Episodes -> tokens -> Stack -> read-out predictions (B, Q, Dy).

    Query tokens never see each other: when the stack lets queries be keys (`query_in_keys`) and
    Q > 1, every query gets its own sequence (the context repeated).
    """

    def __init__(self, model: Stack, tokens: ConcatTokens | InterleavedTokens | None = None,
                 name: str = "transformer") -> None:
        super().__init__()
        self.model = model
        self.tokens = tokens if tokens is not None else ConcatTokens()
        self.name = name

    def forward(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        return self.predict(ep, cache)

    def predict(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        """Predictions (B, Q, Dy); `cache` (a dict) collects the named activations of the stack."""
        width = self.tokens.width(ep.dx, ep.dy, ep.n_context)
        if width != self.model.config.d_model:
            raise ShapeError(f"{self.tokens.name} tokens of these episodes have width {width} "
                             f"(Dx={ep.dx}, Dy={ep.dy}) but the model expects {self.model.config.d_model}")
        fold = (not self.tokens.one_sequence_per_query and self.model.queries_are_keys and ep.n_queries > 1)
        src = ep.fold_queries() if fold else ep
        tok, n_context = self.tokens.encode(src)
        out = self.model(tok, n_context, cache)
        pred = self.tokens.decode(out, src)
        return pred.reshape(ep.batch_size, ep.n_queries, ep.dy) if fold else pred

    def describe(self) -> dict[str, Any]:
        c = self.model.config
        return {"learner": self.name, "steps": self.model.n_steps, "kernel": c.attention.kernel,
                "heads": c.attention.n_heads, "recurrent": c.recurrent}


def gd_transformer(dx: int, dy: int, n_context: int, etas: float | Sequence[float], steps: int | None = None,
                   w0: Tensor | None = None, gammas: float | Sequence[float] | None = None,
                   dtype: torch.dtype = torch.float64, device: torch.device | str | None = None,
                   **stack_options) -> TransformerLearner:
    """The LSA stack constructed to run K steps of GD (or GD++ when `gammas` is given) from W0."""
    cons = gd_construction(dx, dy, n_context, etas, steps, w0=w0, gammas=gammas, **stack_options)
    w0_t = None if w0 is None else torch.as_tensor(w0, dtype=dtype, device=device)
    name = "gdpp_transformer" if gammas is not None else "gd_transformer"
    return TransformerLearner(cons.build(dtype, device), ConcatTokens(w0=w0_t), name=name)
