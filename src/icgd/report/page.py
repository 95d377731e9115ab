"""`icgd report`: one self-contained HTML page from the directories `icgd verify` writes.

Per suite (one source's claims), experiment by experiment: every claim (the source's statement, the measured
value with the seed spread where the results hold one, the threshold, PASS/FAIL, why the threshold, the
reproduction notes) with the experiment's figures beside it; the quick and full runs of a suite side by side;
then the environment (versions, device, threads) and where the time went.

The markup lives in Jinja2 templates shipped with the package (`templates/`: `page.html.j2`, the macros of
`parts.html.j2` and the style sheet `report.css`), read through importlib.resources and autoescaped; this
module reads the runs (`icgd.report.runs`) and turns them into the plain values the templates show. The
figures are embedded as base64 PNG and a Content-Security-Policy forbids every load (`default-src 'none'`),
so the page opens without a network and a browser names any reference that escaped (tests/integration/test_report.py
renders it in headless Chromium). The page has no script.
"""

from __future__ import annotations

import base64
import functools
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from icgd.core.io import write_text
from icgd.core.verdict import Verdict, checks_tally, count, verdict_of_row
from icgd.report.runs import (
    _ENV_KEYS,
    MODES,
    notes_files,
    SOURCE_TITLES,
    ReportError,
    Run,
    _float,
    _is_number,
    _num,
    claim_inputs,
    load_run,
    reproduction_notes,
    seed_spread,
    summarise_seeds,
)

Inputs = dict[str, list[tuple[str, str]]]


# ------------------------------------------------------------------------------------------ templates
@functools.lru_cache(maxsize=1)
def _templates() -> Any:
    """The Jinja2 environment over the templates shipped in icgd/report/templates (autoescaped, strict)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(loader=jinja2.PackageLoader("icgd.report", "templates"),
                             autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _num
    env.filters["slug"] = lambda parts: _slug(*parts)
    env.filters["markdown"] = lambda text: Markup(_md().render(text))
    env.filters["inline"] = lambda text: Markup(_md().renderInline(text))
    return env


@functools.lru_cache(maxsize=1)
def _md() -> Any:
    """markdown-it (CommonMark with tables; raw HTML escaped, not passed through)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _slug(*parts: str) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", p) for p in parts)


def _png(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _aspect(path: Path) -> float:
    """Width over height of a PNG, from its header (1.0 when it is not one)."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return 1.0
    w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return w / h if h else 1.0


def _table(frame: Any) -> dict[str, Any]:
    return {"columns": [str(c) for c in frame.columns],
            "rows": [[_num(v) if _is_number(v) else str(v) for v in row] for row in frame.itertuples(index=False)]}


# ------------------------------------------------------------------------------------- what is shown
def _run_label(run: Run, runs: list[Run]) -> str:
    """The run's mode, with its directory where two runs of a suite share a mode."""
    same = [r for r in runs if r.suite == run.suite and r.mode == run.mode]
    return run.mode if len(same) == 1 else f"{run.mode} ({run.path.name})"


def _known_experiments() -> dict[str, Any]:
    try:
        from icgd.experiments.runner import experiments

        return experiments()
    except ImportError:  # pragma: no cover - a broken install: descriptions come from report.md
        return {}


def _source_line(run: Run) -> str:
    known = _known_experiments()
    ids = []
    for name in run.experiments:
        e = known.get(name)
        ids += re.findall(r"source (\d{3})", e.source) if e is not None else []
    ids = list(dict.fromkeys(ids))
    return "; ".join(f"source {i}: {SOURCE_TITLES.get(i, '')}".rstrip(": ") for i in ids)


def _description(name: str, runs: list[Run]) -> str:
    e = _known_experiments().get(name)
    if e is not None:
        return e.description
    for r in runs:  # the first line of its report.md: "# NAME: description"
        md = r.experiments.get(name)
        if md is not None and md.report_md:
            first = md.report_md.splitlines()[0]
            return first.split(":", 1)[1].strip() if ":" in first else ""
    return ""


def _verdict(c: dict[str, Any]) -> str:
    """PASS, FAIL, inconclusive or untested (a report from before verdicts has PASS or FAIL only)."""
    return verdict_of_row(c).value


def _cell(run: Run, c: dict[str, Any] | None, inputs: Inputs) -> dict[str, Any] | None:
    """One run's value of a claim: measured, PASS/FAIL, the seed spread of the results it reads, its note."""
    if c is None:
        return None
    spread = []
    for exp, key in inputs.get(c.get("id", ""), []):
        results = run.experiments[exp].results or {}
        for label, value in seed_spread(results, key):
            if isinstance(value, list):
                nums = [_float(v) for v in value]
                value = f"{_num(min(nums))} to {_num(max(nums))} over {len(nums)}" if nums else "none"
            else:
                value = _num(value)
            spread.append(f"{label} {value}")
    return {"passed": bool(c.get("passed")), "verdict": _verdict(c), "measured": c.get("measured"), "spread": spread,
            "interval": c.get("interval"), "note": c.get("note") or ""}


def _claim(cid: str, per_run: list[tuple[Run, dict[str, Any] | None]], notes: dict[str, list[tuple[str, str]]],
           inputs: dict[Path, Inputs]) -> dict[str, Any]:
    first = next(c for _, c in per_run if c is not None)
    used = {(e, k) for run, c in per_run if c is not None for e, k in inputs[run.path].get(cid, [])}
    return {"id": cid, "anchor": _slug("claim", per_run[0][0].suite, cid), "claim": first["claim"],
            "source": first.get("source", ""), "stricter": first.get("role") == "stricter", "check": first.get("kind") == "check", "why": first.get("why") or "",
            "inputs": [k for _, k in sorted(used)], "notes": notes.get(cid, []),
            "thresholds": list(dict.fromkeys(str(c["threshold"]) for _, c in per_run if c is not None)),
            "reference": first.get("reference"), "reference_precision": first.get("reference_precision") or 0,
            "reference_source": first.get("reference_source") or first.get("reference_note") or "",
            "cells": [_cell(run, c, inputs[run.path]) for run, c in per_run]}


def _experiment(suite: str, name: str, runs: list[Run], labels: dict[Path, str],
                notes: dict[str, list[tuple[str, str]]], inputs: dict[Path, Inputs]) -> dict[str, Any]:
    ids: list[str] = []
    for r in runs:
        ids += [c.get("id") or c["claim"] for c in r.claims if c.get("experiment") == name]
    ids = list(dict.fromkeys(ids))
    claims = [_claim(cid, [(r, next((c for c in r.claims if (c.get("id") or c["claim"]) == cid
                                     and c.get("experiment") == name), None)) for r in runs], notes, inputs)
              for cid in ids]
    figures = []
    for fig in dict.fromkeys(f for r in runs for f in r.experiments[name].figures):
        paths = {r.path: r.experiments[name].figures.get(fig) for r in runs}
        # a wide figure (several panels in a row) is read better with the runs one above the other
        wide = max(_aspect(p) for p in paths.values() if p is not None) > 2.2
        figures.append({"name": fig, "layout": "stack" if wide else f"n{len(runs)}",
                        "cells": [{"label": labels[r.path], "alt": f"{name} {fig} ({labels[r.path]})",
                                   "src": _png(paths[r.path]) if paths[r.path] is not None else None} for r in runs]})
    seed_tables = []
    for r in runs:
        for tname, frame in r.experiments[name].seed_tables.items():
            s = summarise_seeds(frame)
            seed_tables.append({"title": f"{tname}.csv ({labels[r.path]})", "table": _table(s) if s is not None else None,
                                "missing": f"{len(frame)} rows: see {tname}.csv"})
    reports = [{"label": labels[r.path], "markdown": _without_title(r.experiments[name].report_md)}
               for r in runs if r.experiments[name].report_md]
    tally = ", ".join(f"{labels[r.path]}: {sum(bool(c.get('passed')) for c in r.claims if c.get('experiment') == name)}"
                      f"/{len(ids)}" for r in runs)
    # where each model came from (the store, trained in the run, an earlier run's cache); runs written before
    # results.json said so have none
    models = [{"label": labels[r.path], "rows": [
        (m["name"], f"{m['from']}, {m['device']}, commit {(m.get('commit') or 'unknown')[:10]}, config {m['fingerprint']}")
        for m in ((r.experiments[name].results or {}).get("models") or {}).values()]} for r in runs]
    return {"name": name, "anchor": _slug(suite, name), "description": _description(name, runs), "tally": tally,
            "claims": claims, "figures": figures, "seed_tables": seed_tables, "reports": reports,
            "models": [m for m in models if m["rows"]]}


def _without_title(markdown: str) -> str:
    """report.md without its first line "# NAME: description" (the block's heading says it)."""
    lines = markdown.splitlines()
    return "\n".join(lines[1:] if lines and lines[0].startswith("# ") else lines)


def _environment(r: Run, label: str) -> dict[str, Any]:
    env = dict(r.env)
    rows = [(k, env.pop(k)) for k in _ENV_KEYS + ("backend", "started", "finished", "command") if k in env]
    rows += [("directory", str(r.path)), ("total seconds", r.report.get("seconds", "")),
             ("claims.json written", datetime.fromtimestamp((r.path / "claims.json").stat().st_mtime,
                                                            timezone.utc).isoformat(timespec="seconds"))]
    prof = r.report.get("profile") or {}
    return {"label": label, "source": r.env_source, "rows": [(k, v) for k, v in rows if v not in (None, "")],
            "by_section": list((prof.get("by_section") or {}).items()),
            "by_experiment": [(n, (e.results or {}).get("seconds", "")) for n, e in r.experiments.items()],
            "trained": [(t.get("model"), t.get("seconds")) for t in (prof.get("trained") or [])[:8]]}


def build_page(runs: list[Run], notes: dict[str, list[tuple[str, str]]] | None = None) -> str:
    """The HTML page of `runs` (one section per suite, the runs of a suite side by side, in MODES order)."""
    from icgd.core.version import __version__

    notes = reproduction_notes() if notes is None else notes
    runs = sorted(runs, key=lambda r: (r.suite, MODES.index(r.mode) if r.mode in MODES else len(MODES), str(r.path)))
    labels = {r.path: _run_label(r, runs) for r in runs}
    inputs = {r.path: claim_inputs(r) for r in runs}
    summary = [{"suite": r.suite, "anchor": _slug("suite", r.suite), "label": labels[r.path],
                "passed": count(r.claims, Verdict.PASS), "failed": count(r.claims, Verdict.FAIL),
                "inconclusive": count(r.claims, Verdict.INCONCLUSIVE), "untested": count(r.claims, Verdict.UNTESTED),
                "seconds": r.report.get("seconds", ""),
                "path": str(r.path)} for r in runs]
    suites = []
    for s in dict.fromkeys(r.suite for r in runs):
        sruns = [r for r in runs if r.suite == s]
        names = list(dict.fromkeys(n for r in sruns for n in r.experiments))
        suites.append({
            "name": s, "anchor": _slug("suite", s), "source": _source_line(sruns[0]),
            "tally": " · ".join(f"{labels[r.path]}: {count(r.claims, Verdict.PASS)} PASS / "
                                f"{count(r.claims, Verdict.FAIL)} FAIL"
                                + "".join(f" / {n} {v}" for v in (Verdict.INCONCLUSIVE, Verdict.UNTESTED)
                                          if (n := count(r.claims, v)))
                                + (f" ({checks_tally(r.claims)})" if checks_tally(r.claims) else "")
                                for r in sruns),
            "run_labels": [labels[r.path] for r in sruns],
            "experiments": [_experiment(s, n, sruns, labels, notes, inputs) for n in names],
            "environments": [_environment(r, labels[r.path]) for r in sruns]})
    title = "icgd report: " + ", ".join(f"{s['name']} ({', '.join(s['run_labels'])})" for s in suites)
    env = _templates()
    return env.get_template("page.html.j2").render(
        title=title, version=__version__, runs=summary, suites=suites, notes_found=bool(notes),
        notes_file=", ".join(notes_files()), generated=datetime.now(timezone.utc).isoformat(timespec="seconds"))


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
