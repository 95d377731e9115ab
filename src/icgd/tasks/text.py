"""Language modelling on real text that ships in packages, or on a user's text files (source 003, sec. 4:
the momentum study trains small causal LMs from scratch).

The text of a corpus is the training split of the LM study's task of that name (`icgd.data.text`: BBC News
whole articles, tweets), so the held-out classification queries of the LM study are never trained on;
`split="validation"` reads the validation split's texts. A corpus may also be a UTF-8 text file, split as
`icgd.data.corpus` says. Tokens are UTF-8 bytes (`tokenizer: bytes`, vocabulary 256; documents joined by a
blank line) or the subword tokens of a packaged model's tokenizer cut to `vocab_size`
(`tokenizer: smollm2`, `icgd.data.tokenizer`; documents joined by its end-of-text token).

An episode is one window of `seq_len + 1` tokens starting at a random offset: its tokens x_1..x_T are the
inputs and x_2..x_{T+1} the targets, stored as float ids (B, T, 1) in both the context and the query
fields (every position is a query; the model reads the ids in `query_x`). The loss is the mean
cross-entropy (nats) over the positions, so exp(loss) is the perplexity per token.

Bytes are the default for the smallest models: SmolLM2's whole 49,152-token vocabulary would make the
output layer about 30 times the compute of the 2-layer, 64-wide models that train here on 2 cores.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.tasks.base import NextTokenObjective, draw_device, moved

VOCAB = 256


@lru_cache(maxsize=8)
def corpus_tokens(names: tuple[str, ...], split: str, tokenizer: str = "bytes", vocab_size: int = VOCAB) -> Tensor:
    """The split's documents of the named corpora as one tensor of token ids (uint8 bytes, or int32
    subword ids)."""
    import numpy as np

    from icgd.data.corpus import corpus_documents

    docs = [d for name in names for d in corpus_documents(name, split)]
    if tokenizer == "bytes":
        return torch.frombuffer(bytearray("\n\n".join(docs).encode("utf-8")), dtype=torch.uint8).clone()
    from icgd.data.tokenizer import encode_documents

    return torch.from_numpy(np.ascontiguousarray(encode_documents(tokenizer, vocab_size, docs)))


def next_token_loss(logits: Tensor, target: Tensor) -> Tensor:
    """Per-window mean cross-entropy (B,) of logits (B, T, V) against target ids (B, T, 1) (floats)."""
    b, t, v = logits.shape
    ce = torch.nn.functional.cross_entropy(logits.reshape(b * t, v), target.reshape(b * t).long(), reduction="none")
    return ce.reshape(b, t).mean(-1)


class TextLM(NextTokenObjective, BaseModel):
    """Windows of tokens of real text for next-token prediction (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: Literal["text"] = "text"
    corpus: tuple[str, ...] = Field(("bbc-news", "tweets"), min_length=1,
                                    description="packaged corpora (bbc-news, tweets) or UTF-8 text files")
    seq_len: int = Field(128, ge=2, description="tokens per training window T")
    split: Literal["train", "validation", "test"] = "train"
    tokenizer: Literal["bytes", "smollm2"] = Field("bytes", description="UTF-8 bytes, or SmolLM2's subword "
                                                                        "tokenizer cut to vocab_size tokens")
    vocab_size: int | None = Field(None, ge=2, description="subword tokens kept (default 8192); bytes: 256")

    @field_validator("corpus")
    @classmethod
    def _readable(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from icgd.data.corpus import check_corpus

        return tuple(check_corpus(c) for c in v)

    @model_validator(mode="after")
    def _vocabulary(self) -> "TextLM":
        if self.tokenizer == "bytes":
            if self.vocab_size not in (None, VOCAB):
                raise ValueError(f"vocab_size={self.vocab_size}: byte tokens have a vocabulary of {VOCAB}")
            return self
        from icgd.data.tokenizer import VOCAB_RANGE

        lo, hi = VOCAB_RANGE[self.tokenizer]
        if not lo <= self.vocab <= hi:
            raise ValueError(f"vocab_size={self.vocab}: the {self.tokenizer} tokenizer cuts to {lo}..{hi} tokens")
        return self

    @property
    def vocab(self) -> int:
        if self.tokenizer == "bytes":
            return VOCAB
        return 8192 if self.vocab_size is None else self.vocab_size

    def evaluation_task(self) -> "TextLM":
        """Held-out windows: the validation split's texts."""
        return self.model_copy(update={"split": "validation"}) if self.split == "train" else self

    def text(self) -> Tensor:
        """This task's token ids (uint8 bytes or int32 subword ids)."""
        return corpus_tokens(tuple(self.corpus), self.split, self.tokenizer, self.vocab)

    def encode(self, text: str) -> list[int]:
        """The token ids of one text, as the corpus is tokenized."""
        if self.tokenizer == "bytes":
            return list(text.encode("utf-8"))
        from icgd.data.tokenizer import encode_documents

        return encode_documents(self.tokenizer, self.vocab, [text]).tolist()

    def loss(self, pred: Tensor, target: Tensor) -> Tensor:
        return next_token_loss(pred, target)

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Episodes:
        g_dev = draw_device(batch, generator)
        data = self.text()
        n = data.numel() - self.seq_len - 1
        if n < 1:
            raise ValueError(f"the {self.split} text has {data.numel()} tokens, fewer than seq_len + 2")
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
        """Token frequencies of the scored targets, add-one smoothed over the ids up to the largest the
        episodes hold: for a task with unscored positions (target -1: `icgd.tasks.recall`) the ids its inputs
        use, so that the smoothing does not spread over ids the task never has; for text at least the 256
        bytes (subword text: up to its largest id seen)."""
        y = ep.query_y.reshape(-1).long().cpu()
        masked = bool((y < 0).any())
        y = y[y >= 0]
        vocab = int(max(ep.query_x.max(), y.max())) + 1
        if not masked:
            vocab = max(vocab, VOCAB)
        counts = torch.bincount(y, minlength=vocab).to(torch.float64) + 1
        return cls(counts.log() - counts.sum().log())

    def predict(self, ep: Episodes) -> Tensor:
        b, q = ep.query_x.shape[:2]
        return self.logp.to(ep.query_x.device, ep.query_x.dtype).expand(b, q, -1)

    def describe(self) -> dict[str, Any]:
        return {"learner": "unigram", "logp": self.logp.tolist()}
