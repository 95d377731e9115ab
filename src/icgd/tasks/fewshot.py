"""Few-shot classification of held-out classes from real features (source 002, Fig. 5).

The classes of a feature set (`icgd.data.features`) are split once, by `split_seed`, into training and
held-out classes; an episode draws `n_way` classes of its split, `n_shot` context examples and
`n_query_shots` queries of each, in a random order. Labels are local to the episode (the order in which
its classes were drawn) and encoded as in the categorical task: one-hot on 0..n_way-2, the last class all
zeros, prior 1/n_way. Features are standardised with the mean and std of the training classes' examples
(nothing of the held-out classes is used; a channel constant on them is only centred) and divided by sqrt(d),
so that x_i . x is of order 1.

Training episodes come from the training classes; `evaluation_task()` draws from the held-out classes and
scores the error rate of the most probable label (1 - accuracy).
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor

from icgd.core.episodes import Episodes, ShapeError
from icgd.tasks.base import SquaredErrorObjective, draw_device, moved
from icgd.tasks.categorical import complete_probabilities


@functools.lru_cache(maxsize=4)
def _features(name: str) -> tuple[Tensor, Tensor, int]:
    """(features (M, d) float32, labels (M,), K) of a feature set, loaded once per process."""
    from icgd.data.features import load_feature_set

    fs = load_feature_set(name)
    return fs.features, fs.labels, fs.num_classes


@functools.lru_cache(maxsize=16)
def _split(name: str, split_seed: int, test_classes: int) -> tuple[Tensor, Tensor, Tensor]:
    """(training classes, held-out classes, standardised features (M, d) float64)."""
    feats, labels, k = _features(name)
    if not 0 < test_classes < k:
        raise ValueError(f"test_classes={test_classes} must be in 1..{k - 1} for {name} ({k} classes)")
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(split_seed))
    test, train = perm[:test_classes].sort().values, perm[test_classes:].sort().values
    x = feats.double()
    seen = torch.isin(labels, train)
    mean, std = x[seen].mean(0), x[seen].std(0)
    # a channel constant on the training classes is left unscaled (centred only): dividing by a clamped std of
    # 1e-6 blew some held-out features up to norms of about 5e4
    std = torch.where(std > 1e-8 * std.max().clamp_min(1e-300), std, torch.ones_like(std))
    return train, test, (x - mean) / std / math.sqrt(x.shape[1])


@functools.lru_cache(maxsize=16)
def _examples(name: str, split_seed: int, test_classes: int, split: str) -> Tensor:
    """(K_split, max count) example indices of each class of the split, in a fixed order, padded with -1
    (built once per split, not at every batch)."""
    train, test, _ = _split(name, split_seed, test_classes)
    _, labels, _ = _features(name)
    rows = [torch.nonzero(labels == c).reshape(-1) for c in (train if split == "train" else test).tolist()]
    table = torch.full((len(rows), max(len(r) for r in rows)), -1, dtype=torch.long)
    for i, r in enumerate(rows):
        table[i, :len(r)] = r
    return table


class FewShotFeatures(SquaredErrorObjective, BaseModel):
    """n_way-class, n_shot-example episodes from the real features of `features` (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: Literal["fewshot"] = "fewshot"
    features: str = Field("glyphs-efficientnet", description="a feature set of icgd.data.features.FEATURE_SETS")
    n_way: int = Field(3, ge=2, description="classes per episode C")
    n_shot: int = Field(10, ge=1, description="context examples per class")
    n_query_shots: int = Field(5, ge=1, description="queries per class")
    test_classes: int = Field(15, ge=1, description="classes held out from training")
    split_seed: int = 0
    split: Literal["train", "test"] = "train"
    score: Literal["squared_error", "error_rate"] = "squared_error"

    reference_kinds: ClassVar[tuple[str, ...]] = ("zero",)

    @model_validator(mode="after")
    def _classes(self) -> "FewShotFeatures":
        from icgd.data.features import FEATURE_SETS

        if self.features not in FEATURE_SETS:
            raise ValueError(f"unknown feature set {self.features!r}; known: {', '.join(FEATURE_SETS)}")
        return self

    def _pools(self) -> tuple[Tensor, Tensor]:
        train, test, x = _split(self.features, self.split_seed, self.test_classes)
        classes = train if self.split == "train" else test
        if len(classes) < self.n_way:
            raise ValueError(f"{self.split} split of {self.features} has {len(classes)} classes, fewer than "
                             f"n_way={self.n_way}")
        return classes, x

    @property
    def dx(self) -> int:
        return int(_split(self.features, self.split_seed, self.test_classes)[2].shape[1])

    @property
    def dy(self) -> int:
        return self.n_way - 1

    @property
    def n_context(self) -> int:
        return self.n_way * self.n_shot

    @property
    def n_queries(self) -> int:
        return self.n_way * self.n_query_shots

    @property
    def prior(self) -> float:
        return 1.0 / self.n_way

    def evaluation_task(self) -> "FewShotFeatures":
        """Episodes of the held-out classes, scored by the error rate of the most probable label."""
        return self.model_copy(update={"split": "test", "score": "error_rate"})

    def loss(self, pred: Tensor, target: Tensor) -> Tensor:
        """Per-task loss (B,): 0.5 * squared error to the encoded labels (training), or the error rate of the
        most probable label (score="error_rate"; the reference class's probability is 1 - the sum)."""
        if self.score == "squared_error":
            return super().loss(pred, target)
        if pred.shape != target.shape:
            raise ShapeError(f"predictions {tuple(pred.shape)} and targets {tuple(target.shape)} differ in shape")
        wrong = complete_probabilities(pred).argmax(-1) != complete_probabilities(target).argmax(-1)
        return wrong.to(pred.dtype).mean(-1)

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Episodes:
        drawn_on = draw_device(batch, generator)
        classes, x = self._pools()
        table = _examples(self.features, self.split_seed, self.test_classes, self.split)
        g = generator
        pick = torch.rand(batch, len(classes), generator=g).argsort(-1)[:, :self.n_way]
        chosen = classes[pick]                                                        # (B, C) class ids
        per = self.n_shot + self.n_query_shots
        fewest = int((table >= 0).sum(1).min())
        if fewest < per:
            raise ValueError(f"{self.features}: a class has {fewest} examples, fewer than "
                             f"n_shot + n_query_shots = {per}")
        slot = pick                                                                   # index into `classes`
        u = torch.rand(batch, self.n_way, table.shape[1], generator=g)
        u = u.masked_fill(table[slot] < 0, 2.0)                                       # padding never drawn
        take = torch.gather(table[slot], 2, u.argsort(-1)[..., :per])                  # (B, C, shots + queries)
        local = torch.arange(self.n_way).expand(batch, self.n_way)
        ctx_idx, q_idx = take[..., :self.n_shot].reshape(batch, -1), take[..., self.n_shot:].reshape(batch, -1)
        ctx_lab = local[:, :, None].expand(-1, -1, self.n_shot).reshape(batch, -1)
        q_lab = local[:, :, None].expand(-1, -1, self.n_query_shots).reshape(batch, -1)
        # shuffle the order of the context and of the queries within each episode
        ctx_perm = torch.rand(batch, ctx_idx.shape[1], generator=g).argsort(-1)
        q_perm = torch.rand(batch, q_idx.shape[1], generator=g).argsort(-1)
        ctx_idx, ctx_lab = ctx_idx.gather(1, ctx_perm), ctx_lab.gather(1, ctx_perm)
        q_idx, q_lab = q_idx.gather(1, q_perm), q_lab.gather(1, q_perm)

        def enc(lab: Tensor) -> Tensor:
            return torch.nn.functional.one_hot(lab, self.n_way)[..., :-1].to(dtype)

        ep = Episodes(context_x=x[ctx_idx].to(dtype), context_y=enc(ctx_lab), query_x=x[q_idx].to(dtype),
                      query_y=enc(q_lab), teacher=chosen.to(dtype).unsqueeze(1))
        return moved(ep, device, drawn_on)
