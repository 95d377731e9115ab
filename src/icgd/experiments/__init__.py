"""Named experiments (one per figure of the sources): `icgd list`, `icgd reproduce NAME`."""

from icgd.experiments.registry import (
    ExperimentContext,
    experiments,
    get_experiment,
    register,
    run_experiment,
)

__all__ = ["ExperimentContext", "experiments", "get_experiment", "register", "run_experiment"]
