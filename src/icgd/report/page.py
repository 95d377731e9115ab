"""`icgd report`: one self-contained HTML page from the directories `icgd verify` writes.

Per suite (one source's claims), experiment by experiment: every claim (the source's statement, the measured
value with the seed spread where the results hold one, the threshold, PASS/FAIL, why the threshold, the
reproduction notes of docs/reproduction-notes.md) with the experiment's figures beside it; the quick and
full runs of a suite side by side; then the environment (versions, device, threads) and where the time went.

The figures are embedded as base64 PNG and a Content-Security-Policy forbids every load (`default-src
'none'`), so the page opens without a network and a browser names any reference that escaped
(tests/test_report.py renders it in headless Chromium). The page has no script.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from icgd.core.io import write_text

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


def reproduction_notes(path: Path | None = None) -> dict[str, list[tuple[str, str]]]:
    """{claim id: [(column, text), ...]}: the rows of the claim tables under the "### Suite" headings of
    docs/reproduction-notes.md (a row may name several claims, comma-separated). {} when the file is not
    there (an install without the repository's docs)."""
    path = path or Path(__file__).resolve().parents[3] / "docs" / "reproduction-notes.md"
    if not path.is_file():
        return {}
    notes: dict[str, list[tuple[str, str]]] = {}
    in_suite, header = False, None
    for line in path.read_text().splitlines():
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


# ------------------------------------------------------------------------------------------- HTML
def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


@functools.lru_cache(maxsize=1)
def _md() -> Any:
    """markdown-it (CommonMark with tables; raw HTML escaped, not passed through)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _markdown() -> Callable[[str], str]:
    return _md().render


def _inline(text: str) -> str:
    return _md().renderInline(text)


def _num(v: Any) -> str:
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


def _slug(*parts: str) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", p) for p in parts)


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}" loading="lazy">'


def _aspect(path: Path) -> float:
    """Width over height of a PNG, from its header (1.0 when it is not one)."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return 1.0
    w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return w / h if h else 1.0


def _table(frame: Any) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(_num(v) if _is_number(v) else v)}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f'<table class="data"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _run_label(run: Run, runs: list[Run]) -> str:
    """The run's mode, with its directory where two runs of a suite share a mode."""
    same = [r for r in runs if r.suite == run.suite and r.mode == run.mode]
    return run.mode if len(same) == 1 else f"{run.mode} ({run.path.name})"


def _source_line(run: Run) -> str:
    try:
        from icgd.experiments.runner import experiments

        known = experiments()
    except ImportError:  # pragma: no cover
        known = {}
    ids = []
    for name in run.experiments:
        e = known.get(name)
        ids += re.findall(r"source (\d{3})", e.source) if e is not None else []
    ids = list(dict.fromkeys(ids))
    return "; ".join(f"source {i}: {SOURCE_TITLES.get(i, '')}".rstrip(": ") for i in ids)


def _description(name: str, runs: list[Run]) -> str:
    try:
        from icgd.experiments.runner import experiments

        e = experiments().get(name)
        if e is not None:
            return e.description
    except ImportError:  # pragma: no cover
        pass
    for r in runs:  # the first line of its report.md: "# NAME: description"
        md = r.experiments.get(name)
        if md is not None and md.report_md:
            first = md.report_md.splitlines()[0]
            return first.split(":", 1)[1].strip() if ":" in first else ""
    return ""


def _claim_cell(run: Run, c: dict[str, Any], inputs: dict[str, list[tuple[str, str]]]) -> str:
    passed = bool(c.get("passed"))
    badge = f'<span class="badge {"pass" if passed else "fail"}">{"PASS" if passed else "FAIL"}</span>'
    parts = [f'<div class="measured">{_e(_num(c.get("measured")))} {badge}</div>']
    spread = []
    for exp, key in inputs.get(c.get("id", ""), []):
        results = run.experiments[exp].results or {}
        for label, value in seed_spread(results, key):
            if isinstance(value, list):
                nums = [_float(v) for v in value]
                value = f"{_num(min(nums))} to {_num(max(nums))} over {len(nums)}" if nums else "none"
            else:
                value = _num(value)
            spread.append(f"{_e(label)} {_e(value)}")
    if spread:
        parts.append(f'<div class="spread" title="other aggregates over seeds in results.json">seeds: '
                     f'{"; ".join(spread)}</div>')
    if c.get("note"):
        parts.append(f'<div class="note">{_e(c["note"])}</div>')
    return f'<td class="run {"pass" if passed else "fail"}">{"".join(parts)}</td>'


def _claim_row(cid: str, per_run: list[tuple[Run, dict[str, Any] | None]], notes: dict[str, list[tuple[str, str]]],
               inputs: dict[Path, dict[str, list[tuple[str, str]]]]) -> str:
    first = next(c for _, c in per_run if c is not None)
    stricter = ' <span class="badge stricter">stricter check</span>' if first.get("role") == "stricter" else ""
    text = [f'<div class="statement"><code>{_e(cid)}</code>{stricter} {_e(first["claim"])} '
            f'<span class="src">({_e(first.get("source", ""))})</span></div>']
    if first.get("why"):
        text.append(f'<div class="why"><b>Threshold:</b> {_e(first["why"])}</div>')
    used = {(e, k) for run, c in per_run if c is not None for e, k in inputs[run.path].get(cid, [])}
    if used:
        keys = ", ".join(f"<code>{_e(k)}</code>" for _, k in sorted(used))
        text.append(f'<div class="inputs">from results.json: {keys}</div>')
    if notes.get(cid):
        rows = "".join(f"<dt>{_e(h)}</dt><dd>{_inline(t)}</dd>" for h, t in notes[cid])
        text.append(f'<details class="notes"><summary>reproduction notes</summary><dl>{rows}</dl></details>')
    thresholds = list(dict.fromkeys(str(c["threshold"]) for _, c in per_run if c is not None))
    cells = "".join(_claim_cell(run, c, inputs[run.path]) if c is not None
                    else '<td class="run missing">not in this run</td>' for run, c in per_run)
    return (f'<tr id="{_e(_slug("claim", per_run[0][0].suite, cid))}"><td class="claim">{"".join(text)}</td>'
            f'<td class="threshold">{" / ".join(_e(t) for t in thresholds)}</td>{cells}</tr>')


def _experiment_section(suite: str, name: str, runs: list[Run], labels: dict[Path, str],
                        notes: dict[str, list[tuple[str, str]]], inputs: dict[Path, dict[str, list[tuple[str, str]]]],
                        md: Callable[[str], str]) -> str:
    ids: list[str] = []
    for r in runs:
        ids += [c.get("id") or c["claim"] for c in r.claims if c.get("experiment") == name]
    ids = list(dict.fromkeys(ids))
    rows = []
    for cid in ids:
        per_run = [(r, next((c for c in r.claims if (c.get("id") or c["claim"]) == cid
                             and c.get("experiment") == name), None)) for r in runs]
        rows.append(_claim_row(cid, per_run, notes, inputs))
    n_runs = "".join(f'<th class="run">{_e(labels[r.path])}</th>' for r in runs)
    claims = (f'<table class="claims"><thead><tr><th>claim (the source\'s statement)</th><th>threshold</th>'
              f'{n_runs}</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    figures = []
    names = list(dict.fromkeys(f for r in runs for f in r.experiments[name].figures))
    for fig in names:
        cells = []
        for r in runs:
            p = r.experiments[name].figures.get(fig)
            img = _img(p, f"{name} {fig} ({labels[r.path]})") if p else '<p class="missing">not in this run</p>'
            cells.append(f'<div class="fig"><div class="label">{_e(labels[r.path])}</div>{img}</div>')
        paths = [r.experiments[name].figures[fig] for r in runs if fig in r.experiments[name].figures]
        # a wide figure (several panels in a row) is read better with the runs one above the other
        layout = "stack" if max(_aspect(p) for p in paths) > 2.2 else f"n{len(runs)}"
        figures.append(f'<figure><div class="pair {layout}">{"".join(cells)}</div>'
                       f'<figcaption>{_e(fig)}.png</figcaption></figure>')
    if not figures:
        figures.append('<p class="missing">no figures</p>')
    extra = []
    spread = []
    for r in runs:
        for tname, frame in r.experiments[name].seed_tables.items():
            s = summarise_seeds(frame)
            body = _table(s) if s is not None else f'<p class="missing">{len(frame)} rows: see {_e(tname)}.csv</p>'
            spread.append(f"<h5>{_e(tname)}.csv ({_e(labels[r.path])})</h5>{body}")
    if spread:
        extra.append('<details class="seeds"><summary>seed spread: the per-seed tables, min to max (median) over '
                     f'seeds</summary>{"".join(spread)}</details>')
    reports = [f"<h5>{_e(labels[r.path])}</h5>{md(_without_title(r.experiments[name].report_md or ''))}"
               for r in runs if r.experiments[name].report_md]
    if reports:
        extra.append('<details class="expreport"><summary>the experiment\'s report.md (the paper beside the '
                     f'numbers measured)</summary>{"".join(reports)}</details>')
    n_pass = {labels[r.path]: sum(bool(c.get("passed")) for c in r.claims if c.get("experiment") == name)
              for r in runs}
    tally = ", ".join(f"{k}: {v}/{len(ids)}" for k, v in n_pass.items())
    return (f'<article class="experiment" id="{_e(_slug(suite, name))}">'
            f'<h3>{_e(name)} <small>{_e(_description(name, runs))}</small> <span class="tally">{_e(tally)} '
            f'PASS</span></h3><div class="exp-body"><div class="claims-col">{claims}</div>'
            f'<div class="figures-col">{"".join(figures)}</div></div>{"".join(extra)}</article>')


def _without_title(markdown: str) -> str:
    """report.md without its first line "# NAME: description" (the block's heading says it)."""
    lines = markdown.splitlines()
    return "\n".join(lines[1:] if lines and lines[0].startswith("# ") else lines)


def _env_section(runs: list[Run], labels: dict[Path, str]) -> str:
    blocks = []
    for r in runs:
        env = dict(r.env)
        rows = [(k, env.pop(k)) for k in _ENV_KEYS + ("backend", "started", "finished", "command") if k in env]
        rows += [("directory", str(r.path)), ("total seconds", r.report.get("seconds", "")),
                 ("claims.json written", datetime.fromtimestamp((r.path / "claims.json").stat().st_mtime,
                                                                timezone.utc).isoformat(timespec="seconds"))]
        table = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows if v not in (None, ""))
        prof = r.report.get("profile") or {}
        by_section = prof.get("by_section") or {}
        secs = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in by_section.items())
        by_exp = "".join(f"<tr><th>{_e(n)}</th><td>{_e((e.results or {}).get('seconds', ''))}</td></tr>"
                         for n, e in r.experiments.items())
        trained = "".join(f"<tr><th>{_e(t.get('model'))}</th><td>{_e(t.get('seconds'))}</td></tr>"
                          for t in (prof.get("trained") or [])[:8])
        blocks.append(
            f'<div class="env"><h4>{_e(labels[r.path])}</h4><p class="envsrc">environment from '
            f'{_e(r.env_source)}</p><table class="kv">{table}</table>'
            + (f'<h5>seconds by section</h5><table class="kv">{secs}</table>' if secs else "")
            + (f'<h5>seconds by experiment</h5><table class="kv">{by_exp}</table>' if by_exp else "")
            + (f'<h5>longest trainings (seconds)</h5><table class="kv">{trained}</table>' if trained else "")
            + "</div>")
    return f'<section class="envs"><h3>Environment and times</h3><div class="env-row">{"".join(blocks)}</div></section>'


def build_page(runs: list[Run], notes: dict[str, list[tuple[str, str]]] | None = None) -> str:
    """The HTML page of `runs` (one section per suite, the runs of a suite side by side, in MODES order)."""
    from icgd.core.version import __version__

    notes = reproduction_notes() if notes is None else notes
    md = _markdown()
    runs = sorted(runs, key=lambda r: (r.suite, MODES.index(r.mode) if r.mode in MODES else len(MODES), str(r.path)))
    labels = {r.path: _run_label(r, runs) for r in runs}
    inputs = {r.path: claim_inputs(r) for r in runs}
    suites = list(dict.fromkeys(r.suite for r in runs))
    summary = []
    for r in runs:
        n_pass = sum(bool(c.get("passed")) for c in r.claims)
        summary.append(f'<tr><td><a href="#{_e(_slug("suite", r.suite))}">{_e(r.suite)}</a></td>'
                       f'<td>{_e(labels[r.path])}</td><td class="pass">{n_pass}</td>'
                       f'<td class="{"fail" if n_pass < len(r.claims) else ""}">{len(r.claims) - n_pass}</td>'
                       f'<td>{_e(r.report.get("seconds", ""))}</td><td><code>{_e(r.path)}</code></td></tr>')
    toc, sections = [], []
    for s in suites:
        sruns = [r for r in runs if r.suite == s]
        exps = list(dict.fromkeys(n for r in sruns for n in r.experiments))
        toc.append(f'<li><a href="#{_e(_slug("suite", s))}">{_e(s)}</a>: '
                   + ", ".join(f'<a href="#{_e(_slug(s, n))}">{_e(n)}</a>' for n in exps) + "</li>")
        tally = " · ".join(f"{labels[r.path]}: {sum(bool(c.get('passed')) for c in r.claims)} PASS / "
                           f"{sum(not c.get('passed') for c in r.claims)} FAIL" for r in sruns)
        body = "".join(_experiment_section(s, n, sruns, labels, notes, inputs, md) for n in exps)
        sections.append(f'<section class="suite" id="{_e(_slug("suite", s))}"><h2>Suite {_e(s)}</h2>'
                        f'<p class="source">{_e(_source_line(sruns[0]))}</p><p class="tally">{_e(tally)}</p>'
                        f'{body}{_env_section(sruns, labels)}</section>')
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    title = "icgd report: " + ", ".join(f"{s} ({', '.join(labels[r.path] for r in runs if r.suite == s)})"
                                        for s in suites)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>icgd report</h1>
<p class="meta">Generated {_e(now)} by icgd {_e(__version__)} from {len(runs)} run director{"y" if len(runs) == 1 else "ies"}.
Each claim: the source's statement, the number measured here, the threshold it is held to (why, below it) and
PASS or FAIL; the figures of the experiment that measures it beside it.</p>
<table class="runs"><thead><tr><th>suite</th><th>mode</th><th>PASS</th><th>FAIL</th><th>seconds</th><th>directory</th></tr></thead>
<tbody>{"".join(summary)}</tbody></table>
<nav><ul>{"".join(toc)}</ul></nav>
</header>
<main>
{"".join(sections)}
</main>
<footer>Written by <code>icgd report</code>; self-contained: the figures are embedded, nothing is loaded.</footer>
</body>
</html>
"""


def write_report(paths: Iterable[str | Path], out: str | Path = "report.html") -> Path:
    """Read every directory of `paths` (all of them first: a bad one raises ReportError and nothing is
    written), build the page and write it to `out` atomically. Returns `out`."""
    runs = [load_run(p) for p in paths]
    if not runs:
        raise ReportError("no run directories given")
    seen: dict[Path, Path] = {}
    for r in runs:
        key = r.path.resolve()
        if key in seen:
            raise ReportError(f"{r.path}: given twice")
        seen[key] = r.path
    page = build_page(runs)
    out = Path(out)
    if out.is_dir():
        raise ReportError(f"{out}: is a directory (give the HTML file to write)")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(out, page)
    except OSError as e:
        raise ReportError(f"{out}: cannot be written ({e.strerror or e})") from None
    return out


_CSS = """
:root { --pass: #1a7f37; --fail: #cf222e; --line: #d0d7de; --muted: #57606a; --bg2: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1f2328; }
header, main, footer { padding: 0 24px; max-width: 1800px; margin: 0 auto; }
h1 { margin: 18px 0 4px; } h2 { border-bottom: 2px solid var(--line); padding-bottom: 4px; margin-top: 32px; }
h3 { margin: 24px 0 8px; } h3 small { color: var(--muted); font-weight: normal; font-size: 13px; }
h5 { margin: 10px 0 4px; }
.expreport h1, .expreport h2, .expreport h3 { font-size: 14px; margin: 8px 0 4px; }
.meta, .source, .envsrc, footer { color: var(--muted); }
.tally { font-weight: 600; } h3 .tally { font-size: 12px; color: var(--muted); margin-left: 8px; }
table { border-collapse: collapse; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; text-align: left; }
thead th { background: var(--bg2); }
.runs td.pass { color: var(--pass); font-weight: 600; } .runs td.fail { color: var(--fail); font-weight: 600; }
nav ul { padding-left: 18px; } nav li { margin: 2px 0; }
.exp-body { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px; align-items: start; }
@media (max-width: 1100px) { .exp-body { grid-template-columns: minmax(0, 1fr); } }
table.claims { width: 100%; }
td.claim { min-width: 260px; } td.threshold { white-space: nowrap; } td.run { min-width: 120px; }
td.run.pass { background: #dafbe1; } td.run.fail { background: #ffebe9; } td.missing, .missing { color: var(--muted); }
.measured { font-weight: 600; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; font-size: 11px; font-weight: 700; padding: 0 6px; border-radius: 8px; color: #fff; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.badge.stricter { background: #8250df; }
.spread, .inputs, .why, .note { font-size: 12px; color: var(--muted); margin-top: 3px; }
.note { color: var(--fail); }
.src { color: var(--muted); }
details { margin: 6px 0; } summary { cursor: pointer; color: #0969da; }
dl { margin: 4px 0; font-size: 12px; } dt { font-weight: 600; } dd { margin: 0 0 4px 12px; }
figure { margin: 0 0 12px; } figcaption { font-size: 12px; color: var(--muted); text-align: center; }
.pair { display: grid; gap: 6px; } .pair.n2 { grid-template-columns: 1fr 1fr; }
.pair.n3 { grid-template-columns: 1fr 1fr 1fr; }
.fig img { display: block; max-width: 100%; max-height: 480px; width: auto; height: auto; margin: 0 auto;
           border: 1px solid var(--line); background: #fff; }
.fig .label { font-size: 11px; font-weight: 600; color: var(--muted); }
table.data, table.kv { font-size: 12px; margin: 4px 0 8px; } table.data td { font-variant-numeric: tabular-nums; }
.env-row { display: flex; flex-wrap: wrap; gap: 24px; } .env { flex: 1 1 420px; min-width: 0; }
.env td { word-break: break-word; }
code { font-size: 12px; background: var(--bg2); padding: 0 3px; border-radius: 3px; }
"""
