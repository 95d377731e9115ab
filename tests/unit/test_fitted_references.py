"""Fitted references kept once (`ExperimentContext.fitted`, the store's `references/`): a costly fit is keyed by
everything it reads; it is taken from the store, else from the cache, else fitted and written into the
cache; a changed byte in the store is one line and exit 2, nothing used; other inputs are never served a
fit of older ones; `--retrain` (no store) fits again; the deep models' GD++ (`gdpp_reference`) goes through
it and gives the same learners from the store as fitted."""

from __future__ import annotations

import json

import pytest

from icgd.experiments.registry import ExperimentContext
from icgd.train.store import MANIFEST, ModelStore, StoreError

INPUTS = {"fit": "toy", "version": 1, "tasks": 10}


def _ctx(tmp_path, store, name="cache"):
    return ExperimentContext(tmp_path / "out", tmp_path / name, "full", [0, 1], store=store)


class Fit:
    """A fit that counts its calls and returns {"x": the number of calls so far}."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return {"x": float(self.calls)}


@pytest.fixture()
def kept(tmp_path):
    """A store holding the toy reference, fitted once into a first cache and added from there."""
    fit = Fit()
    ctx = _ctx(tmp_path, None, "first")
    assert ctx.fitted("toy", INPUTS, fit) == {"x": 1.0}
    assert ctx.results["references"]["toy"]["from"] == "fitted"
    [path] = (tmp_path / "first" / "_references").glob("toy-*.json")
    store = ModelStore(tmp_path / "zoo")
    key = store.add_reference(path)
    return store, key, fit


def test_a_fit_is_made_once_then_read_from_the_cache(tmp_path):
    fit = Fit()
    assert _ctx(tmp_path, None).fitted("toy", INPUTS, fit) == {"x": 1.0}
    ctx = _ctx(tmp_path, None)
    assert ctx.fitted("toy", INPUTS, fit) == {"x": 1.0} and fit.calls == 1
    assert ctx.results["references"]["toy"]["from"] == "cache"


def test_other_inputs_are_fitted_again(tmp_path):
    fit = Fit()
    _ctx(tmp_path, None).fitted("toy", INPUTS, fit)
    assert _ctx(tmp_path, None).fitted("toy", INPUTS | {"tasks": 11}, fit) == {"x": 2.0}


def test_the_store_serves_a_fit_with_its_record(kept, tmp_path):
    store, key, fit = kept
    entry = json.loads((store.root / MANIFEST).read_text())["references"][key]
    assert entry["name"] == "toy" and len(entry["sha256"]) == 64 and entry["threads"] >= 1
    ctx = _ctx(tmp_path, store, "fresh")
    assert ctx.fitted("toy", INPUTS, fit) == {"x": 1.0} and fit.calls == 1
    used = ctx.results["references"]["toy"]
    assert used["from"] == "store" and used["fingerprint"] == key.rsplit("-", 1)[1]
    assert not (tmp_path / "fresh" / "_references").exists()  # the store is read where it is, not copied


def test_retrain_fits_again_and_leaves_the_store_alone(kept, tmp_path):
    store, _, fit = kept
    before = (store.root / MANIFEST).read_text()
    ctx = _ctx(tmp_path, None, "fresh")  # --retrain: no store
    assert ctx.fitted("toy", INPUTS, fit) == {"x": 2.0}
    assert ctx.results["references"]["toy"]["from"] == "fitted"
    assert (store.root / MANIFEST).read_text() == before


def test_a_changed_byte_is_refused_and_nothing_is_used(kept, tmp_path, capsys):
    from icgd.cli import main

    store, key, fit = kept
    path = store.root / "references" / f"{key}.json"
    path.write_text(path.read_text().replace('"x": 1.0', '"x": 7.0'))  # as long as before: only the hash tells
    with pytest.raises(StoreError, match="sha256 differs"):
        _ctx(tmp_path, store, "fresh").fitted("toy", INPUTS, fit)
    assert fit.calls == 1
    assert main(["store", "check", "--store", str(store.root)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_cache_file_whose_inputs_were_edited_is_refused(tmp_path):
    fit = Fit()
    _ctx(tmp_path, None).fitted("toy", INPUTS, fit)
    [path] = (tmp_path / "cache" / "_references").glob("toy-*.json")
    ref = json.loads(path.read_text())
    ref["inputs"]["tasks"] = 99  # the file no longer holds the fit of the inputs its name says
    path.write_text(json.dumps(ref))
    with pytest.raises(StoreError, match="not its inputs' fingerprint"):
        _ctx(tmp_path, None).fitted("toy", INPUTS, fit)


def test_the_store_commands_list_and_add_references(kept, capsys):
    from icgd.cli import main

    store, key, _ = kept
    assert main(["store", "list", "--store", str(store.root)]) == 0
    assert key in capsys.readouterr().out
    assert main(["store", "check", "--store", str(store.root)]) == 0
    assert "1 fitted references" in capsys.readouterr().out


def test_the_deep_gdpp_fits_are_the_same_from_the_store(tmp_path):
    """gdpp_reference (smoke sizes): the learners read back from the store predict exactly as the ones fitted."""
    import torch

    from icgd.experiments.common import eval_tasks
    from icgd.sources.oswald.shared import gdpp_reference
    from icgd.tasks.linear import LinearRegression

    task = LinearRegression(dx=3, n_context=6)

    def ctx(name, store):
        return ExperimentContext(tmp_path / "out", tmp_path / name, "smoke", [0, 1], store=store)

    first = ctx("first", None)
    best, fits, name = gdpp_reference(first, task, 2, False, None)
    assert first.results["references"]["gdpp-2"]["from"] == "fitted" and set(fits) == {"lbfgs", "adam", "adam+lbfgs"}
    store = ModelStore(tmp_path / "zoo")
    store.add_reference(next((tmp_path / "first" / "_references").glob("gdpp-2-*.json")))
    again = ctx("fresh", store)
    best2, fits2, name2 = gdpp_reference(again, task, 2, False, None)
    assert again.results["references"]["gdpp-2"]["from"] == "store" and name2 == name
    ev = eval_tasks(again, task)
    for k in fits:
        assert torch.equal(fits[k].predict(ev), fits2[k].predict(ev))
    # a clip is part of the inputs: another key, fitted again
    gdpp_reference(again, task, 2, False, 10.0)
    assert again.results["references"]["gdpp-2"]["from"] == "fitted"


def test_a_cache_file_of_another_fit_under_this_key_is_refused(tmp_path):
    fit = Fit()
    _ctx(tmp_path, None).fitted("toy", INPUTS, fit)
    _ctx(tmp_path, None).fitted("toy", INPUTS | {"tasks": 11}, fit)
    mine, other = sorted((tmp_path / "cache" / "_references").glob("toy-*.json"), key=lambda p: "tasks\": 11" in p.read_text())
    other.replace(mine)  # the fit of 11 tasks under the name of the fit of 10
    with pytest.raises(StoreError, match="not toy-"):
        _ctx(tmp_path, None).fitted("toy", INPUTS, fit)
