"""Run directories: config.yaml, env.json, reference.json, metrics.parquet, checkpoint.safetensors (+ .json),
summary.json, and weights.safetensors where the config keeps the weights at each evaluation; timing.json, the
training time up to the checkpoint.

The metrics (one row per evaluation step and seed) are written as Parquet (typed columns, exact floats) by
pyarrow; run directories written before keep their metrics.csv, which every reader falls back to."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import yaml

from icgd.core.io import atomic_path, first_line, write_json, write_text

METRIC_COLUMNS = ["step", "seed", "train_loss", "eval_loss", "eval_ci_low", "eval_ci_high", "reference_loss",
                  "prediction_difference", "sensitivity_cosine", "sensitivity_l2", "lr"]
#: the integer columns of the metrics; every other column is float64 (null where not measured)
INT_METRICS = ("step", "seed")


class RunDirError(ValueError):
    """A run directory that cannot be created or opened as asked."""


class RunDir:
    """One training run's directory. Files are replaced atomically; nothing is deleted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.config = path / "config.yaml"
        self.metrics = path / "metrics.parquet"
        #: where runs written before the Parquet file kept their metrics (read when no metrics.parquet)
        self.metrics_csv = path / "metrics.csv"
        self.checkpoint = path / "checkpoint.safetensors"
        self.summary = path / "summary.json"
        self.env = path / "env.json"
        self.reference = path / "reference.json"
        self.weights = path / "weights.safetensors"
        #: the training time up to the checkpoint, beside it and not in it (the checkpoint stays bit-for-bit
        #: the same across reruns)
        self.timing = path / "timing.json"

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
        write_text(self.config, text)

    def read_config(self) -> dict[str, Any]:
        try:
            raw = yaml.safe_load(self.config.read_text())
        except yaml.YAMLError:
            raise RunDirError(f"{self.config}: malformed YAML") from None
        if not isinstance(raw, dict):
            raise RunDirError(f"{self.config}: not a config mapping")
        return raw

    def write_env(self, env: dict[str, Any]) -> None:
        write_json(self.env, env)

    def read_env(self) -> dict[str, Any]:
        """env.json ({} where there is none or it cannot be read)."""
        try:
            env = json.loads(self.env.read_text())
        except (OSError, json.JSONDecodeError):
            return {}
        return env if isinstance(env, dict) else {}

    def write_reference(self, learner: dict[str, Any]) -> None:
        write_json(self.reference, learner)

    def read_reference(self) -> dict[str, Any] | None:
        if not self.reference.is_file():
            return None
        try:
            return json.loads(self.reference.read_text())
        except json.JSONDecodeError:
            return None

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json(self.summary, summary)

    def write_timing(self, step: int, wall_seconds: float) -> None:
        write_json(self.timing, {"step": step, "wall_seconds": wall_seconds})

    def read_timing(self, step: int) -> float | None:
        """The training time up to the checkpoint at `step` (timing.json), None where it was not recorded for
        that step (a run from before the record, or one stopped between the checkpoint and its timing)."""
        try:
            timing = json.loads(self.timing.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        ok = isinstance(timing, dict) and timing.get("step") == step and isinstance(timing.get("wall_seconds"), (int, float))
        return float(timing["wall_seconds"]) if ok else None

    def read_summary(self) -> dict[str, Any] | None:
        """summary.json (None where there is none or it cannot be read: a resume rebuilds it)."""
        try:
            summary = json.loads(self.summary.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return summary if isinstance(summary, dict) else None

    def write_weights(self, history: dict[int, dict[str, Any]]) -> None:
        """Replace weights.safetensors with `history` ({step: {parameter: tensor (seeds first)}}), atomically."""
        from safetensors.torch import save_file

        flat = {f"{step}/{k}": v.detach().to("cpu").contiguous() for step, params in history.items()
                for k, v in params.items()}
        with atomic_path(self.weights) as tmp:
            save_file(flat, str(tmp))

    def read_weights(self) -> dict[int, dict[str, Any]]:
        """{step: {parameter: tensor}} as written by `write_weights` (empty when the run kept none); a file
        that is not one raises RunDirError."""
        if not self.weights.is_file():
            return {}
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            flat = load_file(str(self.weights))
        except (SafetensorError, OSError, ValueError) as e:
            raise RunDirError(f"{self.weights}: corrupt weights file ({first_line(e)})") from None
        out: dict[int, dict[str, Any]] = {}
        for key, v in flat.items():
            step, _, name = key.partition("/")
            out.setdefault(int(step), {})[name] = v
        return dict(sorted(out.items()))

    def write_metrics(self, rows: list[dict[str, Any]]) -> None:
        """Replace metrics.parquet with exactly `rows` ({column: value} with the keys of METRIC_COLUMNS; a
        missing or None value is null), atomically: called at the start, on resume and after each evaluation
        (the rows of a run are a few thousand at most)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([(c, pa.int64() if c in INT_METRICS else pa.float64()) for c in METRIC_COLUMNS])
        table = pa.table({c: pa.array([r.get(c) for r in rows], type=schema.field(c).type)
                          for c in METRIC_COLUMNS}, schema=schema)
        with atomic_path(self.metrics) as tmp:
            pq.write_table(table, tmp)

    def read_metrics(self) -> list[dict[str, Any]]:
        """The metrics rows as written: [{column: int | float | None}] (None where not measured)."""
        if not self.metrics.is_file() and self.metrics_csv.is_file():
            with open(self.metrics_csv, newline="") as f:
                return [{k: _num(v) for k, v in r.items()} for r in csv.DictReader(f)]
        import pyarrow.parquet as pq

        return pq.read_table(self._metrics_file()).to_pylist()

    def metrics_frame(self):
        """The metrics as a pandas DataFrame: one row per evaluation step and seed, the columns of
        METRIC_COLUMNS (step, seed int64; the rest float64, NaN where not measured); floats read exactly."""
        import pandas as pd

        path = self._metrics_file()
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        # pandas 3 parses floats exactly by default; pandas 2 needs round_trip for that
        exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
        return pd.read_csv(path, **exact)

    def _metrics_file(self) -> Path:
        if self.metrics.is_file() or not self.metrics_csv.is_file():
            return self.metrics  # (a missing file is reported by the reader, naming metrics.parquet)
        return self.metrics_csv


def _num(v: str) -> Any:
    if v == "":
        return None
    try:
        return int(v)
    except ValueError:
        return float(v)
