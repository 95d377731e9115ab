"""Tidy tables: claims, results, experiment tables and training metrics as pandas DataFrames.

`icgd.verify` and `icgd.reproduce` return dicts (as they always did) of the classes below, which add
frame accessors; the functions read the same tables from directories written before. pandas is imported
on first use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: the columns of `claims_frame`, in order
CLAIM_COLUMNS = ["suite", "mode", "id", "claim", "source", "experiment", "role", "measured", "reference",
                 "reference_source", "op", "threshold", "passed", "why", "note"]


class TableError(ValueError):
    """A directory or file that does not hold the table asked for."""


def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise TableError(f"{path.parent}: no {path.name} ({what})")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise TableError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None


def claims_frame(report: Mapping[str, Any] | str | Path) -> "pd.DataFrame":
    """One row per claim of an `icgd verify` report (the dict, or a directory holding claims.json): suite,
    mode, id, claim, source, experiment, role, measured (float; NaN when not measured), reference (the authors'
    value of the measure, float; NaN where none exists), reference_source (where it was read), op ("<", ...),
    threshold (float), passed (bool), why, note ("" when none)."""
    import pandas as pd

    if not isinstance(report, Mapping):
        report = _read_json(Path(report) / "claims.json", "not an `icgd verify` directory")
    if not isinstance(report.get("claims"), list):
        raise TableError("not a claims report: no list of claims")
    mode = report.get("mode", "quick" if report.get("quick") else "full")
    rows = []
    for c in report["claims"]:
        op, _, value = str(c.get("threshold", "")).partition(" ")
        rows.append({"suite": report.get("suite"), "mode": mode, "id": c.get("id"), "claim": c.get("claim"),
                     "source": c.get("source"), "experiment": c.get("experiment"), "role": c.get("role", "source"),
                     "measured": _float(c.get("measured")), "reference": _float(c.get("reference")),
                     "reference_source": c.get("reference_source"), "op": op, "threshold": _float(value),
                     "passed": bool(c.get("passed")), "why": c.get("why", ""), "note": c.get("note", "")})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def results_frame(results: Mapping[str, Any] | str | Path) -> "pd.DataFrame":
    """An experiment's results (the dict, or a directory holding results.json) as rows (key, value): value a
    float where the result is a number, else the JSON value as it is (lists, dicts, strings)."""
    import pandas as pd

    if not isinstance(results, Mapping):
        results = _read_json(Path(results) / "results.json", "not an experiment directory")
    rows = [{"key": k, "value": _float(v) if _is_number(v) else v} for k, v in results.items()]
    return pd.DataFrame(rows, columns=["key", "value"])


def experiment_tables(directory: str | Path) -> dict[str, "pd.DataFrame"]:
    """The tables an experiment wrote into `directory` ({name: frame} of its NAME.csv files), floats read
    exactly."""
    import pandas as pd

    directory = Path(directory)
    if not directory.is_dir():
        raise TableError(f"{directory}: not a directory")
    # pandas 3 parses floats exactly by default; pandas 2 needs round_trip for that
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    return {p.stem: pd.read_csv(p, **exact) for p in sorted(directory.glob("*.csv"))}


def metrics_frame(run_dir: str | Path) -> "pd.DataFrame":
    """A training run directory's metrics: one row per evaluation step and seed (`RunDir.metrics_frame`)."""
    from icgd.train.rundir import RunDir

    return RunDir.open(run_dir).metrics_frame()


class VerifyReport(dict):
    """What `icgd.verify` returns: the report dict ({"suite", "mode", "seconds", "claims", "profile", ...}),
    with its claims as a frame. `out` is the directory the experiments ran in."""

    def __init__(self, report: Mapping[str, Any], out: str | Path | None = None) -> None:
        super().__init__(report)
        self.out = None if out is None else Path(out)

    def claims_frame(self) -> "pd.DataFrame":
        """One row per claim (`icgd.results.tables.claims_frame`)."""
        return claims_frame(self)

    def experiment_tables(self, experiment: str) -> dict[str, "pd.DataFrame"]:
        """The tables experiment `experiment` wrote (its directory under `out`)."""
        if self.out is None:
            raise TableError("this report has no directory")
        return experiment_tables(self.out / experiment)


class ExperimentResults(dict):
    """What `icgd.reproduce` returns: the experiment's results dict (as in results.json), with frames of it
    and of the tables it wrote into `out`."""

    def __init__(self, results: Mapping[str, Any], out: str | Path | None = None) -> None:
        super().__init__(results)
        self.out = None if out is None else Path(out)

    def frame(self) -> "pd.DataFrame":
        """The results as rows (key, value) (`icgd.results.tables.results_frame`)."""
        return results_frame(self)

    def tables(self) -> dict[str, "pd.DataFrame"]:
        """{name: frame} of the tables the experiment wrote."""
        if self.out is None:
            raise TableError("these results have no directory")
        return experiment_tables(self.out)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan
