"""Multi-query associative recall (MQAR): key-value pairs in context, queried later, the standard probe of
attention variants (Arora et al. 2023, "Zoology"); `momentum-recall` uses it to compare vanilla and momentum
attention where small models do learn in context.

A sequence is `n_pairs` pairs k_1 v_1 ... k_N v_N, then `n_queries` probes of the keys, each followed by its
value: q_1 a_1 ... q_Q a_Q. Keys are distinct within a sequence and drawn from the first half of the
vocabulary, values distinct too, from the second half; each probe's key is drawn uniformly among the N keys,
independently of the others (a key may be asked twice, or not at all); every draw is fresh per sequence, so a
model can only answer by reading the context. As a next-token task the inputs are the sequence's tokens but
the last (T = 2N + 2Q - 1) and the targets the tokens after them; only the positions of the query keys are
scored (their target is the value), the others carry target -1. Chance accuracy is 1 / (vocab / 2); the best
answer that does not read the query key scores 1 / N (`guess_accuracy`): a value of the context, each as
likely as the others.

Why probes drawn independently: were every key asked once, in a random order, the values already asked would
tell which remain, and a model that never reads the query key would score 1 / (N - i) at the i-th probe,
(1 + 1/2 + ... + 1/N) / N over the sequence (0.52 at N = 4, 0.34 at N = 8). Quick-mode vanilla models
trained on such probes learnt exactly that (by probe index at N = 4, seed 0: 0.29, 0.37, 0.48, 0.97 against
0.25, 0.33, 0.50, 1), and passed a premise measured against chance (1/32). Values are distinct so that their
frequencies tell nothing either.

Episodes hold float ids (B, T, 1) in both the context and the query fields, as the text task's do, so the
causal LM (`icgd.learners.causal_lm`) trains on it unchanged.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.tasks.base import IGNORE, MaskedNextToken, draw_device, masked_next_token_loss, moved

__all__ = ["IGNORE", "AssociativeRecall", "masked_next_token_loss", "recall_accuracy"]


def recall_accuracy(logits: Tensor, target: Tensor) -> Tensor:
    """Per-sequence accuracy (B,) at the scored positions: the most probable token is the target."""
    b, t, _ = logits.shape
    y = target.reshape(b, t)
    scored = (y >= 0).to(logits.dtype)
    hit = (logits.argmax(-1) == y.long()).to(logits.dtype) * scored
    return hit.sum(-1) / scored.sum(-1).clamp(min=1)


class AssociativeRecall(MaskedNextToken, BaseModel):
    """Key-value pairs in context, queried later (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: Literal["recall"] = "recall"
    vocab: int = Field(64, ge=4, description="tokens: keys are the first half, values the second")
    n_pairs: int = Field(8, ge=1, description="key-value pairs in context N")
    queries: int | None = Field(None, ge=1, description="probes Q (default Q = N)")
    probes: Literal["independent", "each_once"] = Field(
        "independent", description="independent: each probe's key drawn uniformly among the N; each_once: the "
                                   "earlier version's probes, Q distinct keys in a random order (a model that does "
                                   "not read the key exploits them; kept to show that; values distinct in both)")

    #: every draw on the generator's device, nothing read back (`icgd.train.graphed`)
    sync_free_sampling: ClassVar[bool] = True

    @model_validator(mode="after")
    def _fits(self) -> "AssociativeRecall":
        if self.vocab % 2:
            raise ValueError(f"vocab={self.vocab} must be even (keys are one half, values the other)")
        if self.probes == "each_once" and self.queries is not None and self.queries > self.n_pairs:
            raise ValueError(f"queries={self.queries} distinct probes are more than the {self.n_pairs} keys")
        if self.n_pairs > self.vocab // 2:
            raise ValueError(f"n_pairs={self.n_pairs} distinct keys do not fit in {self.vocab // 2} key tokens")
        return self

    @property
    def n_queried(self) -> int:
        return self.n_pairs if self.queries is None else self.queries

    @property
    def seq_len(self) -> int:
        """Input tokens per sequence T = 2N + 2Q - 1."""
        return 2 * self.n_pairs + 2 * self.n_queried - 1

    @property
    def chance(self) -> float:
        """The accuracy of a model that ignores the context."""
        return 2 / self.vocab

    def guess_accuracy(self, ep: Episodes) -> Tensor:
        """(B,) the accuracy of the best answer that does not read the query key: with independent probes, one
        of the context's N distinct values, uniformly (nothing else tells which), 1/N; with `each_once`, one
        of the values not asked yet, 1/(N - i) at the i-th probe, averaged over the probes."""
        n, q = self.n_pairs, self.n_queried
        value = sum(1 / (n - i) for i in range(q)) / q if self.probes == "each_once" else 1 / n
        return torch.full((ep.query_x.shape[0],), value, dtype=ep.query_x.dtype, device=ep.query_x.device)

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Episodes:
        g_dev = draw_device(batch, generator)
        half, n, q = self.vocab // 2, self.n_pairs, self.n_queried
        keys = torch.rand((batch, half), generator=generator, device=g_dev).argsort(-1)[:, :n]
        values = torch.rand((batch, half), generator=generator, device=g_dev).argsort(-1)[:, :n] + half
        if self.probes == "independent":
            asked = torch.randint(0, n, (batch, q), generator=generator, device=g_dev)
        else:
            asked = torch.rand((batch, n), generator=generator, device=g_dev).argsort(-1)[:, :q]
        pairs = torch.stack([keys, values], -1).reshape(batch, 2 * n)
        probes = torch.stack([keys.gather(1, asked), values.gather(1, asked)], -1).reshape(batch, 2 * q)
        seq = torch.cat([pairs, probes], 1)  # (B, 2N + 2Q)
        x, y = seq[:, :-1].clone(), seq[:, 1:].clone()
        scored = torch.zeros_like(y, dtype=torch.bool)
        scored[:, 2 * n::2].fill_(True)  # the inputs that are query keys, whose next token is the value (fill_: see bursty)
        y = torch.where(scored, y, torch.full_like(y, IGNORE))
        x, y = x.to(dtype)[..., None], y.to(dtype)[..., None]
        return moved(Episodes(context_x=x, context_y=y, query_x=x, query_y=y), device, g_dev)
