"""Files written whole or not at all, and the one fingerprint that names every cache.

Every file icgd writes that another process (a resumed run, a reader, a sweep's worker) may read goes
through `atomic_path`: the bytes go to a temporary file beside the target, which replaces the target in one
`os.replace` once it is complete. A reader sees the old file or the whole new one, never a part; a write that
raises (a full disk, Ctrl-C) leaves the old file as it was and no temporary file behind.

`fingerprint` is the short name of a cache entry (a trained model's config, a language-model stage, a
compiled kernel, a sweep's trial): the first hex digits of SHA-256 over a text, or over canonical JSON for
other values.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["atomic_path", "fingerprint", "write_bytes", "write_json", "write_text"]


@contextmanager
def atomic_path(path: str | Path, fsync: bool = False) -> Iterator[Path]:
    """A temporary path beside `path` to write to; on leaving the block it replaces `path` in one step (or is
    removed when the block raised). For writers that take a path (`savefig`, `to_parquet`, `torch.save`).
    fsync: flush the new file to the disk before it replaces the old one (a checkpoint survives a power cut)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` atomically; returns the path."""
    return write_bytes(path, text.encode(encoding))


def write_json(path: str | Path, obj: Any, indent: int | None = 2, newline: bool = False) -> Path:
    """`json.dumps(obj, indent=indent)` (and a final newline with `newline`) written atomically."""
    return write_text(path, json.dumps(obj, indent=indent) + ("\n" if newline else ""))


def fingerprint(value: str | bytes | Any, length: int = 10) -> str:
    """The first `length` hex digits of SHA-256 over `value`: a text or bytes as they are, anything else as
    JSON with sorted keys (so that two equal dicts have one fingerprint)."""
    if isinstance(value, str):
        data = value.encode()
    elif isinstance(value, bytes):
        data = value
    else:
        data = json.dumps(value, sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()[:length]


def first_line(err: BaseException) -> str:
    """An error's message in one line (its type's name when it has none)."""
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
