"""Every learner the package provides, by name: `make_learner("ridge", task)` gives one sized for a task.

A `LearnerEntry` says how to make the learner for a task (its sizes read from the task: dx, dy, n_context,
and the constant prior of categorical tasks) and which task objectives it answers. The learners trained by
`icgd train` are the model kinds' (`icgd.train.kinds`); the references a run is scored against are the tuned
ones of `icgd.learners.references`. The conformance tests (tests/unit/test_conformance.py) hold every entry here
to the same contract: predictions (B, Q, Dy) in the input's dtype and on its device, deterministic, one task
never reading another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from icgd.core.episodes import Learner
from icgd.core.registry import Registry
from icgd.learners.explicit import GD, GDPlusPlus, Ridge, ZeroPredictor
from icgd.learners.kernel_gd import KernelGD
from icgd.learners.transformer import gd_transformer


@dataclass(frozen=True)
class LearnerEntry:
    """One registered learner: make(task, generator) -> a learner for that task's episodes."""

    name: str
    make: Callable[[Any, torch.Generator | None], Learner]
    #: the task objectives (`task.objective`) whose episodes it predicts
    objectives: tuple[str, ...] = ("squared_error",)
    doc: str = ""


#: every registered learner by name
LEARNERS: Registry[LearnerEntry] = Registry("learner")


def register_learner(entry: LearnerEntry) -> LearnerEntry:
    """Add `entry` (names are unique)."""
    return LEARNERS.add(entry.name, entry)


def make_learner(name: str, task: Any, generator: torch.Generator | None = None) -> Learner:
    """The registered learner `name` for `task`'s episodes (ValueError for an unknown name or a task whose
    objective it does not answer)."""
    entry = LEARNERS.lookup(name)
    if task.objective not in entry.objectives:
        raise ValueError(f"learner {name!r} answers {', '.join(entry.objectives)} tasks, not {task.objective!r} "
                         f"({task.kind})")
    return entry.make(task, generator)


def _unigram(task: Any, generator: torch.Generator | None) -> Learner:
    from icgd.tasks.text import Unigram

    return Unigram.fit(task.sample(64, generator))


for _entry in (
    LearnerEntry("zero", lambda task, g: ZeroPredictor(), doc="predicts 0"),
    LearnerEntry("gd", lambda task, g: GD(0.5, steps=2), doc="2 steps of GD on the linear model, eta 0.5"),
    LearnerEntry("gdpp", lambda task, g: GDPlusPlus(0.5, 0.05, steps=2), doc="2 steps of GD++, eta 0.5, gamma 0.05"),
    LearnerEntry("least_squares", lambda task, g: Ridge(0.0), doc="minimum-norm least squares on the context"),
    LearnerEntry("ridge", lambda task, g: Ridge(0.1), doc="ridge regression, alpha 0.1"),
    LearnerEntry("kernel_gd", lambda task, g: KernelGD("rbf", 1.0, 1, task.dy, prior=task.prior or 0.0,
                                                       n_scale=task.n_context),
                 doc="one step of kernel functional GD with the RBF kernel (source 002)"),
    LearnerEntry("gd_transformer", lambda task, g: gd_transformer(task.dx, task.dy, task.n_context, 0.5),
                 doc="the LSA layer constructed to do one GD step (Prop. 1 of source 000)"),
    LearnerEntry("gdpp_transformer", lambda task, g: gd_transformer(task.dx, task.dy, task.n_context, 0.5, gammas=0.05),
                 doc="the LSA layer constructed to do one GD++ step"),
    LearnerEntry("unigram", _unigram, objectives=("next_token",),
                 doc="byte frequencies of 64 windows of the text (a text task's reference)"),
):
    register_learner(_entry)
