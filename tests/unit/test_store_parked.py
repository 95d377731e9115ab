"""Parked trainings in the model store (`ModelStore.park`, `restore_parked`): an unfinished run's resume state
kept with the code, so that a training longer than a machine stays up goes on from its step on the next
machine, to the same weights as an uninterrupted run; a changed byte is refused; storing the finished model
removes the parked one."""

from __future__ import annotations

import json

import pytest
import torch

from icgd.cli import main
from icgd.experiments.registry import ExperimentContext
from icgd.train import train
from icgd.train.config import build_config
from icgd.train.store import MANIFEST, PARKED, ModelStore, StoreError

RAW = {"name": "tiny", "task": {"dx": 3, "n_context": 6}, "model": {"n_layers": 1}, "steps": 12, "batch_size": 32,
       "seeds": [0, 1], "checkpoint_every": 6, "eval": {"every": 6, "n_tasks": 16, "n_tune": 16,
                                                        "alignment_tasks": 0}}


def _ctx(tmp_path, store, name):
    return ExperimentContext(tmp_path / "out", tmp_path / name, "full", [0, 1], store=store)


@pytest.fixture()
def parked(tmp_path):
    """A store parking "tiny" at step 6 of 12 (trained in another cache, as on a machine that went away)."""
    config = build_config(RAW)
    run = _ctx(tmp_path, None, "gone").run_dir("tiny", config)
    train(config, run, quiet=True, stop_after=6)
    store = ModelStore(tmp_path / "zoo")
    key, step = store.park(run)
    assert step == 6
    return store, key, config


def test_a_parked_training_resumes_elsewhere_to_the_uninterrupted_runs_weights(parked, tmp_path):
    store, key, config = parked
    whole = _ctx(tmp_path, None, "whole").train("tiny", config)  # trained without a stop, from step 0
    ctx = _ctx(tmp_path, store, "next")  # the next machine: an empty cache, the store from git
    resumed = ctx.train("tiny", config)
    assert all(torch.equal(resumed.params[k], whole.params[k]) for k in whole.params)
    summary = resumed.summary
    # it went on from step 6: this call's time is only part of the training's, which counts the parked part
    assert summary["wall_seconds"] > summary["wall_seconds_this_call"]
    assert ctx.results["models"]["tiny"]["from"] == "trained"
    entry = store.add(resumed.run_dir).entry  # stored when it finished: the parked state is gone
    assert entry["parked_at"]["step"] == 6 and entry["parked_at"]["device"] == "cpu"
    manifest = json.loads((store.root / MANIFEST).read_text())
    assert manifest["parked"] == {} and not (store.root / PARKED / key).exists()
    assert entry["seconds"] == pytest.approx(summary["wall_seconds"])


def test_a_parked_training_keeps_what_a_resume_reads_with_hashes(parked):
    store, key, _ = parked
    entry = store.manifest["parked"][key]
    assert entry["step"] == 6 and entry["steps"] == 12 and entry["seeds"] == [0, 1] and entry["device"] == "cpu"
    assert {"config.yaml", "checkpoint.safetensors", "checkpoint.json", "timing.json", "reference.json"} <= set(entry["files"])
    assert "summary.json" not in entry["files"]
    tensors = (store.root / PARKED / key / "checkpoint.safetensors")
    from icgd.train.checkpoint import load_checkpoint

    assert any(not k.startswith("param.") for k in load_checkpoint(tensors)[0])  # the optimiser and the stream too
    assert store.size() == sum(f["bytes"] for f in entry["files"].values())


def test_a_changed_byte_of_a_parked_training_is_refused_and_nothing_is_copied(parked, tmp_path, capsys):
    store, key, config = parked
    ckpt = store.root / PARKED / key / "checkpoint.safetensors"
    data = bytearray(ckpt.read_bytes())
    data[-1] ^= 1
    ckpt.write_bytes(bytes(data))
    ctx = _ctx(tmp_path, store, "next")
    with pytest.raises(StoreError, match="sha256 differs.*parked training is not resumed"):
        ctx.train("tiny", config)
    assert not ctx.run_dir("tiny", config).exists()
    assert not list((tmp_path / "next").glob("*.parked"))
    capsys.readouterr()
    assert main(["store", "check", "--store", str(store.root)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_cache_as_far_or_further_is_kept_and_retrain_reads_no_parking(parked, tmp_path):
    store, key, config = parked
    ctx = _ctx(tmp_path, None, "here")
    run = ctx.run_dir("tiny", config)
    train(config, run, quiet=True, stop_after=6)
    mark = (run / "checkpoint.safetensors").stat().st_mtime_ns
    assert store.restore_parked("tiny", config, run) is None  # as far: the cache's own is kept
    assert (run / "checkpoint.safetensors").stat().st_mtime_ns == mark
    other = _ctx(tmp_path, None, "retrained")  # --retrain: no store, from step 0
    done = other.train("tiny", config)
    assert "wall_seconds_this_call" not in done.summary  # a training of one call, not resumed
    assert store.restore_parked("tiny", build_config(RAW | {"steps": 18}), run) is None  # another config


def test_park_refuses_a_finished_run_and_a_run_without_a_checkpoint(tmp_path, capsys):
    config = build_config(RAW)
    done = _ctx(tmp_path, None, "c").train("tiny", config).run_dir
    zoo = str(tmp_path / "zoo")
    assert main(["store", "park", str(done), "--store", zoo]) == 2
    assert "a finished run" in capsys.readouterr().err
    empty = tmp_path / "empty-0123456789"
    empty.mkdir()
    assert main(["store", "park", str(empty), "--store", zoo]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["store", "park", "--store", zoo]) == 2  # nothing named


def test_the_store_lists_a_parked_training_and_parking_again_replaces_it(tmp_path, capsys):
    config = build_config(RAW | {"steps": 18})
    run = tmp_path / "c" / "tiny-x"
    train(config, run, quiet=True, stop_after=6)
    zoo = str(tmp_path / "zoo")
    assert main(["store", "park", str(run), "--store", zoo]) == 0
    train(out=run, resume=True, quiet=True, stop_after=12)
    assert main(["store", "park", str(run), "--store", zoo]) == 0
    capsys.readouterr()
    assert main(["store", "list", "--store", zoo]) == 0
    out = capsys.readouterr().out
    assert "parked at step 12 of 18" in out and "step 6 " not in out
    store = ModelStore(zoo)
    assert [e["step"] for e in store.manifest["parked"].values()] == [12]
    assert main(["store", "check", "--store", zoo]) == 0
    assert "1 parked training," in capsys.readouterr().out


def test_models_trained_ahead_resume_from_the_store_too(tmp_path):
    """`planned` (verify --workers, benchmarks/train_declared.py, tools/fill_store.sh with WORKERS) copies a
    parked training into the cache, where the worker's `train_into` resumes it."""
    from icgd.experiments.parallel import planned

    first = planned(["oswald-1layer"], tmp_path / "out", tmp_path / "gone", "full", None)
    job = next(j for j in first if j.label == "lsa1-a1")
    train(job.config, job.run, quiet=True, stop_after=1)
    store = ModelStore(tmp_path / "zoo")
    store.park(job.run)
    jobs = planned(["oswald-1layer"], tmp_path / "out", tmp_path / "next", "full", None, store=store)
    assert {j.label for j in jobs} == {"lsa1-a1", "lsa1-a0.5"}  # still to train: it is not finished
    resumed = next(j for j in jobs if j.label == "lsa1-a1").run
    assert json.loads((resumed / "checkpoint.json").read_text())["step"] == 1
    assert not (tmp_path / "next" / f"{next(j for j in jobs if j.label == 'lsa1-a0.5').run.name}").exists()
