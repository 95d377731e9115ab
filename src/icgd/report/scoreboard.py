"""`icgd scoreboard`: the verdict tables of the documentation, generated from the reports of `icgd verify`.

The scoreboard is a folder (the repository's `docs/scoreboard/`) holding, per suite, the report of one
`icgd verify` run (`<suite>.json`: its claims.json without the profile's per-section rows) and the page made
from it (`<suite>.md`: every claim with its measured value, seeds, interval, bar, verdict and the authors'
number, every model with where it came from, and the measured tables its experiments declare for the source
pages, `Experiment.doc_tables`, copied from the run's CSV files), plus an index of all suites (`index.md`) that
says whether they ran at one commit. No number on a page is typed: `render` makes every page from the JSON files, and
`stale` names the pages that differ from what it makes (the test suite checks the committed folder).

The pages are Markdown from the Jinja2 templates `scoreboard_suite.md.j2` and `scoreboard_index.md.j2`
shipped with the package; this module turns the reports into the plain strings they show.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from icgd.core.io import write_json, write_text
from icgd.core.verdict import VERDICTS, Verdict, verdict_of_row
from icgd.report.runs import ReportError, _float, _num, load_run

INDEX = "index.md"
#: the verify report's keys kept in the scoreboard's JSON (the profile only as its summary)
_KEPT = ("suite", "mode", "quick", "model", "seconds", "claims", "models", "references", "not_run", "env")
#: a table cell that is a list of numbers (a table's per-seed column, as the CSV writes it)
_LIST = re.compile(r"^\[[-+0-9.eE, naNinfINF]*\]$")
#: a table cell that is an integer (shown as it is, not in significant digits)
_INT = re.compile(r"-?[0-9]+")


# ------------------------------------------------------------------------------------------ recording
def record(run: str | Path, board: str | Path) -> Path:
    """Copy the report of the `icgd verify` directory `run` into the scoreboard folder `board` as
    `<suite>.json` (replacing that suite's earlier report); returns its path. Raises ReportError for a
    directory that is not a verify run."""
    loaded = load_run(run)
    report = {k: loaded.report[k] for k in _KEPT if k in loaded.report}
    profile = loaded.report.get("profile")
    if isinstance(profile, dict):
        report["profile"] = {k: v for k, v in profile.items() if k != "rows"}
    report["tables"] = _doc_tables(loaded)
    # a study resumed from its stage cache (source 003's): the call's time is part of the study's; keep the
    # experiments' accounts of what they made and read, so the page can say what the whole study cost
    stages = {name: exp.results["stages"] for name, exp in loaded.experiments.items()
              if isinstance(exp.results, dict) and "stages" in exp.results}
    if stages:
        _stage_totals(stages, f"{loaded.path}")  # a malformed account: refused here, before anything is written
        report["stages"] = stages
    board = Path(board)
    if board.exists() and not board.is_dir():
        raise ReportError(f"{board}: not a folder (the scoreboard is a folder of reports and pages)")
    board.mkdir(parents=True, exist_ok=True)
    path = board / f"{loaded.suite}.json"
    write_json(path, report)
    return path


def _doc_tables(loaded: Any) -> list[dict[str, Any]]:
    """The tables the run's experiments declare for the documentation (`Experiment.doc_tables`), read from
    the CSV files they wrote, every cell kept as the file has it: [{experiment, name, caption, columns, rows}].
    A declared table the run did not write is left out (an experiment that did not run); one without a
    declared column raises ReportError."""
    from icgd.experiments.runner import get_experiment

    tables = []
    for name, exp in loaded.experiments.items():
        try:
            declared = get_experiment(name).doc_tables
        except KeyError:  # an experiment this version of icgd no longer has
            continue
        for t in declared:
            path = exp.path / f"{t.name}.csv"
            if not path.is_file():
                continue
            try:
                with open(path, newline="") as f:
                    reader = csv.DictReader(f)
                    rows, header = list(reader), list(reader.fieldnames or [])
            except (OSError, UnicodeDecodeError, csv.Error) as e:
                raise ReportError(f"{path}: not a readable table ({e})") from None
            columns = list(t.columns) or header
            missing = [c for c in columns if c not in header]
            if missing:
                raise ReportError(f"{path}: no column {', '.join(missing)} (declared by {name}'s table {t.name})")
            tables.append({"experiment": name, "name": t.name, "caption": t.caption, "columns": columns,
                           "rows": [[r[c] for c in columns] for r in rows]})
    return tables


def reports(board: str | Path) -> dict[str, dict[str, Any]]:
    """Every suite's report in the scoreboard folder, {suite: report}, in the order the sources list their
    suites (`icgd.claims.runner.suite_names`), then any other by name."""
    board = Path(board)
    if not board.is_dir():
        raise ReportError(f"{board}: not a folder (give the scoreboard's folder, e.g. docs/scoreboard)")
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(board.glob("*.json")):
        try:
            report = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ReportError(f"{path}: not a readable report ({type(e).__name__})") from None
        if not isinstance(report, dict) or report.get("suite") != path.stem or not isinstance(report.get("claims"), list):
            raise ReportError(f"{path}: not the `icgd verify` report of suite {path.stem!r}")
        out[path.stem] = report
    from icgd.claims.runner import suite_names

    order = {name: i for i, name in enumerate(suite_names())}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


# ------------------------------------------------------------------------------------------ rendering
def render(board: str | Path) -> dict[str, str]:
    """Every page of the scoreboard folder, {file name: Markdown}: one per suite report and the index."""
    all_reports = reports(board)
    suites = {name: _suite_view(report) for name, report in all_reports.items()}
    pages = {f"{name}.md": _template("scoreboard_suite.md.j2").render(s=view) for name, view in suites.items()}
    pages[INDEX] = _template("scoreboard_index.md.j2").render(suites=list(suites.values()),
                                                               commits=_commits(suites.values()),
                                                               undecided=undecided(all_reports))
    return pages


def write(board: str | Path) -> list[Path]:
    """Write every page `render` makes into `board`, and remove a page whose report is gone; returns the
    files written or removed that changed."""
    board = Path(board)
    pages = render(board)
    changed = []
    for name, text in pages.items():
        path = board / name
        if not path.is_file() or path.read_text() != text:
            write_text(path, text)
            changed.append(path)
    for path in board.glob("*.md"):
        if path.name not in pages:
            path.unlink()
            changed.append(path)
    return changed


def stale(board: str | Path) -> list[str]:
    """The pages of `board` that differ from what `render` makes of its reports (or that it lacks, or that
    no report makes): empty when the folder is current."""
    board = Path(board)
    pages = render(board)
    out = [name for name, text in pages.items()
           if not (board / name).is_file() or (board / name).read_text() != text]
    return out + sorted(p.name for p in board.glob("*.md") if p.name not in pages)


@functools.lru_cache(maxsize=None)
def _template(name: str) -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("icgd.report", "templates"), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["cell"] = _cell
    return env.get_template(name)


def _cell(value: Any) -> str:
    """Text fit for a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(value).split()).replace("|", "\\|")


def _table_cell(text: str) -> str:
    """A cell of a measured table: a number in 4 significant digits, a list of numbers as (a, b, ...) in 3
    (an integer as it is), anything else as it is (an empty cell stays empty)."""
    text = str(text).strip()
    if _LIST.match(text):
        items = [x.strip() for x in text[1:-1].split(",") if x.strip()]
        return "(" + ", ".join(x if _INT.fullmatch(x) else f"{_float(x):.3g}" for x in items) + ")" \
            if items else "-"
    if text and not math.isnan(_float(text)) or text.lower() == "nan":
        return text if _INT.fullmatch(text) else f"{_float(text):.4g}"
    return _cell(text)


def _suite_view(report: dict[str, Any]) -> dict[str, Any]:
    """What the suite's page shows, as plain strings."""
    from icgd.experiments.catalog import load_sources

    env = report.get("env") or {}
    rows = report["claims"]
    checks = [r for r in rows if r.get("kind") == "check"]
    claims = [r for r in rows if r.get("kind") != "check"]
    tally = Counter(verdict_of_row(r) for r in claims)
    source = next((s for s in load_sources().values() if report["suite"] in s.suites), None)
    models = report.get("models") or []
    origins = Counter(str(m.get("from")) for m in models)
    not_run = {n["experiment"] for n in report.get("not_run") or []}
    # a study resumed from its stage cache: its accounts summed once, for the sentence and the total
    stages = _stage_totals(report["stages"], f"{report['suite']}.json") if report.get("stages") else None
    return {
        "suite": report["suite"],
        "source": "" if source is None else f"Source {source.number}: {source.title}" if source.number
                  else f"Source: {source.title}",
        "page": f"../{source.docs}" if source is not None and source.docs else None,
        "mode": report.get("mode") or ("quick" if report.get("quick") else "full"),
        "commit": str(env.get("commit") or "not recorded").removesuffix("+dirty"),
        "dirty": str(env.get("commit") or "").endswith("+dirty"),
        "date": str(env.get("finished") or env.get("started") or "")[:10] or "not recorded",
        "command": _command(env.get("command")),
        "device": f"{env.get('device', '?')}" + (f" ({env['cuda']})" if env.get("cuda") else "")
                  + (f", {env['threads']} threads" if env.get("threads") else ""),
        "versions": ", ".join(f"{k} {env[k]}" for k in ("icgd", "torch", "python") if env.get(k)),
        "seconds": _duration(report.get("seconds")),
        "stages": _stages_text(stages),
        "study_seconds": _study_duration(stages),
        "tally": ", ".join(f"{tally.get(v, 0)} {v.value}" for v in VERDICTS),
        "counts": {v.value: tally.get(v, 0) for v in VERDICTS},
        "n_claims": len(claims),
        "n_checks": len(checks),
        "checks_pass": sum(verdict_of_row(r) is Verdict.PASS for r in checks),
        "claims": [_row(r, not_run) for r in claims],
        "checks": [_row(r, not_run) for r in checks],
        # a row whose experiment was not run says so in its verdict; the section "Not run" says why
        "notes": [(r["id"], _cell(r["note"])) for r in rows if r.get("note") and r.get("experiment") not in not_run],
        "no_reference": sum(r.get("reference") is None for r in claims),
        "no_reference_unexplained": sum(r.get("reference") is None and not r.get("reference_note") for r in claims),
        "models": [_origin(m) | {"device": str(m.get("device") or "-")} for m in models],
        "references": [_origin(m) | {"threads": str(m.get("threads") or "-"),
                                     "minutes": _num((m.get("seconds") or 0) / 60)}
                       for m in report.get("references") or []],
        "origins": ", ".join(f"{n} from the {o}" if o in ("store", "cache") else f"{n} {o}"
                             for o, n in sorted(origins.items()))
                   or (f"none trained (the pretrained LM {report['model']})"
                       if report.get("model") else "none used"),
        "tables": [{"experiment": t["experiment"], "name": t["name"], "caption": _cell(t["caption"]),
                    "columns": [_cell(c) for c in t["columns"]],
                    "rows": [[_table_cell(v) for v in row] for row in t["rows"]]}
                   for t in report.get("tables") or []],
        "n_not_run": len(not_run),
        "not_run": [{"experiment": n["experiment"], "models": ", ".join(n["models"]), "minutes": _num(n["minutes"])}
                    for n in report.get("not_run") or []],
    }


def _stage_totals(stages: Any, where: str) -> dict[str, Any]:
    """The experiments' stage-cache accounts ({experiment: {part: StageCache.tally}}) summed: stages made and
    read, the seconds they took (`None` for the read ones where any has no recorded time). Raises ReportError
    for an account that is not one."""
    keys = ("stages_made", "stages_read", "stage_seconds_made", "stage_seconds_read")
    malformed = ReportError(f"{where}: a malformed stage-cache account ('stages': "
                            f"{{experiment: {{part: {{{', '.join(keys)}}}}}}})")
    if not isinstance(stages, dict) or not all(isinstance(per, dict) for per in stages.values()):
        raise malformed
    total: dict[str, Any] = dict.fromkeys(keys, 0)
    for t in (t for per in stages.values() for t in per.values()):
        if not isinstance(t, dict) or any(k not in t or not _amount(t[k], unknown_ok=k == "stage_seconds_read")
                                          for k in keys):
            raise malformed
        for k in keys:
            total[k] = None if total[k] is None or t[k] is None else total[k] + t[k]
    return total


def _amount(value: Any, unknown_ok: bool) -> bool:
    """A count or a time in seconds: a number, not negative (`None`, unknown, only where `unknown_ok`)."""
    if value is None:
        return unknown_ok
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _stages_text(t: dict[str, Any] | None) -> str:
    """What the page says of a run's summed stage-cache accounts (`_stage_totals`): "" where it kept none."""
    if t is None:
        return ""
    read = t["stage_seconds_read"]
    earlier = "" if not t["stages_read"] else \
        "; their time not recorded: saved before stage times were recorded" if read is None \
        else f"; made in {_duration(read)} by earlier calls"
    study = _study_duration(t)
    whole = f"; the study's computing time {study} in all" if study else ""
    return (f"Of its study's stages, this call made {t['stages_made']} ({_duration(t['stage_seconds_made'])}) "
            f"and read {t['stages_read']} from the stage cache (`--cache`{earlier}){whole}.")


def _study_duration(t: dict[str, Any] | None) -> str:
    """The whole computing time of a study resumed from its stage cache (summed accounts, `_stage_totals`),
    what this call made and what earlier calls made ("" where the run read nothing, kept no account, or read
    stages of unknown time)."""
    if t is None or not t["stages_read"] or t["stage_seconds_read"] is None:
        return ""
    return _duration(t["stage_seconds_made"] + t["stage_seconds_read"])


def _origin(m: dict[str, Any]) -> dict[str, str]:
    """What a page shows of a model or a fitted reference the run used: its name, fingerprint, where it came
    from and the commit that made it."""
    return {"name": str(m.get("name")), "fingerprint": str(m.get("fingerprint")), "from": str(m.get("from")),
            "commit": str(m.get("commit") or "")[:10] or "-"}


def _row(r: dict[str, Any], not_run: set[str]) -> dict[str, str]:
    seeds = [v for v in r.get("seeds") or [] if not math.isnan(_float(v))]
    interval = r.get("interval")
    ref = r.get("reference")
    return {"id": r.get("id", ""), "claim": _cell(r["claim"]), "where": _cell(r.get("source", "")),
            "experiment": r.get("experiment", ""),
            "measured": "-" if math.isnan(_float(r["measured"])) else _num(r["measured"]),
            "seeds": f"{_num(min(seeds))} to {_num(max(seeds))} ({len(seeds)})" if seeds else "-",
            "interval": f"[{_num(interval[0])}, {_num(interval[1])}]" if interval else "-",
            "bar": _cell(r["threshold"]),
            "verdict": verdict_of_row(r).value + (" (not run)" if r.get("experiment") in not_run else ""),
            "reference": "-" if ref is None else _num(ref) + (f" ± {r['reference_precision']:.2g}"
                                                             if r.get("reference_precision") else "")
                         + ("" if r.get("reference_passes") in (None, True) else " (fails the bar)"),
            "reference_source": _cell(r.get("reference_source") or "") if ref is not None else "",
            "reference_note": _cell(r.get("reference_note") or "") if ref is None else ""}


def _bar(threshold: Any) -> tuple[str, float] | None:
    """("<" or ">", the number) of a bar written "< 0.1" or "> 0" (None for any other form)."""
    words = str(threshold).split()
    if len(words) != 2 or words[0] not in ("<", ">"):
        return None
    value = _float(words[1])
    return None if math.isnan(value) else (words[0], value)


def decides(row: dict[str, Any]) -> tuple[str, str]:
    """(what splits, what would decide it) of an inconclusive row. Seeds on both sides of the bar: a verdict
    needs every seed (`icgd.core.verdict`), and once one seed is on each side no number of further seeds
    undoes it, so no seed count decides it. Otherwise an interval that holds the bar narrows as one over the
    square root of the queries (or tasks) it resamples: it leaves the bar once its half-width on the bar's
    side falls below the distance from the measured value to the bar, at about (half-width / distance)^2 times
    as many, a FAIL where the value is on the failing side (an estimate for planning, assuming the value
    stays)."""
    bar = _bar(row.get("threshold"))
    if bar is None:
        return "-", "-"
    op, t = bar
    seeds = [v for v in (_float(x) for x in row.get("seeds") or []) if not math.isnan(v)]
    below, above = sum(v < t for v in seeds), sum(v > t for v in seeds)
    if below and above:
        return f"seeds: {below} below the bar, {above} above", "no seed count: the seeds split"
    measured, interval = _float(row.get("measured")), row.get("interval")
    if not interval or math.isnan(measured):
        return "-", "-"
    lo, hi = _float(interval[0]), _float(interval[1])
    if not lo <= t <= hi:
        return f"interval [{_num(lo)}, {_num(hi)}]", "-"
    distance = abs(measured - t)
    half = measured - lo if measured > t else hi - measured
    passing = (measured > t) == (op == ">")
    if distance == 0 or half <= 0:
        return f"interval [{_num(lo)}, {_num(hi)}]", "no count: the value is on the bar"
    factor = (half / distance) ** 2
    return (f"interval [{_num(lo)}, {_num(hi)}]",
            f"about {factor:.2g}x the queries or tasks it resamples" + ("" if passing else ", a FAIL if the value stays"))


def undecided(all_reports: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    """The inconclusive claims of every suite with what splits them and what would decide them (`decides`)."""
    out = []
    for name, report in all_reports.items():
        for r in report["claims"]:
            if r.get("kind") == "check" or verdict_of_row(r) is not Verdict.INCONCLUSIVE:
                continue
            split, decide = decides(r)
            out.append({"suite": name, "id": r.get("id", ""), "measured": _num(r["measured"]),
                        "bar": _cell(r["threshold"]), "split": split, "decide": decide,
                        "note": _cell(r.get("note") or "")})
    return out


def _command(command: Any) -> str:
    """The command as typed, from the path of the `icgd` script onwards."""
    if not command:
        return "not recorded"
    words = str(command).split()
    if words and (words[0].endswith("/icgd") or words[0].endswith(("/icgd/cli.py", "/icgd/cli/__main__.py"))):  # a script, python -m icgd.cli
        words[0] = "icgd"
    return " ".join(words)


def _duration(seconds: Any) -> str:
    s = _float(seconds)
    if math.isnan(s):
        return "not recorded"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _commits(suites: Any) -> dict[str, list[str]]:
    """{commit: [suites run at it]}."""
    out: dict[str, list[str]] = {}
    for s in suites:
        out.setdefault(s["commit"], []).append(s["suite"])
    return out


__all__ = ["decides", "record", "render", "reports", "stale", "undecided", "write"]
