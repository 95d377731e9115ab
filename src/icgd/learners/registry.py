"""Every learner the package provides, by name: `make_learner("ridge", task)` gives one sized for a task.

A `LearnerEntry` says how to make the learner for a task (its sizes read from the task: dx, dy, n_context,
and the constant prior of categorical tasks) and which task objectives it answers; an entry that can serve as
a reference learner (what a trained run is scored against) also says how it is tuned on episodes and rebuilt
from its `describe()` (`icgd.learners.references` reads those). The learners trained by `icgd train` are the
model kinds' (`icgd.train.kinds`). The conformance tests (tests/unit/test_conformance.py) hold every entry here
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
    #: as a reference learner: tune(tuning episodes, steps) -> the learner tuned on them (None: not a reference)
    tune: Callable[[Any, int], Learner] | None = None
    #: as a reference learner: rebuild(its describe()) -> the learner (what a run directory's reference.json holds)
    rebuild: Callable[[dict[str, Any]], Learner] | None = None


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


def _tune_gd(per_step: bool = False) -> Callable[[Any, int], Learner]:
    from icgd.learners.tuning import tune_gd

    return lambda tune, steps: tune_gd(tune, steps, per_step=per_step)


def _tune_gdpp(tune: Any, steps: int) -> Learner:
    from icgd.learners.tuning import tune_gdpp

    return tune_gdpp(tune, steps)


def _fit_unigram(tune: Any, steps: int) -> Learner:
    from icgd.tasks.text import Unigram

    return Unigram.fit(tune)


def _rebuild_unigram(d: dict[str, Any]) -> Learner:
    from icgd.tasks.text import Unigram

    return Unigram(torch.tensor(d["logp"], dtype=torch.float64))


for _entry in (
    LearnerEntry("zero", lambda task, g: ZeroPredictor(), doc="predicts 0",
                 tune=lambda tune, steps: ZeroPredictor(), rebuild=lambda d: ZeroPredictor()),
    LearnerEntry("gd", lambda task, g: GD(0.5, steps=2), doc="2 steps of GD on the linear model, eta 0.5",
                 tune=_tune_gd(), rebuild=lambda d: GD(d["eta"], name="gd")),
    LearnerEntry("gd_per_step", lambda task, g: GD([0.5, 0.4], name="gd_per_step"),
                 doc="2 steps of GD with one eta per step (0.5, 0.4)",
                 tune=_tune_gd(per_step=True), rebuild=lambda d: GD(d["eta"], name="gd_per_step")),
    LearnerEntry("gdpp", lambda task, g: GDPlusPlus(0.5, 0.05, steps=2), doc="2 steps of GD++, eta 0.5, gamma 0.05",
                 tune=_tune_gdpp, rebuild=lambda d: GDPlusPlus(d["eta"], d["gamma"])),
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
                 doc="byte frequencies of 64 windows of the text (a text task's reference)",
                 tune=_fit_unigram, rebuild=_rebuild_unigram),
):
    register_learner(_entry)
