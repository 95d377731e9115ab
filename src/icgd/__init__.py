"""icgd: in-context learning as gradient descent.

Core pipeline: a task distribution samples `Episodes`; a learner (explicit algorithm or transformer)
predicts the queries; `icgd.core.metrics` scores predictions and compares learners.

`verify(suite, out, ...)` (`icgd.claims.runner.verify`) and `reproduce(name, out, ...)`
(`icgd.experiments.runner.run_experiment`) run the studies; they are imported on first use and return
dicts with pandas accessors (`icgd.results.tables`: `.claims_frame()`, `.frame()`, `.tables()`).
"""

from typing import Any

from icgd.core.episodes import Episodes, ShapeError, TaskDistribution, make_generator
from icgd.core.version import __version__

__all__ = ["Episodes", "ShapeError", "TaskDistribution", "make_generator", "reproduce", "verify", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "verify":
        from icgd.claims.runner import verify

        return verify
    if name == "reproduce":
        from icgd.experiments.runner import run_experiment

        return run_experiment
    raise AttributeError(f"module 'icgd' has no attribute {name!r}")
