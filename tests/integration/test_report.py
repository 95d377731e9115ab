"""`icgd report`: the HTML page of verify directories (claims, spreads, figures, quick beside full,
environment), its errors, and the page rendered by headless Chromium (no console message, not blank)."""

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from icgd.claims.base import Claim, suite
from icgd.cli import main
from icgd.report import (
    ReportError,
    load_run,
    reproduction_notes,
    seed_spread,
    write_report,
)

EXP = "test-report-exp"


@suite("test-report")
def _report_suite():
    return [Claim("gap", "the gap is small", "Fig. 2", EXP, lambda r: r[EXP]["gap_max"], "<", 0.01,
                  "the curves overlap; worst seed"),
            Claim("ratio", "the ratio exceeds two", "sec. 3", EXP, lambda r: r[EXP]["ratio"], ">", 2.0,
                  "'drastic'", role="stricter")]


def _figure(path: Path, slope: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [0, slope, 2 * slope], color="tab:blue")
    ax.set_title(f"slope {slope}")
    fig.savefig(path, dpi=60)
    plt.close(fig)


def _verify_dir(root: Path, mode: str, gap: float, env: bool = True) -> Path:
    """A directory as `icgd verify test-report` would write it (claims.json, the experiment's results.json,
    a figure, report.md and a per-seed table)."""
    out = root / f"verify-test-report-{mode}"
    exp = out / EXP
    exp.mkdir(parents=True)
    results = {"gap_max": gap, "gap_median": gap / 2, "ratio": 1.5, "seconds": 1.2,
               "models": {"lsa": {"name": "lsa", "fingerprint": "0123abcd45", "from": "store" if mode == "full" else
                                  "trained", "commit": "fedcba9876543210", "device": "cuda+cpu"}}}
    (exp / "results.json").write_text(json.dumps(results))
    claims = [c.check({EXP: results}) for c in _report_suite()]
    report = {"suite": "test-report", "quick": mode != "full", "mode": mode, "seconds": 3.4, "claims": claims,
              "profile": {"by_section": {"train steps": 2.0, "evaluate": 1.0}, "trained": [{"model": "m", "seconds": 2.0}]}}
    if env:
        report["env"] = {"icgd": "0.1.0", "torch": "9.9.9-test", "python": "3.11", "device": "cpu", "threads": 2,
                         "started": "2025-01-01T00:00:00+00:00", "finished": "2025-01-01T00:00:03+00:00"}
    (out / "claims.json").write_text(json.dumps(report))
    _figure(exp / "curves.png", 1.0 if mode == "quick" else 2.0)
    (exp / "report.md").write_text(f"# {EXP}: a test experiment\n\n| the paper | measured here |\n|---|---|\n"
                                   f"| curves overlap | gap **{gap}** |\n")
    (exp / "per_seed.csv").write_text("model,seed,loss\na,0,0.5\na,1,0.7\na,2,0.6\nb,0,1.0\nb,1,1.0\nb,2,1.0\n")
    return out


@pytest.fixture
def runs(tmp_path):
    return _verify_dir(tmp_path, "quick", 0.005), _verify_dir(tmp_path, "full", 0.02)


def test_the_page_holds_every_claim_with_figures_spread_and_environment(runs, tmp_path):
    quick, full = runs
    out = write_report([full, quick], tmp_path / "r" / "report.html")
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert "default-src 'none'; img-src data:" in page  # nothing can be loaded: a browser says so if tried
    for ref in ('src="http', "src='http", 'href="http', "url(", "@import"):
        assert ref not in page
    # every claim: statement, source, threshold, why, measured value, PASS/FAIL; the stricter one marked
    for text in ("the gap is small", "(Fig. 2)", "&lt; 0.01", "the curves overlap; worst seed", "the ratio exceeds two",
                 "badge stricter\">stricter<", "0.005", "0.02", "gap_max"):
        assert text in page, text
    assert "&#39;drastic&#39;" in page and "'drastic'" not in page  # the why, escaped (quotes too)
    assert page.count('class="badge pass">PASS') == 1 and page.count('class="badge fail">FAIL') == 3
    # the seed spread: the sibling aggregate of the key the measure reads, and the per-seed table summarised
    assert "seeds: median 0.0025" in page and "seeds: median 0.01" in page
    assert "0.5 to 0.7 (0.6)" in page
    # quick beside full, in that order, each with its own figure, embedded
    assert page.index('<th class="run">quick</th>') < page.index('<th class="run">full</th>')
    for run in (quick, full):
        png = base64.b64encode((run / EXP / "curves.png").read_bytes()).decode()
        assert f"data:image/png;base64,{png}" in page
    assert "gap <strong>0.02</strong>" in page  # the experiment's report.md, rendered
    # where each run's model came from
    assert "store, cuda+cpu, commit fedcba9876, config 0123abcd45" in page and "trained, cuda+cpu" in page
    assert "9.9.9-test" in page and "train steps" in page and "2025-01-01T00:00:03+00:00" in page
    assert not list(out.parent.glob(".*.tmp"))


def test_an_old_run_takes_its_environment_from_the_model_cache(tmp_path):
    run = _verify_dir(tmp_path, "full", 0.005, env=False)
    assert load_run(run).env == {}
    (run / "_train" / "m-123").mkdir(parents=True)
    (run / "_train" / "m-123" / "env.json").write_text(json.dumps({"torch": "1.2.3-cache", "device": "cpu"}))
    r = load_run(run)
    assert r.env == {"torch": "1.2.3-cache", "device": "cpu"} and "model cache" in r.env_source


def test_seed_spread_finds_sibling_aggregates_and_per_seed_lists():
    results = {"a.gap_max": 0.3, "a.gap_median": 0.2, "a.gap_mean": 0.25, "x_worst_seed": 4.0, "x_median": 3.0,
               "loss_min": 1.0, "loss_per_seed": [1.0, 2.0], "flag_max": True}
    assert seed_spread(results, "a.gap_max") == [("median", 0.2), ("mean", 0.25)]
    assert seed_spread(results, "x_worst_seed") == [("median", 3.0)]
    assert seed_spread(results, "loss_min") == [("per seed", [1.0, 2.0])]
    assert seed_spread(results, "flag_max") == [] and seed_spread(results, "maximum") == []


def test_reproduction_notes_are_read_per_claim(tmp_path):
    md = tmp_path / "notes.md"
    md.write_text("# notes\n\n| claim | x |\n|---|---|\n| ignored | not under a suite heading |\n\n"
                  "### Suite `s`\n\n| claim | code | ours |\n|---|---|---|\n| `a`, b | uses \\| pipes | same |\n"
                  "| c | one | two |\n\n## 3. other\n\n| c | later |\n|---|---|\n| c | not read |\n")
    notes = reproduction_notes(md)
    assert notes == {"a": [("code", "uses | pipes"), ("ours", "same")], "b": [("code", "uses | pipes"), ("ours", "same")],
                     "c": [("code", "one"), ("ours", "two")]}
    real = reproduction_notes()  # every source's notes, as shipped: suite oswald's rows and suite blog's
    assert "1layer-loss" in real and "ood" in real and "eta-matches-line-search" in real


def _bad(tmp_path: Path, kind: str) -> Path:
    d = tmp_path / f"bad-{kind}"
    if kind == "missing":
        return d
    d.mkdir()
    if kind == "corrupt":
        (d / "claims.json").write_text('{"suite": "x", "claims": [')
    elif kind == "not-a-report":
        (d / "claims.json").write_text('{"claims": 3}')
    elif kind == "claim-fields":
        (d / "claims.json").write_text('{"suite": "x", "claims": [{"claim": "c"}]}')
    return d


@pytest.mark.parametrize("kind,needle", [("missing", "not a directory"), ("empty", "no claims.json"),
                                         ("corrupt", "not valid JSON (line 1"), ("not-a-report", "not an `icgd verify` report"),
                                         ("claim-fields", "claim 1 has no measured, threshold, passed")])
def test_bad_input_is_one_line_exit_2_and_nothing_written(runs, tmp_path, capsys, kind, needle):
    out = tmp_path / "report.html"
    out.write_text("the page from before")
    assert main(["report", str(runs[0]), str(_bad(tmp_path, kind)), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and err.startswith("error: "), err
    assert out.read_text() == "the page from before" and sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["report.html"]
    with pytest.raises(ReportError):
        load_run(_bad(tmp_path / "again", kind) if kind == "missing" else tmp_path / f"bad-{kind}")


def test_cli_default_runs_and_summary_line(runs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["report"]) == 2
    assert "runs/verify-*" in capsys.readouterr().err
    (tmp_path / "runs").mkdir()
    for r in runs:
        shutil.copytree(r, tmp_path / "runs" / r.name)
    assert main(["report"]) == 0
    assert capsys.readouterr().out.startswith("wrote report.html (2 run directories, ")
    assert "verify-test-report-full" in (tmp_path / "report.html").read_text()
    assert main(["report", str(runs[0]), str(runs[0])]) == 2
    assert "given twice" in capsys.readouterr().err


# ------------------------------------------------------------------------------- in a real browser
def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _render(page: Path, png: Path, profile: Path) -> list[str]:
    """Render `page` in headless Chromium into `png` (1400 x 2000); returns the console messages it logged.

    Chromium is driven directly (Debian's package, no driver library, nothing downloaded): with
    --enable-logging=stderr it logs every console message, a script error or a blocked load included, as a
    line with ":CONSOLE"."""
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--disable-extensions", "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
           "--window-size=1400,2000", f"--screenshot={png}", page.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env=os.environ | {"HOME": str(profile)})
    assert png.is_file(), proc.stderr[-2000:]
    return [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]


@pytest.mark.skipif(_chromium() is None, reason="no chromium on PATH (Debian: apt-get install chromium; .ci/run "
                                                  "installs it where it runs as root with apt)")
def test_headless_chromium_renders_the_page_without_console_messages(runs, tmp_path):
    import numpy as np
    from matplotlib.image import imread

    page = write_report(runs, tmp_path / "report.html")
    console = _render(page, tmp_path / "shot.png", tmp_path / "profile")
    assert console == [], console
    img = imread(tmp_path / "shot.png")[..., :3]
    assert img.shape[:2] == (2000, 1400)
    colours, counts = np.unique((img * 255).round().astype(np.uint8).reshape(-1, 3), axis=0, return_counts=True)
    assert counts.max() < 0.97 * img.shape[0] * img.shape[1]  # not one colour: something is drawn
    drawn = {tuple(int(x) for x in c): int(n) for c, n in zip(colours, counts)}
    assert drawn.get((0xda, 0xfb, 0xe1), 0) > 500 and drawn.get((0xff, 0xeb, 0xe9), 0) > 500  # PASS and FAIL cells
    # the check can fail: a page that loads something from outside is reported on the console
    leaky = tmp_path / "leaky.html"
    leaky.write_text(page.read_text().replace("</main>", '<img src="https://example.org/x.png"></main>'))
    assert any("Content Security Policy" in ln for ln in _render(leaky, tmp_path / "leaky.png", tmp_path / "profile2"))


def test_per_seed_tables_are_summarised_over_seeds_per_group():
    import pandas as pd

    from icgd.report import summarise_seeds

    grid = pd.DataFrame({"seed": [0, 0, 1, 1], "alpha": [0.0, 1.0, 0.0, 1.0], "loss": [1.0, 2.0, 1.0, 4.0],
                         "gd": [0.5] * 4})
    s = summarise_seeds(grid)  # alpha is the grid the rows are laid out on: a group, not a value
    assert s.to_dict("records") == [{"alpha": 0.0, "seeds": 2, "loss": "1", "gd": "0.5"},
                                    {"alpha": 1.0, "seeds": 2, "loss": "2 to 4 (3)", "gd": "0.5"}]
    keyed = pd.DataFrame({"range": [1.0, 0.5, 1.0, 0.5], "seed": [0, 0, 1, 1], "gd": [0.8, 0.2, 0.8, 0.2],
                          "loss": [1.0, 2.0, 3.0, 4.0]})
    s = summarise_seeds(keyed)  # gd is determined by the range: a value (the seeds agree on it)
    assert list(s.columns) == ["range", "seeds", "gd", "loss"] and s["gd"].tolist() == ["0.8", "0.2"]
    assert summarise_seeds(pd.DataFrame({"seed": [0, 1], "name": ["a", "b"]})) is None
    many = pd.DataFrame({"step": list(range(50)) * 2, "seed": [0] * 50 + [1] * 50, "loss": [1.0] * 100})
    assert summarise_seeds(many) is None


def test_inconclusive_claims_are_counted_and_marked_apart(tmp_path):
    out = _verify_dir(tmp_path, "quick", 0.005)
    report = json.loads((out / "claims.json").read_text())
    report["claims"][0] |= {"verdict": "inconclusive", "passed": False, "seeds": [0.004, 0.02, 0.006]}
    (out / "claims.json").write_text(json.dumps(report))
    page = write_report([out], tmp_path / "r.html").read_text()
    assert 'class="badge inconclusive">inconclusive' in page
    assert "0 PASS / 1 FAIL / 1 inconclusive" in page  # the suite's tally keeps it apart from FAIL
    # the authors' column: no number for these test claims
    assert "<th title=\"the authors' own value of the measure" in page
