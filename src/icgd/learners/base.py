"""The learner interface: anything with `predict(episodes) -> (B, Q, Dy)`."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from torch import Tensor

from icgd.episodes import Episodes


@runtime_checkable
class Learner(Protocol):
    """An in-context learner: reads the context of each episode and predicts its queries.

    predict(episodes) -> predictions (B, Q, Dy), differentiable with respect to episodes.query_x.
    """

    name: str

    def predict(self, episodes: Episodes) -> Tensor:
        ...


def describe(learner: Any) -> dict[str, Any]:
    """A JSON-able description of a learner (its `describe()` when it has one)."""
    if hasattr(learner, "describe"):
        return learner.describe()
    return {"learner": getattr(learner, "name", type(learner).__name__)}
