"""The model store (`icgd.train.store`): a finished run kept without its optimiser state, with a manifest
of hashes; an experiment takes a model from it when label and config match, checked first; a changed byte
is refused with one line and nothing used; `--retrain` (no store) trains and leaves the store alone."""

from __future__ import annotations

import json

import pytest
import torch

from icgd.experiments.registry import ExperimentContext
from icgd.train.checkpoint import load_checkpoint
from icgd.train.config import build_config
from icgd.train.store import MANIFEST, ModelStore, StoreError

RAW = {"name": "tiny", "task": {"dx": 3, "n_context": 6}, "model": {"n_layers": 1}, "steps": 12, "batch_size": 32,
       "seeds": [0, 1], "checkpoint_every": 6, "eval": {"every": 6, "n_tasks": 16, "n_tune": 16,
                                                        "alignment_tasks": 0}}


def _ctx(tmp_path, store, name="cache"):
    return ExperimentContext(tmp_path / "out", tmp_path / name, "full", [0, 1], store=store)


@pytest.fixture()
def stored(tmp_path):
    """A store holding one model "tiny", trained through an experiment context's cache."""
    config = build_config(RAW)
    trained = _ctx(tmp_path, None, "first").train("tiny", config)
    store = ModelStore(tmp_path / "zoo")
    model = store.add(trained.run_dir, label="tiny", commit="abc123")
    return store, model, config, trained


def test_a_stored_model_keeps_weights_and_record_but_not_the_optimiser(stored):
    store, model, config, trained = stored
    tensors, _ = load_checkpoint(store.root / model.key / "checkpoint.safetensors")
    assert tensors and all(k.startswith("param.") for k in tensors)
    manifest = json.loads((store.root / MANIFEST).read_text())
    entry = manifest["models"][model.key]
    assert entry["name"] == "tiny" and entry["commit"] == "abc123" and entry["device"] == "cpu"
    assert entry["steps"] == 12 and entry["seeds"] == [0, 1] and entry["torch"] == torch.__version__
    assert {"config.yaml", "summary.json", "metrics.parquet", "checkpoint.safetensors"} <= set(entry["files"])
    assert all(len(f["sha256"]) == 64 for f in entry["files"].values())


def test_an_experiment_takes_the_model_from_the_store(stored, tmp_path):
    store, model, config, trained = stored
    ctx = _ctx(tmp_path, store)
    result = ctx.train("tiny", config)
    assert all(torch.equal(result.params[k], trained.params[k]) for k in trained.params)
    used = ctx.results["models"]["tiny"]
    assert used["from"] == "store" and used["commit"] == "abc123" and used["fingerprint"] == model.entry["fingerprint"]
    assert (result.run_dir / ".from-store").is_file()
    assert _ctx(tmp_path, store).train("tiny", config) is not None  # again: found in the cache, still "store"


def test_a_changed_byte_is_refused_and_nothing_is_used(stored, tmp_path):
    store, model, config, _ = stored
    weights = store.root / model.key / "checkpoint.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    ctx = _ctx(tmp_path, store)
    with pytest.raises(StoreError, match="sha256 differs"):
        ctx.train("tiny", config)
    assert not ctx.run_dir("tiny", config).exists()  # nothing half-copied into the cache
    from icgd.cli import main

    assert main(["store", "check", "--store", str(store.root)]) == 2


def test_retrain_trains_and_leaves_the_store_alone(stored, tmp_path):
    store, model, config, _ = stored
    before = (store.root / MANIFEST).read_bytes()
    ctx = _ctx(tmp_path, None, "retrained")
    ctx.train("tiny", config)
    assert ctx.results["models"]["tiny"]["from"] == "trained"
    assert (store.root / MANIFEST).read_bytes() == before


def test_another_config_is_not_taken_from_the_store(stored, tmp_path):
    store, model, config, _ = stored
    newer = build_config(RAW | {"steps": 18})
    ctx = _ctx(tmp_path, store)
    assert store.find("tiny", newer) is None
    ctx.train("tiny", newer)
    assert ctx.results["models"]["tiny"]["from"] == "trained"


def test_an_unfinished_run_cannot_be_stored(tmp_path):
    from icgd.train import train

    run = tmp_path / "run"
    train(build_config(RAW), run, quiet=True, stop_after=6)
    with pytest.raises(StoreError, match="not a finished"):
        ModelStore(tmp_path / "zoo").add(run)


def test_a_corrupt_checkpoint_leaves_nothing_half_made_in_the_store(tmp_path):
    from icgd.train.checkpoint import CheckpointError

    run = _ctx(tmp_path, None).train("tiny", build_config(RAW)).run_dir
    (run / "checkpoint.safetensors").write_bytes(b"not a checkpoint")
    store = ModelStore(tmp_path / "zoo")
    with pytest.raises(CheckpointError):
        store.add(run)
    assert not list((tmp_path / "zoo").iterdir()) and not store.models()


def test_retrain_trains_over_a_store_copy_in_the_cache(stored, tmp_path):
    """A cache that holds a copy from the store (an earlier run read the store): without a store (--retrain)
    the model is trained again, not taken from that copy."""
    store, model, config, trained = stored
    first = _ctx(tmp_path, store).train("tiny", config)
    assert (first.run_dir / ".from-store").is_file()
    ctx = _ctx(tmp_path, None)
    again = ctx.train("tiny", config)
    assert ctx.results["models"]["tiny"]["from"] == "trained"
    assert not (again.run_dir / ".from-store").is_file()
    assert all(torch.equal(again.params[k], trained.params[k]) for k in trained.params)  # the same training


def test_a_store_that_is_a_file_is_one_line(tmp_path, capsys):
    from icgd.cli import main

    (tmp_path / "zoo").write_text("not a folder")
    assert main(["store", "list", "--store", str(tmp_path / "zoo")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_store_commands(stored, capsys):
    from icgd.cli import main

    store, model, _, _ = stored
    assert main(["store", "check", "--store", str(store.root)]) == 0
    assert main(["store", "list", "--store", str(store.root)]) == 0
    assert model.key in capsys.readouterr().out
    assert main(["store", "missing", "--store", str(store.root)]) == 0
    assert "full-mode models missing from the store" in capsys.readouterr().out
    assert main(["store", "add", "--store", str(store.root)]) == 2  # nothing to add: one line, exit 2


def test_a_resumed_training_is_stored_with_its_whole_time_or_none(tmp_path, capsys):
    """The manifest's time of a training resumed from a checkpoint is the whole training's; where the checkpoint
    predates that record it is None and `store list` shows "?", never the last call's part as the total."""
    from icgd.cli import main
    from icgd.train import train
    store = ModelStore(tmp_path / "zoo")
    for name, old in (("whole", False), ("old", True)):
        run = tmp_path / name
        first = train(build_config(RAW | {"name": name}), run, quiet=True, stop_after=6).summary["wall_seconds"]
        if old:
            (run / "timing.json").unlink()  # as runs were checkpointed before 2026-11-30
        last = train(out=run, resume=True, quiet=True).summary["wall_seconds_this_call"]
        entry = store.manifest["models"][store.add(run).key]
        assert entry["seconds"] is None if old else entry["seconds"] == pytest.approx(first + last, abs=0.05)
    capsys.readouterr()
    assert main(["store", "list", "--store", str(store.root)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("old"))
    assert "      ? min" in line, line


def test_store_missing_sums_up_by_experiment(capsys):
    """`icgd store missing` ends with one line per experiment: how many of its models the store lacks."""
    import re
    from pathlib import Path

    from icgd.experiments.catalog import load_sources
    from icgd.experiments.runner import experiments
    from icgd.report.commands import _store_missing

    load_sources()
    exp = experiments()["categorical-depth"]
    labels = list(exp.models(ExperimentContext(Path("plan"), Path("plan"), "full", exp.seeds("full"), create=False)))
    held = set(labels[:2])

    models = exp.models(ExperimentContext(Path("plan"), Path("plan"), "full", exp.seeds("full"), create=False))
    from icgd.train.store import store_key

    parked = labels[2]  # a missing one whose training is parked

    class Holding:  # a store that holds two of categorical-depth's models and nothing else, and parks a third
        manifest = {"parked": {store_key(parked, models[parked])[0]: {"step": 300, "steps": 1000}}}

        def find(self, label, config):
            return object() if label in held else None

    assert _store_missing(Holding()) == 0
    out = capsys.readouterr().out
    assert re.search(rf"^{re.escape(parked)} .*parked at step 300 of 1000$", out, re.M), out
    assert out.count("parked at step") == 1
    summary = out.split("To fill it, by experiment")[1]
    assert re.search(rf"categorical-depth\s+{len(labels) - 2} of\s+{len(labels)} models missing", summary), summary
    assert re.search(r"categorical-fewshot\s+(\d+) of\s+\1 models missing", summary)  # none of its held


def test_a_diverged_run_is_kept_as_its_record_and_read_back_without_training(tmp_path, monkeypatch):
    """A run that diverged is a result (where, which seeds): the store keeps its record without weights, and
    an experiment reading it gets the divergence training raised, training nothing; a changed byte is
    refused as for a model."""
    from icgd.train.engine import TrainingDiverged, diverged_at
    from icgd.train.store import would_train

    wild = build_config(RAW | {"name": "wild", "model": {"n_layers": 3}, "optim": {"lr": 100.0}, "dtype": "float32",
                               "steps": 50, "checkpoint_every": 1})
    first = _ctx(tmp_path, None, "first")
    with pytest.raises(TrainingDiverged) as trained:
        first.train("wild", wild)
    assert first.results["models"]["wild"]["from"] == "trained"
    assert first.results["models"]["wild"]["status"] == "diverged"
    run = first.run_dir("wild", wild)
    assert trained.value.seeds and diverged_at({"status": "diverged"}) is None  # an old summary: no record
    store = ModelStore(tmp_path / "zoo")
    kept = store.add(run, label="wild", commit="abc123")
    assert kept.entry["status"] == "diverged" and "checkpoint.safetensors" not in kept.entry["files"]

    def no_training(*args, **kwargs):
        raise AssertionError("a recorded divergence trained again")

    monkeypatch.setattr(ExperimentContext, "_train_to", no_training)
    again = _ctx(tmp_path, store, "second")
    assert not would_train(again.run_dir("wild", wild), "wild", wild, store)  # held: --store-only runs it
    with pytest.raises(TrainingDiverged) as read:
        again.train("wild", wild)
    assert (read.value.step, read.value.seeds) == (trained.value.step, trained.value.seeds)
    assert again.results["models"]["wild"] | {"fingerprint": None} == {
        "name": "wild", "fingerprint": None, "from": "store", "commit": "abc123", "device": "cpu", "status": "diverged"}
    with pytest.raises(TrainingDiverged):  # again from the cache this time, still without training
        _ctx(tmp_path, store, "second").train("wild", wild)
    summary = store.root / kept.key / "summary.json"
    summary.write_text(summary.read_text().replace('"step": ', '"step":  '))
    with pytest.raises(StoreError, match="sha256"):
        _ctx(tmp_path, store, "third").train("wild", wild)
