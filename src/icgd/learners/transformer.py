"""Transformer learners: a token construction + a Stack + the construction's read-out."""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor, nn

from icgd.core.episodes import Episodes, ShapeError, require_episodes
from icgd.learners.constructions import gd_construction
from icgd.learners.tokens import ConcatTokens, InterleavedTokens
from icgd.nn.stack import Stack


class TransformerLearner(nn.Module):
    """Episodes -> tokens -> Stack -> read-out predictions (B, Q, Dy).

    Query tokens never see each other: when the stack lets queries be keys (`query_in_keys`) and
    Q > 1, every query gets its own sequence (the context repeated).
    """

    def __init__(self, model: Stack, tokens: ConcatTokens | InterleavedTokens | None = None,
                 name: str = "transformer", n_context: int | None = None) -> None:
        super().__init__()
        self.model = model
        self.tokens = tokens if tokens is not None else ConcatTokens()
        self.name = name
        #: the context size N its weights were built for (a construction's 1/N), or None: any N
        self.n_context = n_context

    def extra_repr(self) -> str:  # what a notebook wants to see first: kernel, heads, layers
        c = self.model.config
        n = "" if self.n_context is None else f", built for N={self.n_context}"
        return (f"name={self.name!r}, kernel={c.attention.kernel!r}, heads={c.attention.n_heads}, "
                f"layers={self.model.n_steps}{', recurrent' if c.recurrent else ''}, d_model={c.d_model}{n}")

    def forward(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        return self.predict(ep, cache)

    def predict(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        """Predictions (B, Q, Dy); `cache` (a dict) collects the named activations of the stack."""
        require_episodes(ep, f"{self.name}.predict")
        if self.n_context is not None and ep.n_context != self.n_context:
            raise ShapeError(f"{self.name} was built for contexts of N={self.n_context} (its weights hold 1/N); "
                             f"these episodes have N={ep.n_context}: build it with n_context={ep.n_context}")
        dtype = next((p.dtype for p in self.model.parameters()), None)
        if dtype is not None and ep.context_x.dtype != dtype:
            raise TypeError(f"{self.name}: the episodes are {str(ep.context_x.dtype).replace('torch.', '')} but the "
                            f"model is {str(dtype).replace('torch.', '')}: use episodes.to(dtype={dtype}) or build "
                            f"the model in {ep.context_x.dtype}")
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
    return TransformerLearner(cons.build(dtype, device), ConcatTokens(w0=w0_t), name=name, n_context=n_context)
