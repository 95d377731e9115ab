"""`--store-only`: full mode with the stored models only. An experiment whose models the store holds runs
from them; one whose models it lacks is not run (nothing is trained), its claims are "untested" with a note
naming the models, and the report lists it under "not_run"; `icgd reproduce --store-only` refuses it with
one line. Two tiny experiments and a suite are registered for the test (and removed after it)."""

from __future__ import annotations

import json

import pytest

from icgd.claims.base import SUITES, Claim
from icgd.experiments.registry import REGISTRY, Experiment
from icgd.train.config import build_config
from icgd.train.store import ModelStore

RAW = {"task": {"dx": 3, "n_context": 6}, "model": {"n_layers": 1}, "steps": 12, "batch_size": 32,
       "checkpoint_every": 6, "eval": {"every": 6, "n_tasks": 16, "n_tune": 16, "alignment_tasks": 0}}


def _config(name, seeds):
    return build_config(RAW | {"name": name, "seeds": list(seeds)})


def _experiment(name, label):
    def models(ctx):
        return {label: _config(label, ctx.seeds)}

    def run(ctx):
        result = ctx.train(label, models(ctx)[label])
        ctx.result("final_loss", float(result.summary["seeds"][0]["final_eval_loss"]))

    return Experiment(name, "a tiny test experiment", "test", 0.1, 0.1, run, {"smoke": 2, "quick": 2, "full": 2},
                      models)


@pytest.fixture()
def tiny(tmp_path, monkeypatch):
    """Experiments tiny-held (its model in a store) and tiny-missing (not), and suite "tiny" over both."""
    from icgd.experiments.catalog import load_sources
    from icgd.experiments.registry import ExperimentContext

    load_sources()
    for name, label in (("tiny-held", "held"), ("tiny-missing", "missing")):
        monkeypatch.setitem(REGISTRY, name, _experiment(name, label))
    claims = [Claim(f"{e}-loss", "the loss is finite", "test", e, lambda r, e=e: r[e]["final_loss"], "<", 1e9, "test")
              for e in ("tiny-held", "tiny-missing")]
    monkeypatch.setitem(SUITES, "tiny", lambda: claims)
    trained = ExperimentContext(tmp_path / "o", tmp_path / "first", "full", [0, 1]).train("held", _config("held", [0, 1]))
    store = ModelStore(tmp_path / "zoo")
    store.add(trained.run_dir, label="held", commit="abc123")
    monkeypatch.setenv("ICGD_STORE", str(store.root))
    return store


def test_verify_store_only_runs_the_stored_and_leaves_the_rest_untested(tiny, tmp_path):
    from icgd.claims import verify

    report = verify("tiny", tmp_path / "run", store_only=True)
    rows = {c["id"]: c for c in report["claims"]}
    assert rows["tiny-held-loss"]["verdict"] == "PASS"
    missing = rows["tiny-missing-loss"]
    assert missing["verdict"] == "untested" and not missing["passed"] and "missing" in missing["note"]
    assert report["not_run"] == [{"experiment": "tiny-missing", "models": ["missing"], "minutes": 0.1}]
    assert [(m["name"], m["from"], m["commit"]) for m in report["models"]] == [("held", "store", "abc123")]
    assert not list((tmp_path / "run" / "_train").glob("missing-*"))  # nothing trained
    assert not (tmp_path / "run" / "tiny-missing").exists()


def test_verify_without_store_only_trains_what_the_store_lacks(tiny, tmp_path):
    from icgd.claims import verify

    report = verify("tiny", tmp_path / "run")
    assert [c["verdict"] for c in report["claims"]] == ["PASS", "PASS"] and report["not_run"] == []
    assert {m["name"]: m["from"] for m in report["models"]} == {"held": "store", "missing": "trained"}


def test_reproduce_store_only_refuses_an_experiment_the_store_cannot_run(tiny, tmp_path, capsys):
    from icgd.cli import main

    assert main(["reproduce", "tiny-missing", "--store-only", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing" in err and "--store-only" in err
    assert not (tmp_path / "r").exists()
    assert main(["reproduce", "tiny-held", "--store-only", "--out", str(tmp_path / "h"), "--quiet"]) == 0
    assert json.loads((tmp_path / "h" / "results.json").read_text())["models"]["held"]["from"] == "store"


def test_a_suite_with_nothing_stored_is_all_untested_and_its_report_written(tiny, tmp_path, monkeypatch, capsys):
    from icgd.cli import main

    claim = Claim("m", "the loss is finite", "test", "tiny-missing", lambda r: r["tiny-missing"]["final_loss"], "<",
                  1e9, "test")
    monkeypatch.setitem(SUITES, "tiny-none", lambda: [claim])
    assert main(["verify", "tiny-none", "--store-only", "--json", "--out", str(tmp_path / "v")]) == 0
    report = json.loads((tmp_path / "v" / "claims.json").read_text())
    assert [c["verdict"] for c in report["claims"]] == ["untested"] and report["not_run"][0]["models"] == ["missing"]


@pytest.mark.parametrize("command", [["verify", "tiny"], ["reproduce", "tiny-held"]])
@pytest.mark.parametrize("flag", ["--quick", "--smoke", "--retrain"])
def test_store_only_goes_only_with_full_mode_from_the_store(tiny, tmp_path, capsys, flag, command):
    from icgd.cli import main

    assert main([*command, "--store-only", flag, "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err  # the flag it does not go with is named
    assert not (tmp_path / "v").exists()


def test_a_context_that_may_not_train_refuses_to_train(tmp_path):
    from icgd.experiments.registry import ExperimentContext, NotStored

    ctx = ExperimentContext(tmp_path / "o", tmp_path / "c", "full", [0, 1], train_allowed=False)
    with pytest.raises(NotStored, match="held"):
        ctx.train("held", _config("held", [0, 1]))
    assert not list((tmp_path / "c").glob("held-*/summary.json"))
