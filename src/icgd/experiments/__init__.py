"""Named experiments (one per figure of the sources): `icgd list`, `icgd reproduce NAME`.

`experiments()`, `get_experiment()`, `plan_experiment()` and `run_experiment()` come from
`icgd.experiments.runner`, imported on first use (they load every source: `icgd.experiments.catalog`)."""

from typing import Any

from icgd.experiments.registry import ExperimentContext, register

__all__ = ["ExperimentContext", "experiments", "get_experiment", "plan_experiment", "register", "run_experiment"]


def __getattr__(name: str) -> Any:
    if name in ("experiments", "get_experiment", "plan_experiment", "run_experiment"):
        from icgd.experiments import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'icgd.experiments' has no attribute {name!r}")
