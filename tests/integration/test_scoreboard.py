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
    index = (tmp_path / "b" / "index.md").read_text()
    assert "[template](template.md)" in index
    assert "The suite ran at commit `" in index and "All 1 suites" not in index
    assert main(["scoreboard", "--check", "--dir", str(tmp_path / "b")]) == 0


def test_a_declared_table_is_on_the_page_from_its_csv(tmp_path, capsys, monkeypatch):
    """A table an experiment declares for the docs (`Experiment.doc_tables`) is read from the CSV it wrote into
    the suite's JSON and shown on its page, so a source page links to it instead of typing it; a changed cell
    makes the page stale; a declared column the CSV lacks is one line, exit code 2."""
    import csv
    from dataclasses import replace

    from icgd.cli import main
    from icgd.experiments import runner
    from icgd.experiments.registry import DocTable

    assert main(["verify", "template", "--smoke", "--quiet", "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    exp, real = runner.get_experiment("template-gd-step"), runner.get_experiment

    def declaring(columns):
        table = DocTable("gd_step", "the GD step per seed", columns)
        monkeypatch.setattr(runner, "get_experiment", lambda n: replace(exp, doc_tables=(table,)) if n == exp.name
                            else real(n))

    declaring(("seed", "gd_over_zero"))
    assert main(["scoreboard", str(tmp_path / "run"), "--dir", str(tmp_path / "b")]) == 0
    with open(tmp_path / "run" / "template-gd-step" / "gd_step.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    page = (tmp_path / "b" / "template.md").read_text()
    assert "### template-gd-step: gd_step" in page and "| seed | gd_over_zero |" in page
    for r in rows:
        assert f"| {r['seed']} | {float(r['gd_over_zero']):.4g} |" in page, r
    path = tmp_path / "b" / "template.json"
    report = json.loads(path.read_text())
    report["tables"][0]["rows"][0][1] = "12345.5"
    path.write_text(json.dumps(report))
    assert scoreboard.stale(tmp_path / "b") == ["template.md"]
    declaring(("seed", "no_such_column"))
    assert main(["scoreboard", str(tmp_path / "run"), "--dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no column no_such_column" in err, err
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())


def test_a_run_resumed_from_its_stage_cache_says_what_the_whole_study_cost(tmp_path, capsys):
    """A study that keeps a stage cache (source 003's) records per experiment what the call made and read
    (results key "stages"); the page sums them beside the call's time, says where a read stage's time is
    unknown, and refuses a malformed account with one line and exit 2, writing nothing."""
    from icgd.cli import main

    assert main(["verify", "template", "--smoke", "--quiet", "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    results = tmp_path / "run" / "template-gd-step" / "results.json"
    plain = json.loads(results.read_text())

    def account(**parts):
        results.write_text(json.dumps(plain | {"stages": parts}))

    tally = {"stages_made": 3, "stages_read": 5, "stage_seconds_made": 600.0, "stage_seconds_read": 6600.0}
    account(a=tally, b=tally | {"stages_made": 1, "stage_seconds_made": 60.0, "stages_read": 0,
                                "stage_seconds_read": 0.0})
    assert main(["scoreboard", str(tmp_path / "run"), "--dir", str(tmp_path / "b")]) == 0
    page = (tmp_path / "b" / "template.md").read_text()
    assert ("this call made 4 (11.0 min) and read 5 from the stage cache (`--cache`; made in 110.0 min by "
            "earlier calls); the study's computing time 2.0 h in all.") in page, page
    assert main(["compare", "template", str(tmp_path / "b"), "--out", str(tmp_path / "cmp.md")]) == 0
    run_line = next(x for x in (tmp_path / "cmp.md").read_text().splitlines() if "(b/template.md)" in x)
    assert "(the study 2.0 h over several calls)" in run_line  # the compare page's wall time says it too
    account(a=tally | {"stage_seconds_read": None})  # saved before the stage times were recorded
    assert main(["scoreboard", str(tmp_path / "run"), "--dir", str(tmp_path / "b")]) == 0
    page = (tmp_path / "b" / "template.md").read_text()
    assert "read 5 from the stage cache (`--cache`; their time not recorded" in page and "in all" not in page
    for bad in ({"stages_made": 3}, tally | {"stages_made": "3"}, tally | {"stages_read": True},
                tally | {"stage_seconds_made": None}, tally | {"stage_seconds_read": -1.0}, 7):
        account(a=bad)
        assert main(["scoreboard", str(tmp_path / "run"), "--dir", str(tmp_path / "c")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "malformed stage-cache account" in err, err
        assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())


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


def test_the_index_says_what_would_decide_each_inconclusive_claim():
    """The index's table of inconclusive claims: seeds on both sides of the bar are a split no seed count
    undoes; an interval holding the bar needs about (half-width on the bar's side / distance to the bar)^2
    times the queries, a FAIL where the value is on the failing side; decided rows are not listed."""
    split = {"threshold": "< 0.1", "measured": 0.09, "seeds": [0.05, 0.09, 0.2], "interval": None}
    assert scoreboard.decides(split) == ("seeds: 2 below the bar, 1 above", "no seed count: the seeds split")
    # passes on its value: 0.08 above the bar 0, lower half-width 0.1 -> (0.1 / 0.08)^2 = 1.6
    passing = {"threshold": "> 0", "measured": 0.08, "seeds": None, "interval": [-0.02, 0.134]}
    assert scoreboard.decides(passing)[1] == "about 1.6x the queries or tasks it resamples"
    # fails on its value: 0.6 below the bar 85, upper half-width 11.1 -> (11.1 / 0.6)^2 = 342
    failing = {"threshold": "> 85", "measured": 84.4, "seeds": None, "interval": [75.6, 95.5]}
    assert scoreboard.decides(failing)[1] == "about 3.4e+02x the queries or tasks it resamples, a FAIL if the value stays"
    lower = {"threshold": "< 0.05", "measured": 0.04, "seeds": None, "interval": [0.01, 0.06]}
    assert scoreboard.decides(lower)[1] == "about 4x the queries or tasks it resamples"  # upper side: (0.02 / 0.01)^2
    rows = [dict(r, id=f"c{i}", claim="c", kind="claim", verdict="inconclusive")
            for i, r in enumerate((split, passing, failing))]
    rows.append({"id": "done", "claim": "c", "kind": "claim", "verdict": "PASS", "threshold": "> 0", "measured": 1.0})
    listed = scoreboard.undecided({"s": {"suite": "s", "claims": rows}})
    assert [u["id"] for u in listed] == ["c0", "c1", "c2"]
    assert "What more seeds or queries would decide" in (BOARD / "index.md").read_text()


@pytest.mark.parametrize("cell, shown", [("0.0610483", "0.06105"), ("12", "12"), ("nan", "nan"), ("", ""),
                                         ("[150, 4284, 3655]", "(150, 4284, 3655)"), ("[0.99912, 0.5]", "(0.999, 0.5)"),
                                         ("[]", "-"), ("softmax (GD model)", "softmax (GD model)"), ("a|b", "a\\|b")])
def test_a_measured_table_cell_is_shown_as_the_page_prints_numbers(cell, shown):
    """Numbers in 4 significant digits, a per-seed list in 3 with its integers (steps) as they are, text as it is."""
    assert scoreboard._table_cell(cell) == shown
