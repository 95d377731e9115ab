"""`icgd compare`: one suite's claims across several recorded runs, side by side, generated.

A scoreboard folder (`icgd scoreboard`) holds one run per suite; a study often has several (source 003 on
each model and data set, each build of a control). `render` puts one suite's claims from several such
folders into one Markdown table: a row per claim, a column per run, each cell the run's measured value,
interval and verdict as its report has them, with the bar and the authors' number beside. The page records
its inputs (the suite and the folders, relative to the page) in its second line, so `stale` can remake it
from them and a test can check that a committed page is what the command makes: no number on it is typed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from icgd.core.io import write_text
from icgd.core.verdict import VERDICTS, verdict_of_row
from icgd.report.runs import ReportError, _num
from icgd.report.scoreboard import _cell, _command, _row, _suite_view, _template

#: the page's second line: the inputs it was made from, as JSON
_INPUTS = re.compile(r"^<!-- icgd compare inputs: (\{.*\}) -->$")
#: options of `icgd verify` that say where and how output goes, not what runs: left out of a column's label
_OUTPUT_OPTIONS = {"--json": 0, "--quiet": 0, "--store-only": 0, "--strict": 0, "--retrain": 0,
                   "--out": 1, "--cache": 1, "--workers": 1, "--threads": 1, "--model": 1}


def render(suite: str, boards: list[str | Path], page: str | Path) -> str:
    """The comparison page of `suite` across the scoreboard folders `boards` (in that order), to be written
    at `page` (its links are relative to it). Raises ReportError for a folder without the suite's report."""
    page = Path(page)
    if not boards:
        raise ReportError("give at least one scoreboard folder to compare")
    runs = []
    for board in boards:
        path = Path(board) / f"{suite}.json"
        try:
            report = json.loads(path.read_text())
        except FileNotFoundError:
            raise ReportError(f"{path}: no report of suite {suite!r} in that folder "
                              "(a scoreboard folder written by `icgd scoreboard`)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ReportError(f"{path}: not a readable report ({type(e).__name__})") from None
        if not isinstance(report, dict) or report.get("suite") != suite or not isinstance(report.get("claims"), list):
            raise ReportError(f"{path}: not the `icgd verify` report of suite {suite!r}")
        runs.append((_relative(Path(board), page.parent), report))
    ids: list[str] = []
    for _, report in runs:
        ids += [r["id"] for r in report["claims"] if r.get("id") not in ids]
    all_rows = [_claim_row(i, runs) for i in ids]
    rows = {kind: [r for r in all_rows if r["kind"] == kind] for kind in ("claim", "check")}
    inputs = json.dumps({"suite": suite, "boards": [folder for folder, _ in runs]})
    from icgd.experiments.catalog import load_sources

    source = next((s for s in load_sources().values() if suite in s.suites), None)
    return _template("compare.md.j2").render(
        suite=suite, inputs=inputs, runs=[_run_view(folder, report) for folder, report in runs],
        claims=rows["claim"], checks=rows["check"],
        # the page sits one folder below docs/, as the scoreboard's do
        source=None if source is None else {"title": source.title, "number": source.number,
                                            "page": f"../{source.docs}" if source.docs else None})


def write(suite: str, boards: list[str | Path], page: str | Path) -> bool:
    """Write the comparison page; returns whether it changed."""
    text = render(suite, boards, page)
    page = Path(page)
    if page.is_file() and page.read_text() == text:
        return False
    page.parent.mkdir(parents=True, exist_ok=True)
    write_text(page, text)
    return True


def inputs(page: str | Path) -> tuple[str, list[Path]]:
    """(suite, scoreboard folders) a comparison page was made from, read from its second line; the folders
    as paths from the working directory. Raises ReportError for a page `icgd compare` did not make."""
    page = Path(page)
    try:
        lines = page.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(f"{page}: not a readable page ({type(e).__name__})") from None
    match = _INPUTS.match(lines[1]) if len(lines) > 1 else None
    try:
        recorded = json.loads(match.group(1)) if match else None
        suite, boards = recorded["suite"], recorded["boards"]
    except (TypeError, KeyError, json.JSONDecodeError):
        raise ReportError(f"{page}: not a page made by `icgd compare` (no inputs line)") from None
    return suite, [page.parent / b for b in boards]


def stale(page: str | Path) -> bool:
    """Whether the page differs from what `render` makes of the inputs it records."""
    suite, boards = inputs(page)
    return Path(page).read_text() != render(suite, boards, page)


def update(page: str | Path) -> bool:
    """Remake the page from the inputs it records; returns whether it changed."""
    suite, boards = inputs(page)
    return write(suite, boards, page)


# ------------------------------------------------------------------------------------------ rendering
def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def _claim_row(claim_id: str, runs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A claim's kind, bar, its authors' number(s) and one cell per run ("-" where the run's report lacks it)."""
    found = [next((r for r in report["claims"] if r.get("id") == claim_id), None) for _, report in runs]
    first = next(r for r in found if r is not None)
    references, sources = [], []
    for r in found:
        if r is not None and r.get("reference") is not None and _num(r["reference"]) not in references:
            references.append(_num(r["reference"]))
            if r.get("reference_source"):
                sources.append(_cell(r["reference_source"]))
    return {"id": claim_id, "kind": "check" if first.get("kind") == "check" else "claim",
            "where": _cell(first.get("source", "")), "bar": _cell(first.get("threshold", "")),
            "reference": " / ".join(references) or "-", "reference_sources": sources,
            "cells": [_result(r) for r in found],
            # how the runs read the claim, at a glance: each verdict's count over the runs that have it
            "tally": ", ".join(f"{n} {v.value}" for v in VERDICTS
                               if (n := sum(verdict_of_row(r) is v for r in found if r is not None)))}


def _result(r: dict[str, Any] | None) -> str:
    """A cell: the measured value, interval and verdict as the scoreboard's pages write them (`_row`)."""
    if r is None:
        return "-"
    row = _row(r, set())
    if row["measured"] == "-":
        return row["verdict"]
    return row["measured"] + ("" if row["interval"] == "-" else f" {row['interval']}") + f" {row['verdict']}"


def _run_view(folder: str, report: dict[str, Any]) -> dict[str, str]:
    """A run's line: what the scoreboard's page of it says in its header (`_suite_view`)."""
    view = _suite_view(report)
    return {"folder": folder, "label": _label(report), "command": _cell(view["command"]), "mode": view["mode"],
            "commit": view["commit"][:10], "date": view["date"], "tally": view["tally"],
            # a study resumed from its stage cache: the call's time, and what the whole study took
            "seconds": view["seconds"] + (f" (the study {view['study_seconds']} over several calls)"
                                          if view["study_seconds"] else "")}


def _label(report: dict[str, Any]) -> str:
    """A column's name: the model (where the suite runs one) and the options of the run's command that say
    what ran, without those that say where output goes ("qwen2.5-coder-0.5b, data subj")."""
    words = _command((report.get("env") or {}).get("command")).split()
    parts = [str(report["model"])] if report.get("model") else []
    i = 3 if words[:2] == ["icgd", "verify"] else len(words)  # after `icgd verify SUITE`
    while i < len(words):
        word = words[i]
        option, _, inline = word.partition("=")
        if option in _OUTPUT_OPTIONS:
            i += 1 + (_OUTPUT_OPTIONS[option] if not inline else 0)
            continue
        if option.startswith("--") and not inline and i + 1 < len(words) and not words[i + 1].startswith("--"):
            parts.append(f"{option[2:]} {words[i + 1]}")
            i += 2
        else:
            parts.append(option[2:] + (f" {inline}" if inline else "") if option.startswith("--") else word)
            i += 1
    if report.get("mode") == "quick" or report.get("quick"):
        parts = [p for p in parts if p != "quick"] + ["quick"]
    return _cell(", ".join(parts) or "defaults")


__all__ = ["inputs", "render", "stale", "update", "write"]
