"""The scoreboard (`icgd scoreboard`, docs/scoreboard): the committed pages are what the command makes of the
committed reports, so no number on them is typed; the reports come from runs at one clean commit; a changed
number makes a page stale; bad input is one line and exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from icgd.report import scoreboard

BOARD = Path(__file__).resolve().parents[2] / "docs" / "scoreboard"


def test_the_committed_pages_are_what_the_command_makes_of_the_committed_reports():
    assert scoreboard.reports(BOARD), "docs/scoreboard holds no report"
    assert scoreboard.stale(BOARD) == []


def test_the_committed_reports_are_full_mode_runs_at_one_clean_commit():
    reports = scoreboard.reports(BOARD)
    commits = {r["env"]["commit"] for r in reports.values()}
    assert len(commits) == 1, commits
    (commit,) = commits
    assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)  # no "+dirty", no "unknown"
    assert {r["mode"] for r in reports.values()} == {"full"}


@pytest.fixture()
def board(tmp_path):
    copy = tmp_path / "board"
    shutil.copytree(BOARD, copy)
    return copy


def test_a_changed_number_makes_its_page_stale(board, capsys):
    from icgd.cli import main

    path = sorted(board.glob("*.json"))[0]
    report = json.loads(path.read_text())
    row = next(c for c in report["claims"] if isinstance(c["measured"], float) and c["measured"] == c["measured"])
    row["measured"] = row["measured"] * 1.5 + 1.0
    path.write_text(json.dumps(report))
    assert scoreboard.stale(board) == [f"{path.stem}.md"]
    assert main(["scoreboard", "--check", "--dir", str(board)]) == 1
    assert main(["scoreboard", "--dir", str(board)]) == 0
    assert scoreboard.stale(board) == [] and scoreboard._num(row["measured"]) in (board / f"{path.stem}.md").read_text()


def test_a_page_edited_by_hand_is_stale(board):
    page = sorted(board.glob("*.md"))[-1]
    page.write_text(page.read_text().replace("PASS", "FAIL", 1))
    assert scoreboard.stale(board) == [page.name]


def test_a_run_is_recorded_and_its_page_made(tmp_path, capsys):
    from icgd.cli import main

    assert main(["verify", "template", "--smoke", "--quiet", "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["scoreboard", str(tmp_path / "run"), "--dir", str(tmp_path / "b")]) == 0
    report = json.loads((tmp_path / "b" / "template.json").read_text())
    assert "rows" not in report.get("profile", {})
    page = (tmp_path / "b" / "template.md").read_text()
    row = report["claims"][0]
    assert f"| `{row['id']}` |" in page and scoreboard._num(row["measured"]) in page and row["verdict"] in page
    assert "[template](template.md)" in (tmp_path / "b" / "index.md").read_text()
    assert main(["scoreboard", "--check", "--dir", str(tmp_path / "b")]) == 0


@pytest.mark.parametrize("bad", ["missing", "not-a-run", "not-a-report"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, bad):
    from icgd.cli import main

    board = tmp_path / "b"
    board.mkdir()
    if bad == "missing":
        args = [str(tmp_path / "nowhere")]
    elif bad == "not-a-run":
        (tmp_path / "run").mkdir()
        args = [str(tmp_path / "run")]
    else:
        (board / "oswald.json").write_text('{"suite": "blog", "claims": []}')
        args = []
    assert main(["scoreboard", *args, "--dir", str(board)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not list(board.glob("*.md"))


@pytest.mark.parametrize("folder", sorted(p.name for p in BOARD.parent.glob("runs-*") if p.is_dir()))
def test_the_dated_run_pages_are_what_the_command_makes_of_their_reports(folder):
    """docs/runs-DATE/: single runs' pages (a suite outside the one-commit scoreboard run), generated the same way."""
    assert scoreboard.reports(BOARD.parent / folder)
    assert scoreboard.stale(BOARD.parent / folder) == []
