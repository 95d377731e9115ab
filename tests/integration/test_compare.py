"""`icgd compare`: a suite's claims across recorded runs. The committed pages are what the command makes of the
reports they name, so no number on them is typed; a changed number makes a page stale; bad input is one line
and exit 2, nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from icgd.cli import main
from icgd.report import compare

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted((DOCS / "compare").glob("*.md"))


def test_the_docs_hold_a_comparison_page():
    assert PAGES, "docs/compare holds no page"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_committed_pages_are_what_the_command_makes_of_the_reports_they_name(page):
    suite, boards = compare.inputs(page)
    assert len(boards) >= 2 and all((b / f"{suite}.json").is_file() for b in boards)
    assert not compare.stale(page)


@pytest.fixture()
def two_runs(tmp_path):
    """Two copies of the scoreboard's template report, as two recorded runs, and a page comparing them."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(DOCS / "scoreboard" / "template.json", tmp_path / name / "template.json")
    page = tmp_path / "pages" / "template.md"
    assert main(["compare", "template", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(page)]) == 0
    return tmp_path, page


def test_each_claim_is_a_row_and_each_run_a_column(two_runs):
    tmp_path, page = two_runs
    report = json.loads((tmp_path / "a" / "template.json").read_text())
    text = page.read_text()
    for row in report["claims"]:
        line = next(x for x in text.splitlines() if x.startswith(f"| `{row['id']}`"))
        cell = f"{compare._num(row['measured'])} [{compare._num(row['interval'][0])}, " \
               f"{compare._num(row['interval'][1])}] {row['verdict']}" if row.get("interval") else row["verdict"]
        # its verdict counted twice over the runs, then the same report in both columns
        _, _, cells = line.partition(f"| 2 {row['verdict']} |")
        assert cells and cells.count(cell) == 2, (line, cell)
    assert "[../a](../a/template.md)" in text and "[../b](../b/template.md)" in text
    sourced = [r for r in report["claims"] if r.get("reference") is not None and r.get("reference_source")]
    assert sourced  # the template suite's report carries an authors' number with its source
    origins = text.split("## Where the authors' numbers come from", 1)[1]
    for r in sourced:
        assert f"- `{r['id']}`: {compare._cell(r['reference_source'])}" in origins  # once, not once per run
        assert origins.count(f"- `{r['id']}`:") == 1


def test_a_changed_number_makes_the_page_stale_and_update_remakes_it(two_runs, capsys):
    tmp_path, page = two_runs
    path = tmp_path / "b" / "template.json"
    report = json.loads(path.read_text())
    row = next(c for c in report["claims"] if isinstance(c["measured"], float))
    row["measured"] = row["measured"] * 1.5 + 1.0
    path.write_text(json.dumps(report))
    assert compare.stale(page)
    assert main(["compare", "--check", str(page)]) == 1
    assert main(["compare", "--update", str(page)]) == 0
    assert not compare.stale(page) and compare._num(row["measured"]) in page.read_text()


def test_a_page_edited_by_hand_is_stale(two_runs):
    _, page = two_runs
    page.write_text(page.read_text().replace("PASS", "FAIL", 1))
    assert compare.stale(page)


def test_a_columns_label_names_what_ran_not_where_output_went():
    report = {"model": "qwen2.5-coder-0.5b", "mode": "full", "env": {
        "command": "/usr/bin/icgd verify dai --model qwen2.5-coder-0.5b --data subj --controls untrained-io "
                   "--json --quiet --out /w/o --cache /w/c"}}
    assert compare._label(report) == "qwen2.5-coder-0.5b, data subj, controls untrained-io"
    assert compare._label({"mode": "quick", "env": {"command": "icgd verify oswald --quick --json"}}) == "quick"


@pytest.mark.parametrize("bad", ["no-report", "not-a-page", "no-out", "wrong-suite"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, bad):
    page = tmp_path / "out.md"
    (tmp_path / "a").mkdir()
    shutil.copy(DOCS / "scoreboard" / "template.json", tmp_path / "a" / "template.json")
    args = {"no-report": ["compare", "template", str(tmp_path / "nowhere"), "--out", str(page)],
            "not-a-page": ["compare", "--check", str(DOCS / "index.md")],
            "no-out": ["compare", "template", str(tmp_path / "a")],
            "wrong-suite": ["compare", "oswald", str(tmp_path / "a"), "--out", str(page)]}[bad]
    assert main(args) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not page.exists()
