"""What every task shares: its objective (0.5 * squared error at the queries), the explicit reference
learners that make sense on it, and where its random numbers are drawn."""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.core.metrics import MEASURES


def draw_device(batch: int, generator: torch.Generator | None) -> torch.device:
    """The device a task's random numbers are drawn on: its generator's (CPU without one), so that a CPU
    generator gives the same episodes on every device. ValueError unless batch >= 1."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (icgd.core.episodes.make_generator(seed)), got "
                        f"{type(generator).__name__} {generator!r}")
    return generator.device if generator is not None else torch.device("cpu")


def moved(ep: Episodes, device: torch.device | str | None, drawn_on: torch.device) -> Episodes:
    """`ep`, drawn on `drawn_on`, on `device` (unchanged when device is None or the same)."""
    return ep if device is None or torch.device(device) == drawn_on else ep.to(device)


class SquaredErrorObjective:
    """Mixin for tasks with real-valued targets: loss(pred, target) -> (B,) = mean over queries of
    0.5 * ||pred - target||^2; every linear-model reference (GD, per-step GD, GD++, zero) applies.

    A task with another objective (e.g. categorical outcomes: "cross_entropy", with "accuracy" among its
    metrics) names it the same way, from `icgd.core.metrics.MEASURES`."""

    objective: ClassVar[str] = "squared_error"
    #: per-task measures reported beside the loss (names in `icgd.core.metrics.MEASURES`)
    metrics: ClassVar[tuple[str, ...]] = ()
    reference_kinds: ClassVar[tuple[str, ...]] = ("gd", "gd_per_step", "gdpp", "zero")
    #: alignment metrics with the reference learner (prediction difference, sensitivities) apply
    aligns: ClassVar[bool] = True
    #: `sample` draws on the generator's device without reading anything back to the host, so a CUDA graph
    #: can capture it (`icgd.train.graphed`); a task that has not been checked for it says False
    sync_free_sampling: ClassVar[bool] = False
    #: the registered task kind this one is a variant of (the same tokens, another distribution), so that the
    #: model kinds that read that kind read this one; None: a kind of its own
    variant_of: ClassVar[str | None] = None

    @property
    def prior(self) -> float | None:
        """Where a learner's predictions start before reading the context (categorical tasks: 1 / C on each
        entry); None: zero, the regression tasks' start."""
        return None

    def evaluation_task(self):
        """The task whose episodes models are scored on: this one, unless the held-out targets differ from
        the training ones (categorical tasks: the true probabilities instead of sampled labels)."""
        return self

    def loss(self, pred: Tensor, target: Tensor) -> Tensor:
        """Per-task loss (B,) of predictions and targets (B, Q, Dy): the task's objective."""
        return MEASURES[self.objective](pred, target)


class NextTokenObjective:
    """Mixin for token tasks (ids in `query_x`, next-token targets in `query_y`, float ids (B, T, 1)): scored
    by cross-entropy against the unigram reference; the sensitivity metrics (d prediction / d input) mean
    nothing for token ids."""

    objective: ClassVar[str] = "next_token"
    metrics: ClassVar[tuple[str, ...]] = ()
    reference_kinds: ClassVar[tuple[str, ...]] = ("unigram",)
    aligns: ClassVar[bool] = False
    sync_free_sampling: ClassVar[bool] = False
    #: the registered task kind this one is a variant of (the same tokens, another distribution), so that the
    #: model kinds that read that kind read this one; None: a kind of its own
    variant_of: ClassVar[str | None] = None

    @property
    def prior(self) -> float | None:
        """None: token tasks have no prior to subtract."""
        return None
    dx: ClassVar[int] = 1
    dy: ClassVar[int] = 1

    # every position of a sequence (its `seq_len` input tokens) is both context and a query
    @property
    def n_context(self) -> int:
        return self.seq_len

    @property
    def n_queries(self) -> int:
        return self.seq_len

    def evaluation_task(self):
        return self


#: the target of an unscored position of a token task
IGNORE = -1


def masked_next_token_loss(logits: Tensor, target: Tensor) -> Tensor:
    """Per-sequence mean cross-entropy (B,) over the scored positions (target >= 0) of logits (B, T, V)."""
    b, t, v = logits.shape
    y = target.reshape(b * t).long()
    ce = torch.nn.functional.cross_entropy(logits.reshape(b * t, v), y.clamp(min=0), reduction="none").reshape(b, t)
    scored = (target.reshape(b, t) >= 0).to(ce.dtype)
    return (ce * scored).sum(-1) / scored.sum(-1).clamp(min=1)


class MaskedNextToken(NextTokenObjective):
    """Mixin for token tasks scored at some positions only (the others carry target `IGNORE`): recall, bursty
    few-shot."""

    def loss(self, pred: Tensor, target: Tensor) -> Tensor:
        return masked_next_token_loss(pred, target)
