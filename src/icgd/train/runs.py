"""Run directories as whole runs: whether one holds a finished run, load it, start or resume it (what the
experiments' model cache, verify's side-by-side training and sweeps share)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from icgd.train.checkpoint import checkpoint_params, load_checkpoint
from icgd.train.config import TrainConfig, build_config
from icgd.train.engine import TrainingDiverged, TrainResult, diverged_at, train
from icgd.train.rundir import RunDir


def train_into(run: Path, config: TrainConfig, device: str = "cpu", quiet: bool = True,
               stop_after: int | None = None, desc: str | None = None) -> TrainResult:
    """Start the run in `run`, or resume it when it was started, until `stop_after` or the end (desc: the
    progress bar's name)."""
    if (run / "config.yaml").is_file():
        return train(out=run, resume=True, device=device, quiet=quiet, stop_after=stop_after, desc=desc)
    return train(config, run, device=device, quiet=quiet, stop_after=stop_after, desc=desc)


@contextmanager
def run_lock(run: Path) -> Iterator[None]:
    """Hold the lock of training run `run` (a file in the cache's hidden `.locks` folder): processes that share
    a model cache (two experiments run side by side, `icgd verify --workers`, a cluster sweep) and need the same
    model train it once; the others wait, then find it finished. filelock comes with torch. The lock files stay:
    removing one while another process waits on it would let a third take a second lock."""
    from filelock import FileLock

    locks = run.parent / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with FileLock(str(locks / f"{run.name}.lock")):
        yield


def completed(run: Path) -> bool:
    """Whether the training run directory `run` holds a finished run."""
    summary = run / "summary.json"
    return summary.is_file() and json.loads(summary.read_text()).get("status") == "completed"


def recorded_divergence(run: Path) -> TrainingDiverged | None:
    """The divergence that the run directory `run` records (`icgd.train.engine.diverged_at`), or None."""
    summary = run / "summary.json"
    return diverged_at(json.loads(summary.read_text())) if summary.is_file() else None


def finished(run: Path) -> bool:
    """Whether `run` holds a result: a finished run, or one that diverged and records where."""
    return completed(run) or recorded_divergence(run) is not None


def load_run(run: str | Path) -> TrainResult:
    """A finished training run directory as a TrainResult (weights from its checkpoint)."""
    rd = RunDir.open(run)
    config = build_config(rd.read_config())
    tensors, _ = load_checkpoint(rd.checkpoint)
    params = checkpoint_params(tensors)
    summary = json.loads(rd.summary.read_text()) if rd.summary.is_file() else {}
    return TrainResult(rd.path, summary, config, params)
