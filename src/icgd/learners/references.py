"""Reference learners: the tuned explicit algorithms a trained model is scored against, by name.

A task lists the kinds that make sense on it (`task.reference_kinds`); a training config names one
(`eval.reference`). Each is tuned on separate episodes in float64 (`icgd.learners.tuning`) and can be
rebuilt from its `describe()` (what a run directory stores in reference.json).
"""

from __future__ import annotations

from typing import Any, Callable

from icgd.core.episodes import Episodes, Learner
from icgd.learners.explicit import GD, GDPlusPlus, ZeroPredictor
from icgd.learners.tuning import tune_gd, tune_gdpp

#: name -> tune(tuning episodes, steps) -> learner
REFERENCES: dict[str, Callable[[Episodes, int], Learner]] = {
    "gd": lambda tune, steps: tune_gd(tune, steps),
    "gd_per_step": lambda tune, steps: tune_gd(tune, steps, per_step=True),
    "gdpp": lambda tune, steps: tune_gdpp(tune, steps),
    "zero": lambda tune, steps: ZeroPredictor(),
    "unigram": lambda tune, steps: _unigram().fit(tune),  # text tasks: byte frequencies
}


def _unigram():
    from icgd.tasks.text import Unigram

    return Unigram


def tune_reference(kind: str, tune: Episodes, steps: int) -> Learner:
    """The reference `kind` with `steps` steps, its learning rates tuned on `tune`."""
    if kind not in REFERENCES:
        raise ValueError(f"unknown reference {kind!r}; known: {', '.join(REFERENCES)}")
    return REFERENCES[kind](tune, steps)


def reference_from(description: dict[str, Any]) -> Learner:
    """Rebuild a reference learner from its `describe()`."""
    kind = description["learner"]
    if kind == "zero":
        return ZeroPredictor()
    if kind == "unigram":
        import torch

        return _unigram()(torch.tensor(description["logp"], dtype=torch.float64))
    if kind == "gdpp":
        return GDPlusPlus(description["eta"], description["gamma"])
    return GD(description["eta"], name=kind)
