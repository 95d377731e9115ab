"""Task distributions: each samples Episodes from an explicit torch.Generator, declares its sizes
(dx, dy, n_context, n_queries), what the engine and the learners read of it (its objective, whether
alignment metrics apply, a prior, whether it samples without a host sync: `icgd.core.episodes.TaskDistribution`),
and owns its objective (`loss`) and its reference learners.

`TASKS` is the registry a config's `task.kind` names (the first kind is the default). A task defined
outside the package registers with `register_task` and trains at once (`TrainConfig` rebuilds its union)."""

from collections.abc import Callable

from icgd.core.registry import Registry
from icgd.tasks.bursty import BurstyFewShot
from icgd.tasks.categorical import CategoricalQuadrants
from icgd.tasks.fewshot import FewShotFeatures
from icgd.tasks.gaussian import GaussianRegression
from icgd.tasks.linear import LinearRegression
from icgd.tasks.recall import AssociativeRecall
from icgd.tasks.sine import SineRegression
from icgd.tasks.text import TextLM

#: task kinds by the name a config gives as `task.kind`; the first is the default
TASKS: Registry[type] = Registry("task kind", {
    "linear": LinearRegression, "sine": SineRegression, "categorical": CategoricalQuadrants,
    "fewshot": FewShotFeatures, "text": TextLM, "recall": AssociativeRecall, "bursty": BurstyFewShot,
    "gaussian": GaussianRegression})

_listeners: list[Callable[[], None]] = []


def register_task(cls: type) -> type:
    """Register the task class `cls` under its `kind` (a pydantic model whose `kind` field defaults to its
    name, with what `icgd.core.episodes.TaskDistribution` declares: subclassing one of the objective mixins
    of `icgd.tasks.base` gives the defaults). Configs accept it from then on. Returns `cls` (a decorator)."""
    field = getattr(cls, "model_fields", {}).get("kind")
    if field is None or not isinstance(field.default, str):
        raise ValueError(f"{cls.__name__}: a task needs a `kind` field with its name as default")
    TASKS.add(field.default, cls)
    for listener in _listeners:
        listener()
    return cls


def unregister_task(kind: str) -> None:
    """Remove a task kind registered by `register_task` (a notebook's or a test's own)."""
    TASKS.lookup(kind)
    del TASKS[kind]
    for listener in _listeners:
        listener()


def on_task_change(listener: Callable[[], None]) -> None:
    """Call `listener()` whenever a task kind is registered or removed (`icgd.train.config` rebuilds its union)."""
    _listeners.append(listener)


def get_task(kind: str) -> type:
    """The task class registered as `kind` (ValueError naming the known kinds otherwise)."""
    return TASKS.lookup(kind)


__all__ = ["TASKS", "AssociativeRecall", "BurstyFewShot", "CategoricalQuadrants", "FewShotFeatures",
           "GaussianRegression", "LinearRegression", "SineRegression", "TextLM", "get_task", "on_task_change", "register_task",
           "unregister_task"]
