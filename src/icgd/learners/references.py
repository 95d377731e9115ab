"""Reference learners: the tuned explicit algorithms a trained model is scored against, by name.

They are the entries of the one learner registry (`icgd.learners.registry.LEARNERS`) that say how they are
tuned and rebuilt (`LearnerEntry.tune`, `.rebuild`): GD, GD with one eta per step, GD++, the zero predictor,
and the unigram of text tasks. A task lists the kinds that make sense on it (`task.reference_kinds`); a
training config names one (`eval.reference`). Each is tuned on separate episodes in float64
(`icgd.learners.tuning`) and can be rebuilt from its `describe()` (what a run directory stores in
reference.json).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from icgd.core.episodes import Episodes, Learner
from icgd.learners.registry import LEARNERS, LearnerEntry


class _References(Mapping[str, LearnerEntry]):
    """The learners of `LEARNERS` that serve as references, read live (a learner registered later with a
    `tune` is one too)."""

    def __getitem__(self, name: str) -> LearnerEntry:
        entry = LEARNERS.get(name)
        if entry is None or entry.tune is None:
            known = ", ".join(n for n in LEARNERS if LEARNERS[n].tune is not None)
            raise ValueError(f"unknown reference {name!r}; known: {known}")
        return entry

    def __iter__(self) -> Iterator[str]:
        return (n for n, e in LEARNERS.items() if e.tune is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: the reference learners by name
REFERENCES: Mapping[str, LearnerEntry] = _References()


def tune_reference(kind: str, tune: Episodes, steps: int) -> Learner:
    """The reference `kind` with `steps` steps, its learning rates tuned on `tune`."""
    return REFERENCES[kind].tune(tune, steps)


def reference_from(description: dict[str, Any]) -> Learner:
    """Rebuild a reference learner from its `describe()`. A clipped GD (`tune_gd(clip=...)`, described as
    "gd") is rebuilt as plain GD with its etas, as run directories have always stored it."""
    return REFERENCES[description["learner"]].rebuild(description)
