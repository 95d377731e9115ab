"""Run directories: config.yaml, env.json, reference.json, metrics.csv, checkpoint.safetensors (+ .json),
summary.json."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import yaml

METRIC_COLUMNS = ["step", "seed", "train_loss", "eval_loss", "eval_ci_low", "eval_ci_high", "reference_loss",
                  "prediction_difference", "sensitivity_cosine", "sensitivity_l2", "lr"]


class RunDirError(ValueError):
    """A run directory that cannot be created or opened as asked."""


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class RunDir:
    """One training run's directory. Files are replaced atomically; nothing is deleted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.config = path / "config.yaml"
        self.metrics = path / "metrics.csv"
        self.checkpoint = path / "checkpoint.safetensors"
        self.summary = path / "summary.json"
        self.env = path / "env.json"
        self.reference = path / "reference.json"

    @classmethod
    def create(cls, path: str | Path) -> "RunDir":
        path = Path(path)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise RunDirError(f"{path} already exists and is not empty: continue it with --resume {path}, "
                              f"or choose another --out")
        path.mkdir(parents=True, exist_ok=True)
        return cls(path)

    @classmethod
    def open(cls, path: str | Path | None) -> "RunDir":
        if path is None:
            raise RunDirError("--resume needs the run directory")
        run = cls(Path(path))
        if not run.config.is_file():
            raise RunDirError(f"{path}: not a run directory (no config.yaml)")
        return run

    def write_config(self, text: str) -> None:
        _atomic_write(self.config, text)

    def read_config(self) -> dict[str, Any]:
        try:
            raw = yaml.safe_load(self.config.read_text())
        except yaml.YAMLError:
            raise RunDirError(f"{self.config}: malformed YAML") from None
        if not isinstance(raw, dict):
            raise RunDirError(f"{self.config}: not a config mapping")
        return raw

    def write_env(self, env: dict[str, Any]) -> None:
        _atomic_write(self.env, json.dumps(env, indent=2))

    def write_reference(self, learner: dict[str, Any]) -> None:
        _atomic_write(self.reference, json.dumps(learner, indent=2))

    def read_reference(self) -> dict[str, Any] | None:
        if not self.reference.is_file():
            return None
        try:
            return json.loads(self.reference.read_text())
        except json.JSONDecodeError:
            return None

    def write_summary(self, summary: dict[str, Any]) -> None:
        _atomic_write(self.summary, json.dumps(summary, indent=2))

    def write_metrics(self, rows: list[dict[str, Any]]) -> None:
        """Rewrite metrics.csv with exactly `rows` (used at start and on resume)."""
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=METRIC_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        _atomic_write(self.metrics, buf.getvalue())

    def append_metrics(self, rows: list[dict[str, Any]]) -> None:
        with open(self.metrics, "a", newline="") as f:
            csv.DictWriter(f, fieldnames=METRIC_COLUMNS, lineterminator="\n").writerows(rows)

    def read_metrics(self) -> list[dict[str, Any]]:
        with open(self.metrics, newline="") as f:
            return [{k: _num(v) for k, v in r.items()} for r in csv.DictReader(f)]

    def metrics_frame(self):
        """metrics.csv as a pandas DataFrame (one row per evaluation step and seed; floats read exactly)."""
        import pandas as pd

        # pandas 3 parses floats exactly by default; pandas 2 needs round_trip for that
        exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
        return pd.read_csv(self.metrics, **exact)


def _num(v: str) -> Any:
    if v == "":
        return None
    try:
        return int(v)
    except ValueError:
        return float(v)
