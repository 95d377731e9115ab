"""The learner interface: anything with `predict(episodes) -> (B, Q, Dy)`."""

from __future__ import annotations

from typing import Any

from icgd.core.episodes import Learner

__all__ = ["Learner", "describe"]


def describe(learner: Any) -> dict[str, Any]:
    """A JSON-able description of a learner (its `describe()` when it has one)."""
    if hasattr(learner, "describe"):
        return learner.describe()
    return {"learner": getattr(learner, "name", type(learner).__name__)}
