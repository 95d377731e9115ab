"""Reference learners: the tuned explicit algorithms a trained model is scored against, by name.

A task lists the kinds that make sense on it (`task.reference_kinds`); a training config names one
(`eval.reference`). Each is tuned on separate episodes in float64 (`icgd.learners.tuning`) and can be
rebuilt from its `describe()` (what a run directory stores in reference.json).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from icgd.core.episodes import Episodes, Learner
from icgd.core.registry import Registry
from icgd.learners.explicit import GD, GDPlusPlus, ZeroPredictor
from icgd.learners.tuning import tune_gd, tune_gdpp


@dataclass(frozen=True)
class ReferenceKind:
    """A reference learner by name: how it is tuned on episodes, and how it is rebuilt from its `describe()`
    (what a run directory stores in reference.json)."""

    tune: Callable[[Episodes, int], Learner]
    rebuild: Callable[[dict[str, Any]], Learner]


def _unigram():
    from icgd.tasks.text import Unigram

    return Unigram


def _gd(kind: str) -> Callable[[dict[str, Any]], Learner]:
    return lambda d: GD(d["eta"], name=kind)


def _rebuild_unigram(d: dict[str, Any]) -> Learner:
    import torch

    return _unigram()(torch.tensor(d["logp"], dtype=torch.float64))


#: the reference learners by name (a task lists those that make sense on it, `task.reference_kinds`)
REFERENCES: Registry[ReferenceKind] = Registry("reference", {
    "gd": ReferenceKind(lambda tune, steps: tune_gd(tune, steps), _gd("gd")),
    "gd_per_step": ReferenceKind(lambda tune, steps: tune_gd(tune, steps, per_step=True), _gd("gd_per_step")),
    "gdpp": ReferenceKind(lambda tune, steps: tune_gdpp(tune, steps), lambda d: GDPlusPlus(d["eta"], d["gamma"])),
    "zero": ReferenceKind(lambda tune, steps: ZeroPredictor(), lambda d: ZeroPredictor()),
    "unigram": ReferenceKind(lambda tune, steps: _unigram().fit(tune), _rebuild_unigram),  # text: byte frequencies
})


def tune_reference(kind: str, tune: Episodes, steps: int) -> Learner:
    """The reference `kind` with `steps` steps, its learning rates tuned on `tune`."""
    return REFERENCES.lookup(kind).tune(tune, steps)


def reference_from(description: dict[str, Any]) -> Learner:
    """Rebuild a reference learner from its `describe()`. A clipped GD (`tune_gd(clip=...)`, described as
    "gd") is rebuilt as plain GD with its etas, as run directories have always stored it."""
    return REFERENCES.lookup(description["learner"]).rebuild(description)
