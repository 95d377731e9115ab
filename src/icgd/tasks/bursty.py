"""Few-shot classification of symbol-label pairs in bursty sequences (Chan et al. 2022, "Data distributional
properties drive emergent in-context learning in transformers"), the setting where in-context learning is
known to emerge in small transformers; `momentum-fewshot` uses it to compare vanilla and momentum attention.

Items are symbols of `n_classes` classes, each class `exemplars` distinct tokens (token c * E + e is
exemplar e of class c: a class is a set of tokens, the same in every sequence, that a model can learn in
its weights, as Omniglot's drawings of one character). Labels are `n_labels` further tokens. A sequence is
bursty: `ways * shots` (item, label) pairs whose classes are drawn among only `ways` classes (each item's
independently: `shots` per class on average, so that counting labels tells nothing), then a query item of
one of the classes that occurred (drawn uniformly among them) followed by its label. The classes' labels are drawn afresh, distinct,
for every sequence, so no weight can know a class's label: the model must find the query's class among the
context's items (which may be other exemplars of it) and copy the label that follows them there.

With `order="blocks"` the context is instead `shots` blocks, each the `ways` classes once in a random order:
with one shot no class repeats (the non-bursty sequences of a warm start, `TrainConfig.warm_start`: the
vanilla LMs of `momentum-fewshot` never leave the guess's plateau on the bursty ones from scratch, and learn them at
once after the non-bursty ones, docs/sources/momentum.md).

As a next-token task the inputs are the sequence but its last token (T = 2 * ways * shots + 1) and the
targets the tokens after them; the scored positions are the items whose class has already occurred in the
sequence (their label is then in context): the query, and, with `score_context` (the default, for training),
the context items after their class's first occurrence. Other positions carry target -1. A model that ignores
the context scores 1 / n_labels (`chance`); one that answers with one of the context's labels without finding
the query's class, 1 / (the number of distinct labels in the context) (`guess_accuracy`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.tasks.base import IGNORE, MaskedNextToken, draw_device, moved


class BurstyFewShot(MaskedNextToken, BaseModel):
    """Bursty few-shot classification of symbols (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: Literal["bursty"] = "bursty"
    n_classes: int = Field(64, ge=2, description="classes of items, fixed across sequences")
    exemplars: int = Field(4, ge=1, description="distinct item tokens per class")
    n_labels: int = Field(16, ge=2, description="label tokens, assigned to classes afresh per sequence")
    ways: int = Field(4, ge=2, description="classes per sequence")
    shots: int = Field(2, ge=1, description="(item, label) pairs per class in the context")
    order: Literal["random", "blocks"] = Field(
        "random", description="random: each context item's class drawn among the ways (bursty); blocks: "
                              "`shots` blocks, each every class once in a random order")
    score_context: bool = Field(True, description="also score context items whose class occurred before "
                                                  "(false: the query only)")

    sync_free_sampling: ClassVar[bool] = True

    @model_validator(mode="after")
    def _fits(self) -> "BurstyFewShot":
        if self.ways > self.n_classes:
            raise ValueError(f"ways={self.ways} classes per sequence but only n_classes={self.n_classes}")
        if self.ways > self.n_labels:
            raise ValueError(f"ways={self.ways} classes need distinct labels but n_labels={self.n_labels}")
        return self

    @property
    def vocab(self) -> int:
        return self.n_classes * self.exemplars + self.n_labels

    @property
    def seq_len(self) -> int:
        """Input tokens per sequence T = 2 * ways * shots + 1."""
        return 2 * self.ways * self.shots + 1

    @property
    def chance(self) -> float:
        """The accuracy of a model that ignores the context."""
        return 1 / self.n_labels

    def guess_accuracy(self, ep: Episodes) -> Tensor:
        """(B,) the accuracy, sequence by sequence, of the best answer that does not find the query's class in
        the context: one of the context's distinct labels, uniformly (1 / their number). How often a label
        occurs says nothing (the query's class is drawn uniformly among the classes that occur)."""
        labels = ep.query_x[:, 1:2 * self.ways * self.shots:2, 0].long() - self.n_classes * self.exemplars
        seen = torch.zeros(labels.shape[0], self.n_labels, dtype=torch.bool, device=labels.device)
        return 1 / seen.scatter_(1, labels, True).sum(1).to(ep.query_x.dtype)

    def query_only(self) -> "BurstyFewShot":
        """The same sequences scored at the query alone (the held-out measure)."""
        return self.model_copy(update={"score_context": False})

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Episodes:
        g_dev = draw_device(batch, generator)
        w, k, e = self.ways, self.shots, self.exemplars
        n_items = self.n_classes * e

        def pick(n: int, of: int) -> Tensor:  # (B, n) distinct draws from range(of)
            return torch.rand((batch, of), generator=generator, device=g_dev).argsort(-1)[:, :n]

        classes, labels = pick(w, self.n_classes), pick(w, self.n_labels) + n_items  # (B, W) each
        # each context item's class drawn among the W, the query's uniformly among those that occur: then how
        # often a label occurs says nothing of whether it is the answer
        if self.order == "blocks":
            slots = torch.cat([pick(w, w) for _ in range(k)], 1)
        else:
            slots = torch.randint(0, w, (batch, w * k), generator=generator, device=g_dev)
        present = torch.zeros(batch, w, dtype=torch.bool, device=g_dev).scatter_(1, slots, True)
        among = torch.rand((batch, w), generator=generator, device=g_dev).masked_fill(~present, -1.0)
        q_slot = among.argmax(1, keepdim=True)
        slots = torch.cat([slots, q_slot], 1)  # (B, WK + 1): the context's classes, then the query's
        ex = torch.randint(0, e, (batch, w * k + 1), generator=generator, device=g_dev)
        items = classes.gather(1, slots) * e + ex
        seq = torch.stack([items, labels.gather(1, slots)], -1).reshape(batch, 2 * (w * k + 1))
        x, y = seq[:, :-1].clone(), seq[:, 1:].clone()
        # an item is scored where its class occurred earlier in the sequence: the query always
        seen = (slots[:, :, None] == slots[:, None, :]).tril(-1).any(-1)  # (B, WK + 1)
        if not self.score_context:
            seen = torch.zeros_like(seen)
        seen[:, -1].fill_(True)  # fill_, not item assignment: that lifts a host scalar (no CUDA graph capture)
        scored = torch.zeros_like(y, dtype=torch.bool)
        scored[:, 0::2] = seen
        y = torch.where(scored, y, torch.full_like(y, IGNORE))
        x, y = x.to(dtype)[..., None], y.to(dtype)[..., None]
        return moved(Episodes(context_x=x, context_y=y, query_x=x, query_y=y), device, g_dev)
