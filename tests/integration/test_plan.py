"""`icgd reproduce EXP --plan [--json]`: every model an experiment trains, with the config `icgd train`
accepts, without training or writing anything; bad input gets one line and exit 2."""

from __future__ import annotations

import json

import pytest

from icgd.cli import main
from icgd.experiments.registry import ExperimentContext
from icgd.experiments.runner import experiments, get_experiment, plan_experiment
from icgd.train.config import build_config, config_fingerprint, dump_config, load_config


@pytest.mark.parametrize("name", ["oswald-deep", "oswald-sine", "oswald-copy", "categorical-templates",
                                  "categorical-heads", "categorical-context", "categorical-gd-vs-tf",
                                  "categorical-fewshot", "categorical-depth", "dai-momentum"])
def test_the_plan_is_what_the_experiment_trains(name, tmp_path):
    plan = plan_experiment(name, "quick")
    exp = get_experiment(name)
    ctx = ExperimentContext(tmp_path / "out", tmp_path / "cache", "quick", exp.seeds("quick"))
    declared = exp.models(ctx)
    assert [m["name"] for m in plan["models"]] == list(declared)
    for m in plan["models"]:
        config = build_config(m["config"])  # what `icgd train` accepts
        assert config_fingerprint(config) == config_fingerprint(declared[m["name"]])
        (tmp_path / "c.yaml").write_text(dump_config(config))
        assert load_config(tmp_path / "c.yaml") == config
    assert plan["mode"] == "quick" and plan["experiment"] == name


def test_every_experiment_has_a_plan(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in experiments():
        plan = plan_experiment(name, "full")
        assert plan["models"] is None or plan["models"], name
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_cli_plan_json(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "oswald-copy", "--quick", "--plan", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert set(plan) >= {"experiment", "mode", "models"}
    assert [m["name"] for m in plan["models"]] == ["copy-code-softmax", "copy-code-linear"]
    assert plan["models"][0]["config"]["task"]["kind"] == "linear"
    # the authors' softmax: logits over a fixed sqrt(key_size = 20) (src/attn.py:176-178), not a learnt temperature
    first, second = plan["models"][0]["config"]["model"]["layers"]
    assert first == {"kernel": "softmax", "kernel_init": [pytest.approx(20 ** 0.5)], "learn_kernel_params": False}
    assert second == {"kernel": "linear"}
    assert main(["reproduce", "oswald-copy", "--plan"]) == 0
    table = capsys.readouterr().out
    assert "copy-code-softmax" in table and "optim.beta2 = " in table
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["reproduce", "no-such-experiment", "--plan"], "unknown experiment"),
    (["reproduce", "oswald-deep", "--plan", "--smoke"], "--smoke"),
    (["reproduce", "oswald-deep", "--json"], "--json goes with --plan"),
])
def test_bad_plans_get_one_line_and_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_copy_declares_its_models_but_is_not_trained_ahead(tmp_path):
    from icgd.experiments.parallel import planned

    exp = get_experiment("oswald-copy")
    assert exp.models is not None and not exp.pretrain  # it measures its models while they train
    assert planned(["oswald-copy"], tmp_path, tmp_path / "cache", "quick", None) == []
    assert len(planned(["oswald-deep"], tmp_path, tmp_path / "cache", "quick", None)) == 2


def test_models_shared_between_experiments_have_one_config():
    """A label that two experiments train (the 1-layer LSA, the depth stacks) is one cached model: the same
    config in both, in every mode."""
    for mode in ("quick", "full"):
        seen: dict[str, tuple[str, str]] = {}
        for name in experiments():
            plan = plan_experiment(name, mode)
            for m in plan["models"] or []:
                fp = config_fingerprint(build_config(m["config"]))
                if m["name"] in seen:
                    assert seen[m["name"]][0] == fp, (mode, m["name"], seen[m["name"]][1], name)
                seen.setdefault(m["name"], (fp, name))


def test_a_reader_that_stops_early_is_no_error(tmp_path):
    """`icgd reproduce EXP --plan --json | head -1`: the closed pipe ends the command quietly, exit 0."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "icgd.cli", "reproduce", "oswald-deep", "--plan", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()  # the reader goes away with most of the plan unread
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and err == ""


def test_softmax_models_divide_by_the_codes_fixed_sqrt_key_size(capsys, tmp_path, monkeypatch):
    """A.9's softmax models as the authors' code trains them: logits over a fixed sqrt(11) (key_size 11 in
    constructed_token_setup.ipynb; src/attn.py:176-178), not a learnt temperature; the LayerNorm models unchanged."""
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "oswald-softmax", "--quick", "--plan", "--json"]) == 0
    models = {m["name"]: m["config"]["model"]["attention"] for m in json.loads(capsys.readouterr().out)["models"]}
    for name in ("softmax1", "softmax2", "softmax1-lr3e-4", "softmax1-lr3e-3"):
        assert models[name]["kernel"] == "softmax"
        assert models[name]["kernel_init"] == [pytest.approx(11 ** 0.5)] and not models[name]["learn_kernel_params"]
    assert models["layernorm"]["kernel"] == "linear" and models["layernorm"]["kernel_init"] is None
