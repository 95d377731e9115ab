"""Task distributions: each samples Episodes from an explicit torch.Generator, declares its sizes
(dx, dy, n_context, n_queries) and owns its objective (`loss`) and its reference learners.

`TASKS` is the registry a config's `task.kind` names (the first kind is the default)."""

from icgd.tasks.bursty import BurstyFewShot
from icgd.tasks.categorical import CategoricalQuadrants
from icgd.tasks.fewshot import FewShotFeatures
from icgd.tasks.linear import LinearRegression
from icgd.tasks.recall import AssociativeRecall
from icgd.tasks.sine import SineRegression
from icgd.tasks.text import TextLM

#: task kinds by the name a config gives as `task.kind`; the first is the default
TASKS: dict[str, type] = {"linear": LinearRegression, "sine": SineRegression, "categorical": CategoricalQuadrants,
                         "fewshot": FewShotFeatures, "text": TextLM, "recall": AssociativeRecall,
                         "bursty": BurstyFewShot}


def get_task(kind: str) -> type:
    """The task class registered as `kind` (ValueError naming the known kinds otherwise)."""
    try:
        return TASKS[kind]
    except KeyError:
        raise ValueError(f"unknown task kind {kind!r}; known: {', '.join(TASKS)}") from None


__all__ = ["TASKS", "AssociativeRecall", "BurstyFewShot", "CategoricalQuadrants", "FewShotFeatures", "LinearRegression", "SineRegression", "TextLM", "get_task"]
