"""Reading the directories `icgd verify` writes, for the report: claims.json, each experiment's results.json,
figures, report.md and per-seed tables, the environment; the results a claim's number is made of and their
spread over seeds; the set-up notes that ship with each source (`notes.md` in its package, `notes_files`;
the documentation site's page "reproduction notes" includes them)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the run modes in the order the page puts them side by side
MODES = ("smoke", "quick", "full")
#: the sources as the README names them
SOURCE_TITLES = {
    "000": "von Oswald et al. 2023, Transformers learn in-context by gradient descent",
    "001": "Rossi, Yuan and Hannagan, the replication study (ICLR 2024 blog post)",
    "002": "categorical in-context learning with kernel attention",
    "003": "ICL as implicit finetuning in a pretrained LM",
}
#: how a results key names an aggregate over seeds (a sibling key with another one is the seed spread)
_AGGREGATES = ("worst_seed", "best_seed", "median_seed", "max", "min", "median", "mean", "worst", "best")
_AGG = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(_AGGREGATES) + r")(?![A-Za-z0-9])")
#: a per-seed table is summarised when it has at most this many groups (rows / seeds)
_MAX_GROUPS = 40
_ENV_KEYS = ("icgd", "torch", "numpy", "python", "platform", "device", "cuda", "threads")


class ReportError(ValueError):
    """A directory that is not an `icgd verify` directory, or a file in it that cannot be read."""


@dataclass
class Experiment:
    """What one experiment of a run left in its directory (None / empty where it left nothing)."""

    name: str
    path: Path
    results: dict[str, Any] | None = None
    figures: dict[str, Path] = field(default_factory=dict)  # figure name -> PNG
    report_md: str | None = None
    seed_tables: dict[str, Any] = field(default_factory=dict)  # table name -> DataFrame with a seed column


@dataclass
class Run:
    """One `icgd verify` directory: its claims.json (`report`), its experiments and its environment."""

    path: Path
    report: dict[str, Any]
    experiments: dict[str, Experiment]
    env: dict[str, Any]
    env_source: str  # where `env` came from, in words

    @property
    def suite(self) -> str:
        return str(self.report["suite"])

    @property
    def mode(self) -> str:
        return str(self.report.get("mode") or ("quick" if self.report.get("quick") else "full"))

    @property
    def claims(self) -> list[dict[str, Any]]:
        return self.report["claims"]


# ------------------------------------------------------------------------------------------ reading
def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ReportError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: cannot be read ({e})") from None


def load_run(path: str | Path) -> Run:
    """Read an `icgd verify` directory: claims.json (required), and of each experiment its results.json,
    figures (*.png), report.md and per-seed tables (CSV with a seed column). Raises ReportError."""
    path = Path(path)
    if not path.is_dir():
        raise ReportError(f"{path}: not a directory")
    claims_file = path / "claims.json"
    if not claims_file.is_file():
        raise ReportError(f"{path}: no claims.json (give directories written by `icgd verify`)")
    report = _json(claims_file)
    if not isinstance(report, dict) or not isinstance(report.get("suite"), str) \
            or not isinstance(report.get("claims"), list):
        raise ReportError(f"{claims_file}: not an `icgd verify` report (no suite or no list of claims)")
    for i, c in enumerate(report["claims"]):
        missing = [k for k in ("claim", "measured", "threshold", "passed") if not isinstance(c, dict) or k not in c]
        if missing:
            raise ReportError(f"{claims_file}: claim {i + 1} has no {', '.join(missing)}")
    experiments = {}
    for name in dict.fromkeys(str(c.get("experiment", "")) for c in report["claims"]):
        if name:
            experiments[name] = _load_experiment(path / name, name)
    env, env_source = _environment(path, report)
    return Run(path, report, experiments, env, env_source)


def _load_experiment(path: Path, name: str) -> Experiment:
    exp = Experiment(name, path)
    if not path.is_dir():
        return exp
    if (path / "results.json").is_file():
        results = _json(path / "results.json")
        if not isinstance(results, dict):
            raise ReportError(f"{path / 'results.json'}: not an experiment's results (a JSON object)")
        exp.results = results
    exp.figures = {p.stem: p for p in sorted(path.glob("*.png"))}
    if (path / "report.md").is_file():
        exp.report_md = (path / "report.md").read_text()
    exp.seed_tables = _seed_tables(path)
    return exp


def _seed_tables(path: Path) -> dict[str, Any]:
    import pandas as pd

    tables = {}
    for csv in sorted(path.glob("*.csv")):
        try:
            frame = pd.read_csv(csv)
        except (ValueError, pd.errors.ParserError) as e:
            raise ReportError(f"{csv}: not a readable table ({e})") from None
        if "seed" in frame.columns:
            tables[csv.stem] = frame
    return tables


def _environment(path: Path, report: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The run's environment: claims.json's "env" (written since `icgd report` exists), else what the
    training runs of its model cache recorded (OUT/_train/*/env.json), distinct values joined."""
    if isinstance(report.get("env"), dict):
        return report["env"], "claims.json"
    envs = []
    for f in sorted((path / "_train").glob("*/env.json")):
        try:
            envs.append(json.loads(f.read_text()))
        except (json.JSONDecodeError, OSError):
            continue
    if not envs:
        return {}, "not recorded (a run from before the environment was written to claims.json, no model cache)"
    merged: dict[str, Any] = {}
    for k in _ENV_KEYS + ("backend",):
        values = list(dict.fromkeys(str(e[k]) for e in envs if e.get(k) is not None))
        if values:
            merged[k] = ", ".join(values)
    return merged, f"the {len(envs)} training runs of its model cache (_train/*/env.json)"


# ------------------------------------------------------------------- what a claim's number is made of
class _Traced(dict):
    """An experiment's results that record the keys a claim's measure reads."""

    def __init__(self, data: dict[str, Any], log: list[tuple[str, str]], experiment: str) -> None:
        super().__init__(data)
        self.log, self.experiment = log, experiment

    def __getitem__(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        self.log.append((self.experiment, key))
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default


def claim_inputs(run: Run) -> dict[str, list[tuple[str, str]]]:
    """{claim id: [(experiment, results key), ...]}: the results each claim's measure reads, found by running
    the measure of the claim as the code defines it on the run's results. A claim the code no longer defines,
    or whose measure now gives another number than the run recorded, is left out."""
    try:
        from icgd.claims.runner import SUITES
    except ImportError:  # pragma: no cover - a broken install: the page goes without inputs
        return {}
    if run.suite not in SUITES:
        return {}
    defined = {c.id: c for c in SUITES[run.suite]()}
    results = {n: e.results for n, e in run.experiments.items() if e.results is not None}
    out = {}
    for c in run.claims:
        claim = defined.get(c.get("id"))
        if claim is None:
            continue
        log: list[tuple[str, str]] = []
        traced = {n: _Traced(r, log, n) for n, r in results.items()}
        try:
            value = float(claim.measure(traced))
        except Exception:  # noqa: BLE001 - any failure of a measure means: no inputs to show
            continue
        recorded = _float(c.get("measured"))
        if value == recorded or (math.isnan(value) and math.isnan(recorded)):
            out[c["id"]] = list(dict.fromkeys(log))
    return out


def seed_spread(results: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    """Other aggregates over seeds of the quantity `key` names, where the results hold them: for
    "a1.relative_gap_max" the key "a1.relative_gap_median" -> [("median", 0.0019)]; a per-seed list
    ("KEY_per_seed") -> [("per seed", [...])]."""
    out: list[tuple[str, Any]] = []
    for m in _AGG.finditer(key):
        for alt in _AGGREGATES:
            sibling = key[:m.start()] + alt + key[m.end():]
            if alt != m.group(1) and _is_number(results.get(sibling)):
                out.append((alt.replace("_", " "), results[sibling]))
    for sibling in dict.fromkeys((key + "_per_seed", _AGG.sub("per_seed", key))):
        if sibling != key and isinstance(results.get(sibling), list):
            out.append(("per seed", results[sibling]))
    return out


def summarise_seeds(frame: Any) -> Any | None:
    """A per-seed table summarised over seeds: one row per group, each value column as "min to max
    (median)" over the group's seeds (one value where they agree). The group is named by the columns before
    "seed", by text columns, and by a numeric column after it that every seed has with the same values and
    that varies within the groups so far (a grid such as alpha or step; not a value the groups determine,
    such as GD's loss per input range). None when the table has no value column or too many groups."""
    cols = list(frame.columns)
    at = cols.index("seed")
    keys = cols[:at]
    values = []
    for c in cols[at + 1:]:
        if frame[c].dtype.kind not in "if":
            keys.append(c)
        elif _is_grid(frame, c, keys):
            keys.append(c)
        else:
            values.append(c)
    if not values:
        return None
    groups = frame.groupby(keys, sort=False, dropna=False) if keys else [((), frame)]
    rows = []
    for gkey, g in groups:
        gkey = gkey if isinstance(gkey, tuple) else (gkey,)
        row = dict(zip(keys, gkey)) | {"seeds": g["seed"].nunique()}
        for c in values:
            v = g[c].dropna()
            row[c] = "" if v.empty else _num(v.iloc[0]) if v.nunique() == 1 else \
                f"{_num(v.min())} to {_num(v.max())} ({_num(v.median())})"
        rows.append(row)
        if len(rows) > _MAX_GROUPS:
            return None
    import pandas as pd

    return pd.DataFrame(rows)


def _is_grid(frame: Any, col: str, keys: list[str]) -> bool:
    """Whether numeric column `col` is a grid the rows are laid out on: every seed has the same values of
    it, and it varies within the groups of `keys`."""
    per_seed = frame.groupby("seed")[col].apply(lambda v: tuple(sorted(v.dropna())))
    if per_seed.nunique() != 1 or frame[col].nunique() < 2:
        return False
    if not keys:
        return True
    return bool((frame.groupby(keys, dropna=False)[col].nunique() > 1).any())


def notes_files(templates: bool = True) -> list[str]:
    """The set-up notes that ship with the sources (package data, `Source.notes`), as package paths
    ("icgd/sources/oswald/notes.md"), in the sources' order (without the template sources' unless
    `templates`)."""
    from icgd.experiments.catalog import load_sources

    return [f"icgd/sources/{s.name}/{s.notes}" for s in load_sources().values()
            if s.notes and (templates or not s.template)]


def notes_text(templates: bool = True) -> str | None:
    """Every source's set-up notes as shipped with the package, one after another, or None when there are
    none."""
    from importlib.resources import files

    texts = []
    for path in notes_files(templates):
        package, name = path.rsplit("/", 1)
        try:
            texts.append(files(package.replace("/", ".")).joinpath(name).read_text(encoding="utf-8"))
        except (FileNotFoundError, OSError, ModuleNotFoundError):
            continue
    return "\n\n".join(texts) if texts else None


#: the first lines of docs/reproduction-notes.md, which `notes_page` writes above the sources' notes
NOTES_PAGE_HEADER = (
    "<!-- Generated from each source's set-up notes (src/icgd/sources/NAME/notes.md, shipped with the package so\n"
    "that `icgd report` shows them beside the claims from any install); do not edit here: edit those files and\n"
    "run `python3 -c 'from icgd.report.runs import notes_page; print(notes_page(), end=\"\")' >\n"
    "docs/reproduction-notes.md` (tests/integration/test_docs.py checks it). -->\n")


def notes_page() -> str:
    """docs/reproduction-notes.md: every source's set-up notes, one after another (a page that reads the same
    on the documentation site and on a code host)."""
    return NOTES_PAGE_HEADER + "\n" + (notes_text(templates=False) or "No set-up notes are installed.\n")


def reproduction_notes(path: Path | None = None) -> dict[str, list[tuple[str, str]]]:
    """{claim id: [(column, text), ...]}: the rows of the claim tables under the "### Suite" headings of the
    set-up notes (`path`, default every source's notes shipped with the package; a row may name several claims,
    comma-separated). {} when there are none."""
    text = path.read_text() if path is not None else notes_text()
    if text is None:
        return {}
    notes: dict[str, list[tuple[str, str]]] = {}
    in_suite, header = False, None
    for line in text.splitlines():
        if line.startswith("#"):
            in_suite = line.startswith("### Suite")
        if not line.startswith("|"):
            header = None  # a table ends at the first line that is not a row
            continue
        if not in_suite:
            continue
        cells = _cells(line)
        if header is None:
            header = cells
        elif not all(set(c) <= set("-: ") for c in cells):
            for cid in cells[0].replace("`", "").split(","):
                notes.setdefault(cid.strip(), []).extend(zip(header[1:], cells[1:]))
    return notes


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [p.strip().replace("\\|", "|") for p in parts]


# ------------------------------------------------------------------------------------------ numbers
def _num(v: Any) -> str:
    """A number in 4 significant digits (anything else as it is)."""
    f = _float(v)
    if math.isnan(f) and not _is_number(v):
        return str(v)
    return f"{f:.4g}"


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
