"""Byte-level language modelling on real text that ships in packages (source 003, sec. 4: the momentum
study trains small causal LMs from scratch).

The text of a corpus is the training split of the LM study's task of that name (`icgd.data.text`: BBC News
whole articles, tweets), so the held-out classification queries of the LM study are never trained on;
`split="validation"` reads the validation split's texts. Documents are joined by a blank line and read
as UTF-8 bytes (vocabulary 256).

An episode is one window of `seq_len + 1` bytes starting at a random offset: its tokens x_1..x_T are the
inputs and x_2..x_{T+1} the targets, stored as float ids (B, T, 1) in both the context and the query
fields (every position is a query; the model reads the ids in `query_x`). The loss is the mean
cross-entropy (nats) over the positions, so exp(loss) is the perplexity per byte.

Why bytes and not the packaged LM's tokenizer: its 49,152-token vocabulary would make the output layer
about 30 times the compute of the 2-layer, 64-wide models that train here on 2 cores.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.tasks.base import NextTokenObjective, draw_device, moved

VOCAB = 256
CorpusName = Literal["bbc-news", "tweets"]


@lru_cache(maxsize=8)
def corpus_bytes(names: tuple[str, ...], split: str) -> Tensor:
    """The split's texts of the named corpora as one uint8 tensor (documents joined by a blank line)."""
    from icgd.data.text import bbc_news, tweets

    loaders = {"bbc-news": bbc_news, "tweets": tweets}
    parts: list[bytes] = []
    for name in names:
        task = loaders[name](max_words=None)
        parts += [task.examples[int(i)][0].encode("utf-8") for i in task.split(split)]
    return torch.frombuffer(bytearray(b"\n\n".join(parts)), dtype=torch.uint8).clone()


def next_token_loss(logits: Tensor, target: Tensor) -> Tensor:
    """Per-window mean cross-entropy (B,) of logits (B, T, V) against target ids (B, T, 1) (floats)."""
    b, t, v = logits.shape
    ce = torch.nn.functional.cross_entropy(logits.reshape(b * t, v), target.reshape(b * t).long(), reduction="none")
    return ce.reshape(b, t).mean(-1)


class TextLM(NextTokenObjective, BaseModel):
    """Windows of bytes of real text for next-token prediction (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["text"] = "text"
    corpus: tuple[CorpusName, ...] = Field(("bbc-news", "tweets"), min_length=1)
    seq_len: int = Field(128, ge=2, description="tokens (bytes) per training window T")
    split: Literal["train", "validation", "test"] = "train"

    vocab: ClassVar[int] = VOCAB

    @property
    def n_context(self) -> int:
        return self.seq_len

    @property
    def n_queries(self) -> int:
        return self.seq_len

    def evaluation_task(self) -> "TextLM":
        """Held-out windows: the validation split's texts."""
        return self.model_copy(update={"split": "validation"}) if self.split == "train" else self

    def text(self) -> Tensor:
        """This task's bytes (uint8)."""
        return corpus_bytes(tuple(self.corpus), self.split)

    def loss(self, pred: Tensor, target: Tensor) -> Tensor:
        return next_token_loss(pred, target)

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Episodes:
        g_dev = draw_device(batch, generator)
        data = self.text()
        n = data.numel() - self.seq_len - 1
        if n < 1:
            raise ValueError(f"the {self.split} text has {data.numel()} bytes, fewer than seq_len + 2")
        start = torch.randint(0, n, (batch,), generator=generator, device=g_dev)
        ids = data.to(g_dev)[start[:, None] + torch.arange(self.seq_len + 1, device=g_dev)].to(dtype)[..., None]
        x, y = ids[:, :-1], ids[:, 1:]
        return moved(Episodes(context_x=x, context_y=y, query_x=x, query_y=y), device, g_dev)


class Unigram:
    """The reference of a text task: every position predicts the byte frequencies of the tuning windows
    (add-one smoothed), whatever the context; its loss is the text's unigram entropy."""

    name = "unigram"

    def __init__(self, logp: Tensor) -> None:
        self.logp = logp.to(torch.float64)

    @classmethod
    def fit(cls, ep: Episodes) -> "Unigram":
        """Token frequencies of the scored targets, add-one smoothed over the vocabulary: the 256 bytes of a
        text task; for a task with unscored positions (target -1: `icgd.tasks.recall`) the ids its inputs use,
        so that the smoothing does not spread over ids the task never has."""
        y = ep.query_y.reshape(-1).long().cpu()
        masked = bool((y < 0).any())
        y = y[y >= 0]
        vocab = int(max(ep.query_x.max(), y.max())) + 1 if masked else VOCAB
        counts = torch.bincount(y, minlength=vocab).to(torch.float64) + 1
        return cls(counts.log() - counts.sum().log())

    def predict(self, ep: Episodes) -> Tensor:
        b, q = ep.query_x.shape[:2]
        return self.logp.to(ep.query_x.device, ep.query_x.dtype).expand(b, q, -1)

    def describe(self) -> dict[str, Any]:
        return {"learner": "unigram", "logp": self.logp.tolist()}
