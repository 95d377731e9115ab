"""A built wheel works outside the source tree: `icgd report` renders its templates and shows the reproduction
notes from the package data alone (no docs/ folder, no checkout on the path)."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory) -> Path:
    """The wheel built from a clean copy of the project (no stale build/ folder), unpacked."""
    pytest.importorskip("setuptools")
    work = tmp_path_factory.mktemp("wheel")
    src = work / "project"
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(work / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = (work / "dist").glob("icgd-*.whl")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(work / "site")
    return work / "site"


def test_the_wheel_ships_the_report_templates_and_the_notes(unpacked_wheel):
    report = unpacked_wheel / "icgd" / "report"
    for name in ("templates/page.html.j2", "templates/parts.html.j2", "templates/report.css"):
        assert (report / name).is_file(), name
    for source in ("oswald", "blog"):  # each source's set-up notes
        assert (unpacked_wheel / "icgd" / "sources" / source / "notes.md").is_file(), source
    assert (unpacked_wheel / "icgd" / "train" / "compiled_attention.c").is_file()


def test_icgd_report_from_the_wheel_outside_the_source_tree(unpacked_wheel, tmp_path):
    run = tmp_path / "runs" / "verify-oswald-quick"
    (run / "oswald-1layer").mkdir(parents=True)
    (run / "oswald-1layer" / "results.json").write_text(json.dumps({"a1.relative_gap_max": 0.004}))
    claim = {"id": "1layer-loss", "claim": "trained 1-layer LSA loss within 1% of tuned one-step GD",
             "source": "Fig. 2", "experiment": "oswald-1layer", "measured": 0.004, "threshold": "< 0.01",
             "passed": True, "why": "worst seed", "role": "source"}
    (run / "claims.json").write_text(json.dumps({"suite": "oswald", "mode": "quick", "quick": True, "seconds": 1.0,
                                                 "claims": [claim]}))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    code = ("import icgd, sys; from icgd.cli import main; assert icgd.__file__.startswith(sys.argv[1]), icgd.__file__; "
            "sys.exit(main(['report', sys.argv[2], '--out', 'report.html']))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(unpacked_wheel)}
    done = subprocess.run([sys.executable, "-c", code, str(unpacked_wheel), str(run)], cwd=outside, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (outside / "report.html").read_text()
    assert page.startswith("<!doctype html>") and 'class="badge pass">PASS' in page  # the templates rendered
    assert "reproduction notes</summary>" in page and "No reproduction notes" not in page  # the shipped notes
