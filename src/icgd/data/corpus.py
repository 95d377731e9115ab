"""Text corpora for the LMs icgd trains from scratch: the packaged ones (the LM study's BBC News articles and
tweets, `icgd.data.text`) or a user's UTF-8 text files.

A packaged corpus's splits are its task's (documents assigned once, `icgd.data.text.SPLIT_SEED`), so the
held-out classification queries are never trained on. A file's documents are its blank-line-separated
paragraphs; its first 90% of characters are the training split, the next 5% validation, the last 5% test
(cut at the paragraph boundary nearest each cut, or inside a paragraph where the file has too few).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from icgd.data.text import DataError

#: corpora that ship in packages (`icgd.data.text`'s task of that name)
PACKAGED_CORPORA = ("bbc-news", "tweets")
#: a file's split fractions: where validation and test begin
FILE_CUTS = (0.90, 0.95)


def check_corpus(name: str) -> str:
    """`name` if it is a packaged corpus or a readable UTF-8 text file with some text; DataError (one line,
    naming the file) otherwise."""
    if name in PACKAGED_CORPORA:
        return name
    path = Path(name)
    if not path.is_file():
        raise DataError(f"corpus {name!r} is neither a packaged corpus ({', '.join(PACKAGED_CORPORA)}) nor a file")
    _file_text(str(path.resolve()), path.stat().st_mtime_ns, path.stat().st_size)
    return name


@lru_cache(maxsize=16)
def _file_text(path: str, mtime: int, size: int) -> str:
    """The file's text, checked: non-empty after whitespace, UTF-8, no NUL bytes (a binary file)."""
    raw = Path(path).read_bytes()
    if not raw.strip():
        raise DataError(f"corpus file {path} is empty")
    if b"\x00" in raw:
        raise DataError(f"corpus file {path} is not text: it holds NUL bytes (first at byte {raw.index(0)})")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"corpus file {path} is not UTF-8 text: byte 0x{raw[e.start]:02x} at offset {e.start}") from None


def _cut(text: str, at: float) -> int:
    """A paragraph boundary near fraction `at` of the text (the fraction itself when none is within 1%)."""
    i = int(len(text) * at)
    near = text.rfind("\n\n", 0, i)
    return near if near >= 0 and i - near <= 0.01 * len(text) else i


def file_documents(path: str | Path, split: str) -> list[str]:
    p = Path(path)
    text = _file_text(str(p.resolve()), p.stat().st_mtime_ns, p.stat().st_size)
    a, b = (_cut(text, f) for f in FILE_CUTS)
    part = {"train": text[:a], "validation": text[a:b], "test": text[b:]}[split]
    return [d for d in part.split("\n\n") if d.strip()]


def corpus_documents(name: str, split: str) -> list[str]:
    """The documents of corpus `name` (packaged or a file) in split `split`."""
    if name in PACKAGED_CORPORA:
        from icgd.data.text import TASKS

        task = TASKS[name](max_words=None)  # whole documents
        return [task.examples[int(i)][0] for i in task.split(split)]
    return file_documents(check_corpus(name), split)
