"""What a run records to be cited, and what it says while it runs (issue 62): results.json's provenance, each
report's own deviations, named progress bars and a status line outside training."""

from __future__ import annotations

import json
import time

from icgd.experiments import get_experiment, run_experiment


def test_results_record_mode_seeds_version_command_commit_and_models(tmp_path):
    from icgd.core.version import __version__, code_commit

    run_experiment("oswald-repeat", tmp_path / "r", tmp_path / "cache", smoke=True)
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    prov = results["provenance"]
    assert prov["experiment"] == "oswald-repeat" and prov["mode"] == "smoke" and prov["seeds"] == [0, 1]
    assert prov["icgd"] == __version__ and prov["commit"] == code_commit() and prov["device"] == "cpu"
    assert prov["command"] and prov["started"] <= prov["finished"]
    assert set(results["models"]["lsa1-a1"]) == {"name", "fingerprint", "from", "commit", "device"}
    assert f"icgd {__version__} at {code_commit()}" in (tmp_path / "r" / "report.md").read_text()


def test_each_report_lists_only_its_own_deviations():
    deep_only = "GD++ against a deep model"
    assert any(d.startswith(deep_only) for d in get_experiment("oswald-deep").deviations)
    assert any(d.startswith(deep_only) for d in get_experiment("oswald-depth").deviations)
    for name in ("oswald-1layer", "oswald-repeat", "oswald-ood", "oswald-phase", "oswald-fixed-data"):
        assert not any(d.startswith(deep_only) for d in get_experiment(name).deviations), name


def test_the_status_line_names_the_section_outside_training():
    from icgd.core.profiling import section, status_line

    lines: list[str] = []
    with status_line("exp", every=0.05, write=lines.append):
        with section("tune reference", "gdpp"):
            time.sleep(0.3)
        with section("train steps", "m"):
            n = len(lines)
            time.sleep(0.3)
            assert len(lines) == n  # silent while a model trains: its bar says it
    assert lines and lines[0].startswith("exp: tune reference gdpp (")


def test_progress_bars_are_named_model_i_of_n(tmp_path):
    from icgd.experiments.registry import ExperimentContext

    exp = get_experiment("oswald-softmax")
    ctx = ExperimentContext(tmp_path, tmp_path / "c", "quick", [0], "cpu", True, {}, create=False)
    ctx.declared = exp.models(ctx)
    names = [c.name for c in ctx.declared.values()]
    assert ctx._bar_name(ctx.declared[next(iter(ctx.declared))]) == f"model 1/{len(names)}: {names[0]}"


def test_the_commit_is_the_one_at_the_start_of_the_run(tmp_path, monkeypatch):
    """A run records the commit its code was loaded from: asked before the experiment runs, not when it
    ends (a study of a pretrained LM trains nothing and used to ask only at its end, after an hour in
    which the checkout may have moved on)."""
    from icgd.core import version
    from icgd.experiments.registry import REGISTRY, ExperimentContext, register

    head = ["a" * 40]

    def fake_run(cmd, **kw):  # git rev-parse HEAD answers what `head` holds; git status: clean
        class Done:
            returncode = 0
            stdout = head[0] if "rev-parse" in cmd else ""
        return Done()

    monkeypatch.setattr(version.subprocess, "run", fake_run)
    version.code_commit.cache_clear()

    @register("test-commit-moves", "the checkout moves on while it runs", "tests", 0.1, 0.1)
    def _moves(ctx: ExperimentContext) -> None:
        head[0] = "b" * 40  # a commit made in the checkout during the run
        ctx.result("x", 1.0)

    try:
        run_experiment("test-commit-moves", tmp_path / "r", tmp_path / "cache", smoke=True)
    finally:
        REGISTRY.pop("test-commit-moves", None)
        version.code_commit.cache_clear()
    assert json.loads((tmp_path / "r" / "results.json").read_text())["provenance"]["commit"] == "a" * 40
