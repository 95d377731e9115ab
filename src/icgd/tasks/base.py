"""What every regression task shares: its objective (0.5 * squared error at the queries) and the
explicit reference learners that make sense on it."""

from __future__ import annotations

from typing import ClassVar

from torch import Tensor

from icgd.metrics import query_loss


class SquaredErrorObjective:
    """Mixin for tasks with real-valued targets: loss(pred, target) -> (B,) = mean over queries of
    0.5 * ||pred - target||^2; every linear-model reference (GD, per-step GD, GD++, zero) applies."""

    objective: ClassVar[str] = "squared_error"
    reference_kinds: ClassVar[tuple[str, ...]] = ("gd", "gd_per_step", "gdpp", "zero")

    def loss(self, pred: Tensor, target: Tensor) -> Tensor:
        """Per-task loss (B,) of predictions and targets (B, Q, Dy)."""
        return query_loss(pred, target)
