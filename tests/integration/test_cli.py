import json
import subprocess
import sys

import pytest

from icgd.cli import main

SMALL = ["--tasks", "2000", "--tune-tasks", "2000", "--steps", "1,2"]


def test_baselines_json_schema(capsys):
    assert main(["baselines", "--input-range", "0.5", "--dy", "2", "--json", *SMALL]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["task"] == {"kind": "linear", "dx": 10, "dy": 2, "n_context": 10, "n_queries": 1,
                           "input_law": "uniform", "input_range": 0.5, "input_scale": 1.0,
                           "teacher_scale": 1.0, "noise_std": 0.0}
    learners = {(r["learner"], r["steps"]) for r in out["results"]}
    assert learners == {("zero", 0), ("gd", 1), ("gd", 2), ("gd_per_step", 1), ("gd_per_step", 2),
                        ("gdpp", 1), ("gdpp", 2), ("least_squares", 0)}
    for r in out["results"]:
        assert len(r["eta"]) == r["steps"]
        assert r["ci95"][0] <= r["loss"] <= r["ci95"][1]
    gd1 = next(r for r in out["results"] if r["learner"] == "gd" and r["steps"] == 1)
    zero = next(r for r in out["results"] if r["learner"] == "zero")
    assert gd1["loss"] < zero["loss"]


def test_baselines_table(capsys):
    assert main(["baselines", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "least_squares" in out and "analytic one-step eta" in out and "U(-1, 1)" in out


@pytest.mark.parametrize("argv,needle", [
    (["baselines", "--dx", "0"], "dx=0"),
    (["baselines", "--input-law", "cauchy"], "--input-law"),
    (["baselines", "--steps", "0"], "--steps"),
    (["baselines", "--tasks", "1"], "--tasks"),
    (["baselines", "--input-range", "-1"], "input_range"),
    (["baselines", "--frobnicate"], "unrecognized"),
    (["nonsense"], "invalid choice"),
])
def test_bad_options_give_one_line_and_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err


def test_console_script_help_and_version():
    for args in (["--help"], ["baselines", "--help"], ["--version"]):
        r = subprocess.run([sys.executable, "-m", "icgd.cli", *args], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout
    r = subprocess.run(["icgd", "baselines", "--dy", "x"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_missing_feature_package_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    """The few-shot study without its optional package: one line naming the pip command, exit 2."""
    import icgd.data.features as fd
    from icgd.tasks import fewshot

    fewshot._features.cache_clear()
    fewshot._split.cache_clear()
    monkeypatch.setitem(fd._REQUIREMENTS, "glyphs-efficientnet", [("icgd_no_such_module", "python3 -m pip install x")])
    argv = ["train", "lsa-1", "task.kind=fewshot", "task.features=glyphs-efficientnet", "eval.reference=zero",
            "model.kind=kernel_gd", "steps=2", "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    err = capsys.readouterr().err  # the backend line, then the error on one line, no traceback
    assert "Traceback" not in err and err.splitlines()[-1].startswith("error: feature set 'glyphs-efficientnet'")
    assert "python3 -m pip install x" in err.splitlines()[-1]
