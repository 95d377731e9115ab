"""The model-kind registry: what a training config's `model.kind` can name, one registration per kind.

A `ModelKind` ties together everything the training code needs to know about a network, so that no code
asks which class a config or a module is:
- `config`: its config section, a `ModelSection` (pydantic) whose `kind` field is `Literal[name]`;
- `build(config, dtype, device, generator) -> nn.Module`: one seed's network, whose state_dict holds the
  weights the engine stacks over seeds;
- `learner(config, module, name)`: the learner (`predict(episodes) -> (B, Q, Dy)`) around the module
  (None: the module is itself a learner);
- `prefix`: the weights' prefix inside that learner (for `torch.func.functional_call`);
- `backends`: the training backends that can compute it (`icgd.train.backends`; each still applies its
  own rule to the config at hand), "generic" always among them;
- `tasks`: the task kinds it reads (None: any), checked when a config is validated;
- `graph_capturable`: its generic-backend step reads nothing back to the host, so the CUDA graph step
  (`icgd.train.graphed`) may capture it (tests/unit/test_graphed.py checks each kind that says so, on the CPU);
- `example`: a small training config (a dict, as YAML would give it) that trains this kind: what the
  conformance tests train, and a starting point for a user.

`register_model_kind` adds one (the built-in kinds register in `icgd.train.models`); `TrainConfig` then
accepts `model: {kind: NAME, ...}` at once.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from icgd.core.registry import Registry

#: the training backends a kind may declare (fastest first; `icgd.train.backends.select` picks among them)
BACKENDS = ("compiled", "fused", "generic")


class StrictSection(BaseModel):
    """The base of every config section: an unknown key is refused, a number must be finite (`optim.lr=inf`
    or `nan` is refused by name, never trained on), and the section is immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ModelSection(StrictSection):
    """The base of a model kind's config section: what the training code reads of every kind."""

    @property
    def gd_steps(self) -> int:
        """Steps of the GD reference a run is scored against by default (`eval.reference_steps` overrides)."""
        return 1


@dataclass(frozen=True)
class ModelKind:
    """One registered model kind (see the module doc)."""

    name: str
    config: type[BaseModel]
    build: Callable[..., Any]
    learner: Callable[..., Any] | None = None
    prefix: str = ""
    backends: tuple[str, ...] = ("generic",)
    tasks: tuple[str, ...] | None = None
    graph_capturable: bool = False
    example: dict[str, Any] = field(default_factory=dict)
    doc: str = ""

    def __post_init__(self) -> None:
        if not issubclass(self.config, ModelSection):
            raise ValueError(f"model kind {self.name!r}: its config {self.config.__name__} must subclass ModelSection")
        kind_field = self.config.model_fields.get("kind")
        allowed = typing.get_args(kind_field.annotation) if kind_field is not None else ()
        if allowed != (self.name,):
            raise ValueError(f"model kind {self.name!r}: its config {self.config.__name__} needs a field "
                             f"kind: Literal[{self.name!r}]")
        unknown = [b for b in self.backends if b not in BACKENDS]
        if unknown or "generic" not in self.backends:
            raise ValueError(f"model kind {self.name!r}: backends must be among {BACKENDS} and include generic, "
                             f"got {self.backends}")


#: every registered kind by name, in registration order (the first is the default of a config)
MODEL_KINDS: Registry[ModelKind] = Registry("model kind")
_listeners: list[Callable[[], None]] = []


def register_model_kind(kind: ModelKind) -> ModelKind:
    """Add `kind` to the registry (names are unique); configs accept it from then on."""
    MODEL_KINDS.add(kind.name, kind)
    for listener in _listeners:
        listener()
    return kind


def unregister_model_kind(name: str) -> None:
    """Remove a kind registered by `register_model_kind` (a notebook's or a test's own kind)."""
    MODEL_KINDS.lookup(name)
    del MODEL_KINDS[name]
    for listener in _listeners:
        listener()


def on_change(listener: Callable[[], None]) -> None:
    """Call `listener()` whenever a kind is registered or removed (`icgd.train.config` rebuilds its union)."""
    _listeners.append(listener)


def model_kind(model: Any) -> ModelKind:
    """The registered kind of a model config section (anything with a `kind`)."""
    try:
        return MODEL_KINDS[model.kind]
    except KeyError:
        raise ValueError(f"unknown model kind {model.kind!r}; known: {', '.join(MODEL_KINDS)}") from None
